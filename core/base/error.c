/*
** error.c — the message of the last failure (tt_errmsg), set by tt__err.
*/
#include <stdarg.h>
#include <stdio.h>

#include "base.h"

static char errbuf[TT__ERRMSG_SIZE];

tt_status tt__err(tt_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(errbuf, sizeof errbuf, fmt, ap);
    va_end(ap);
    return st;
}

const char *tt_errmsg(void) { return errbuf; }
