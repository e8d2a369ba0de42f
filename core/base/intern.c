/*
** intern.c — interned strings: names and labels are compared by pointer;
** a small open hash table. Its bytes count against the memory cap.
*/
#include <stdlib.h>
#include <string.h>

#include "base.h"

static char **intern_tab;
static size_t intern_cap, intern_len;

static uint32_t hash_str(const char *s)
{
    uint32_t h = 2166136261u;            /* FNV-1a */
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

const char *tt_intern(const char *s)
{
    if (s == NULL) return NULL;
    if (intern_len * 2 >= intern_cap) {
        size_t ncap = intern_cap ? intern_cap * 2 : 64;
        if (tt__names_reserve((int64_t)((ncap - intern_cap) * sizeof *intern_tab))) return NULL;
        char **nt = calloc(ncap, sizeof *nt);
        if (nt == NULL) return NULL;
        for (size_t i = 0; i < intern_cap; i++) {
            if (intern_tab[i] == NULL) continue;
            size_t j = hash_str(intern_tab[i]) & (ncap - 1);
            while (nt[j]) j = (j + 1) & (ncap - 1);
            nt[j] = intern_tab[i];
        }
        free(intern_tab);
        intern_tab = nt;
        intern_cap = ncap;
    }
    size_t j = hash_str(s) & (intern_cap - 1);
    while (intern_tab[j]) {
        if (strcmp(intern_tab[j], s) == 0) return intern_tab[j];
        j = (j + 1) & (intern_cap - 1);
    }
    size_t n = strlen(s) + 1;
    if (tt__names_reserve((int64_t)n + 16)) return NULL;   /* 16: malloc's own header */
    char *c = malloc(n);
    if (c == NULL) return NULL;
    memcpy(c, s, n);
    intern_tab[j] = c;
    intern_len++;
    return c;
}

void tt__intern_free(void)
{
    for (size_t i = 0; i < intern_cap; i++) free(intern_tab[i]);
    free(intern_tab);
    intern_tab = NULL;
    intern_cap = intern_len = 0;
    tt__names_forget();
}
