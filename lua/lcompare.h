/*
** lcompare.h — checking a learner's script against a reference: the
** engine (lcompare.c: --compare) and its exercise front end (lexercise.c:
** --exercise, --exercises, --watch). Rank 4, beside main.c (it runs scripts
** the way main does, each in a state of its own).
*/
#ifndef LCOMPARE_H
#define LCOMPARE_H

typedef struct ltt_compare_opts {
    const char *ref;             /* the reference script */
    const char *const *mine;     /* the scripts checked against it */
    int nmine;
    char **args;                 /* the scripts' arguments (after "--") */
    int nargs;
    long long seed;
    double rtol, atol;
    const char *json;            /* --compare-json FILE or NULL */
    const char *csv;             /* --compare-csv FILE or NULL */
    const char *variant;         /* --recheck SPEC: the scripts' sizes or seed varied ("N = 7, seed = 4") */
    const char *figure;          /* --compare-figure PATH or NULL */
    const char *report;          /* --report FILE.html or NULL */
    int report_argc;             /* the command line, for the report's header */
    char **report_argv;
    const char *exercise;        /* the exercise's name (progress file), NULL for --compare */
    double timeout;              /* seconds a script may run (0: none) */
    long long max_instructions;
    long long max_memory;        /* the tensor and Lua memory cap (0: none) */
    int sandbox;                 /* --sandbox: each checked script runs under its rules, in a
                                    process of its own (a crash or a runaway ends only its check) */
    const char *images;          /* --sandbox: the folder the checked scripts may write (NULL: none) */
    long long max_write, max_files;   /* --sandbox's write quota (-1: the default) */
    const char *const *inputs;   /* --sandbox: every script of the check, which a checked one may not read */
    int ninputs;                 /* (set inside, as is since_ns: the grading's start, CLOCK_REALTIME) */
    const char *const *data;     /* --sandbox: the data files the reference declares, resolved (set inside) */
    int ndata;
    long long since_ns;
    int one_line;                /* one verdict line even for one script (set inside) */
    int json_append;             /* append to json rather than write it anew (set inside) */
} ltt_compare_opts;

/* Runs the reference and each script, prints the verdicts (one line per
   script when there are several). With o->sandbox each script is checked
   in a child process: the reference runs as it is, the script under the
   sandbox (reads only itself and --read, writes only under o->images) and
   the limits; a child that dies (the watchdog, a signal) or outlives twice
   the timeout gets a verdict line of its own and the others still run. Returns the exit status: 0 when every
   script matches, 1 when one does not, 2 when the reference itself fails
   or an output file cannot be written. */
int ltt_compare(const ltt_compare_opts *o);
/* The same again each time one of the checked scripts is saved (inotify on
   their folders); returns only on an error (status 2). */
int ltt_compare_watch(const ltt_compare_opts *o);

/* --exercise WHAT: fills o->ref, o->mine (one script) and o->exercise from
   an exercise number ("3", "03"), a name ("causal_mask", "03_causal_mask")
   or the path of the learner's copy (the paths stay valid until the next
   call). Returns 0 and prints why on stderr otherwise. */
int ltt_exercise_resolve(const char *what, ltt_compare_opts *o);
/* --exercises: every exercise with ✓ (passed), ✗ (last check failed) or ·
   (not tried), and the next one to do. Returns the exit status. */
int ltt_exercises_list(void);
/* Where the progress of the exercises is kept (for --help). */
const char *ltt_progress_path(void);
/* Records the verdict of one check of exercise name in the progress file
   (verdict in words, or NULL); a file that cannot be written keeps nothing. */
void ltt_progress_record(const char *name, int ok, const char *verdict);

/* The whole text of a file (malloc'ed, to free), or NULL. */
char *ltt_read_text(const char *path);

#endif
