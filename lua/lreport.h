/*
** lreport.h — the report (lreport.c): --report FILE.html, one
** self-contained page of the run. Rank 2 (lauxtt.h).
*/
#ifndef LREPORT_H
#define LREPORT_H

#include "lauxtt.h"

/* Every call below does nothing while no report is open. */
/* Checks that path can be written (a temporary file in its folder is made
   and removed: the page itself is written at exit, tmp + rename); records
   the command line, the seed and the script (NULL for -e) for the header.
   Returns 0 and a reason in *err otherwise. */
int ltt_report_open(const char *path, int argc, char **argv, long long seed, const char *script, const char **err);
int ltt_report_active(void);
/* A trace group's header: the line, its source text, then each caller
   outwards (file NULL: the same file as the line). */
void ltt_report_group(const char *file, int line, const char *source);
void ltt_report_caller(const char *file, int line);
/* An event row of the open group, from the event's fields (labels as the
   text trace shows them); values: the --trace=values text or NULL. */
void ltt_report_row(const tt_event *ev, const char *values);
/* A row that is no event: a check (the trace's "✓ checked ..." row of
   assert_close, or allclose's answer). */
void ltt_report_check(const char *text);
/* A check that passed while the trace is off (-q): counted, not shown. */
void ltt_report_count_check(void);
void ltt_report_section(const char *title);
/* print (is_write 0) or io.write is about to run with its arguments at
   1..top: their text goes into the narrative, as they will write it.
   print's arguments are converted to strings in place (tostring runs once). */
void ltt_report_output(lua_State *L, int is_write);
/* printf to stdout; the text also goes into the narrative. */
int ltt_report_printf(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
/* After a figure file was written: embedded where the script wrote it
   (PNG as a data: URI, SVG inline), with its title (NULL: the path). */
void ltt_report_figure(const char *path, const char *title);
/* From the message handler: the script line where the error was raised. */
void ltt_report_error_where(lua_State *L);
/* The script's error as shown on stderr (message, traceback). */
void ltt_report_error(const char *msg);
/* Writes the page; 0 (and a message on stderr) when it cannot. */
int ltt_report_finish(void);

#endif
