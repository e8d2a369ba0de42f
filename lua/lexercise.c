/*
** lexercise.c — the exercises' front end to the compare engine (lcompare.c):
** --exercise finds an exercise's reference and the learner's copy, the
** progress file keeps each exercise's last verdict, --exercises lists them
** with the next one to do, and --watch checks again each time a checked
** script is saved (inotify). Rank 4, beside lcompare.c: each calls the other
** (the engine records a verdict here; --watch reruns the engine).
*/
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/inotify.h>
#endif

#include "lcompare.h"

#define PROGNAME "tensortrace"

/* ===== --watch ===== */

#if defined(__linux__)
/* What --watch watches: the folder of each checked file and, when the file
   is a symbolic link, the folder of the file it points to (an editor saves
   there); an event names a file of a folder by its last component. */
#define WATCH_MAX 64
typedef struct { int wd; char dir[4096]; const char *base; } watched;

static int watch_add(int fd, watched *w, int *n, const char *path)
{
    if (*n >= WATCH_MAX) return 1;
    const char *slash = strrchr(path, '/');
    watched *x = &w[*n];
    if (slash == NULL) snprintf(x->dir, sizeof x->dir, ".");
    else snprintf(x->dir, sizeof x->dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    x->base = slash ? slash + 1 : path;
    x->wd = inotify_add_watch(fd, x->dir, IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE_SELF | IN_MOVE_SELF);
    if (x->wd < 0) {
        fprintf(stderr, PROGNAME ": --watch: cannot watch '%s': %s\n", x->dir, strerror(errno));
        return 0;
    }
    ++*n;
    return 1;
}

/* Reads one batch of events; *changed when one saved a watched file.
   Returns 0 when a watched folder went away (deleted or moved: nothing
   more can be saved there) or inotify failed, said on stderr. */
static int watch_read(int fd, const watched *w, int n, int *changed)
{
    char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
    ssize_t got;
    while ((got = read(fd, buf, sizeof buf)) < 0 && errno == EINTR) {}
    if (got <= 0) {
        fprintf(stderr, PROGNAME ": --watch: %s\n", got < 0 ? strerror(errno) : "inotify closed");
        return 0;
    }
    for (char *p = buf; p < buf + got;) {
        const struct inotify_event *ev = (const struct inotify_event *)p;
        for (int i = 0; i < n; i++) {
            if (ev->wd != w[i].wd) continue;
            if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) {
                fprintf(stderr, PROGNAME ": --watch: the folder '%s' was deleted or moved; stopped watching\n", w[i].dir);
                return 0;
            }
            if (ev->len && strcmp(ev->name, w[i].base) == 0) *changed = 1;
        }
        p += sizeof *ev + ev->len;
    }
    return 1;
}

int ltt_compare_watch(const ltt_compare_opts *o)
{
    int fd = inotify_init1(IN_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, PROGNAME ": --watch: inotify: %s\n", strerror(errno));
        return 2;
    }
    /* the folders: an editor that saves by writing a new file and renaming
       it over the old one replaces the file a watch on it would follow */
    static watched w[WATCH_MAX];
    static char real[WATCH_MAX][4096];
    int n = 0, ok = 1;
    for (int i = 0; ok && i < o->nmine && i < WATCH_MAX; i++) {
        ok = watch_add(fd, w, &n, o->mine[i]);
        if (ok && realpath(o->mine[i], real[i]) && strcmp(real[i], o->mine[i]) != 0) ok = watch_add(fd, w, &n, real[i]);
    }
    while (ok) {
        char when[32];
        time_t now = time(NULL);
        strftime(when, sizeof when, "%H:%M:%S", localtime(&now));
        printf("──────── %s ────────\n", when);
        fflush(stdout);
        ltt_compare(o);
        printf("\nwatching %s%s: save it to check again (Ctrl-C stops)\n", o->mine[0], o->nmine > 1 ? " and the others" : "");
        fflush(stdout);
        int changed = 0;
        while (ok && !changed) ok = watch_read(fd, w, n, &changed);
        /* an editor's save is often several events: take them all */
        struct pollfd pfd = { fd, POLLIN, 0 };
        while (ok && poll(&pfd, 1, 150) > 0) ok = watch_read(fd, w, n, &changed);
        printf("\n");
    }
    close(fd);
    return 2;
}
#else
int ltt_compare_watch(const ltt_compare_opts *o)
{
    (void)o;
    fprintf(stderr, PROGNAME ": --watch needs inotify (Linux)\n");
    return 2;
}
#endif

/* ===== Exercises ===== */

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* lessons/exercises under the current folder, beside the binary, or where
   make install put them. */
static const char *exercises_dir(void)
{
    static char dir[4096];
    if (is_dir("lessons/exercises")) return "lessons/exercises";
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) *slash = 0;
        snprintf(dir, sizeof dir, "%.2000s/lessons/exercises", exe);
        if (is_dir(dir)) return dir;
        snprintf(dir, sizeof dir, "%.2000s/../share/tensortrace/lessons/exercises", exe);
        if (is_dir(dir)) return dir;
    }
    return NULL;
}

static int is_exercise_name(const char *n)
{
    size_t len = strlen(n);
    return len > 7 && n[0] >= '0' && n[0] <= '9' && n[1] >= '0' && n[1] <= '9' && n[2] == '_' &&
           strcmp(n + len - 4, ".lua") == 0;
}

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The exercises' file names, sorted (NULL-terminated; free with free_names). */
static char **exercise_names(const char *dir, int *count)
{
    *count = 0;
    DIR *d = opendir(dir);
    if (d == NULL) return NULL;
    int cap_n = 32;
    char **names = malloc((size_t)cap_n * sizeof *names);
    struct dirent *e;
    while (names && (e = readdir(d)) != NULL) {
        if (!is_exercise_name(e->d_name)) continue;
        if (*count + 1 >= cap_n) {
            char **more = realloc(names, (size_t)(cap_n *= 2) * sizeof *names);
            if (more == NULL) break;
            names = more;
        }
        names[*count] = strdup(e->d_name);
        if (names[*count]) ++*count;
    }
    closedir(d);
    if (names == NULL) return NULL;
    names[*count] = NULL;
    qsort(names, (size_t)*count, sizeof *names, cmp_names);
    return names;
}

static void free_names(char **names)
{
    for (int i = 0; names && names[i]; i++) free(names[i]);
    free(names);
}

/* "03_causal_mask.lua" -> "03_causal_mask" in buf. */
static const char *stem(const char *file, char *buf, size_t n)
{
    const char *slash = strrchr(file, '/');
    snprintf(buf, n, "%s", slash ? slash + 1 : file);
    size_t len = strlen(buf);
    if (len > 4 && strcmp(buf + len - 4, ".lua") == 0) buf[len - 4] = 0;
    return buf;
}

/* The exercise file name that `what` names: "3", "03", "causal_mask",
   "03_causal_mask", "03_causal_mask.lua"; NULL when none or several. */
static const char *match_exercise(char **names, const char *what, int *several)
{
    const char *found = NULL;
    char want[256], s[256];
    stem(what, want, sizeof want);
    *several = 0;
    if (want[0] == 0) return NULL;
    char *end;
    long n = strtol(want, &end, 10);
    *several = 0;
    for (int i = 0; names[i]; i++) {
        stem(names[i], s, sizeof s);
        int hit;
        if (*end == 0 && end != want) hit = atoi(s) == n;                   /* a number */
        else hit = strcmp(s, want) == 0 || strcmp(s + 3, want) == 0 ||       /* a name */
                   (strncmp(s + 3, want, strlen(want)) == 0);
        if (!hit) continue;
        if (strcmp(s, want) == 0 || strcmp(s + 3, want) == 0) return names[i];   /* exact wins */
        if (found) *several = 1;
        found = names[i];
    }
    return *several ? NULL : found;
}

/* "-- exercise: 03" in the first lines of path: 1 and the name in buf. */
static int header_exercise(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) return 0;
    char line[512];
    int found = 0;
    for (int i = 0; i < 30 && !found && fgets(line, sizeof line, f); i++) {
        const char *p = line;
        while (*p == ' ' || *p == '\t') p++;
        if (strncmp(p, "--", 2) != 0) continue;
        for (p += 2; *p == ' ' || *p == '-'; p++) {}
        if (strncmp(p, "exercise:", 9) != 0) continue;
        for (p += 9; *p == ' ' || *p == '\t'; p++) {}
        size_t len = strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.");
        if (len > 0 && len < n) {
            snprintf(buf, n, "%.*s", (int)len, p);
            found = 1;
        }
    }
    fclose(f);
    return found;
}

/* The exercise a file's name points to (03_mine, my_03, week2_05): its
   first two-digit number on its own. */
static const char *name_exercise(char **names, const char *key)
{
    int several = 0;
    const char *file = match_exercise(names, key, &several);
    for (const char *p = key; file == NULL && *p; p++)
        if (isdigit((unsigned char)p[0]) && isdigit((unsigned char)p[1]) && !isdigit((unsigned char)p[2]) &&
            (p == key || !isdigit((unsigned char)p[-1]))) {
            char nn[3] = { p[0], p[1], 0 };
            return match_exercise(names, nn, &several);
        }
    return file;
}

int ltt_exercise_resolve(const char *what, ltt_compare_opts *o)
{
    static char ref[4096], mine[4096], name[256];
    static const char *list[1];
    const char *dir = exercises_dir();
    if (dir == NULL) {
        fprintf(stderr, PROGNAME ": --exercise: no lessons/exercises folder here, beside the binary or installed\n");
        return 0;
    }
    int count = 0, several = 0;
    char **names = exercise_names(dir, &count);
    if (names == NULL || count == 0) {
        fprintf(stderr, PROGNAME ": --exercise: no exercises in '%s'\n", dir);
        free_names(names);
        return 0;
    }
    int is_path = is_file(what) && (strchr(what, '/') || strstr(what, ".lua"));
    char key[256], said[64];
    stem(what, key, sizeof key);
    const char *file = NULL;
    if (is_path && header_exercise(what, said, sizeof said)) {
        /* the copy says which exercise it is: that wins over its name */
        file = match_exercise(names, said, &several);
        if (file == NULL) {
            fprintf(stderr, PROGNAME ": --exercise: %s says '-- exercise: %s', which is %s\n", what, said,
                    several ? "more than one exercise" : "no exercise");
            free_names(names);
            return 0;
        }
        const char *by_name = name_exercise(names, key);
        if (by_name && strcmp(by_name, file) != 0)
            fprintf(stderr, PROGNAME ": --exercise: %s is checked against %s, as its header says (not %s, as its name)\n",
                    what, file, by_name);
    }
    if (file == NULL) file = match_exercise(names, is_path ? key : what, &several);
    if (file == NULL && is_path && !several) file = name_exercise(names, key);   /* my_03.lua: the copy of 03 */
    if (file == NULL) {
        fprintf(stderr, PROGNAME ": --exercise: %s '%s'; the exercises are:\n", several ? "more than one exercise matches" : "no exercise", what);
        for (int i = 0; names[i]; i++) fprintf(stderr, "  %s\n", stem(names[i], key, sizeof key));
        free_names(names);
        return 0;
    }
    snprintf(ref, sizeof ref, "%s/solutions/%s", dir, file);
    if (is_path) snprintf(mine, sizeof mine, "%s", what);
    else snprintf(mine, sizeof mine, "%s/%s", dir, file);
    stem(file, name, sizeof name);
    free_names(names);
    if (!is_file(ref)) {
        fprintf(stderr, PROGNAME ": --exercise: the solution '%s' is missing\n", ref);
        return 0;
    }
    list[0] = mine;
    o->ref = ref;
    o->mine = list;
    o->nmine = 1;
    o->exercise = name;
    return 1;
}

const char *ltt_progress_path(void)
{
    static char path[4096];
    const char *state = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
    if (state && state[0] == '/') snprintf(path, sizeof path, "%.4000s/tensortrace/progress", state);
    else if (home && home[0]) snprintf(path, sizeof path, "%.4000s/.local/state/tensortrace/progress", home);
    else snprintf(path, sizeof path, ".tensortrace-progress");
    return path;
}

/* mkdir -p of the folders above path. */
static void make_parents(const char *path)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        mkdir(buf, 0755);
        *p = '/';
    }
}

/* The progress file: a line "NAME pass|fail done|- VERDICT" per exercise
   (the last check's result, whether it ever passed, the last verdict in
   words); an older "NAME pass" line reads as passed and done. */
typedef struct { int last; int done; char verdict[200]; } progress;

/* name's line in text: last 1 passed, 0 failed, -1 never checked. */
static progress progress_of(const char *text, const char *name)
{
    progress pr = { -1, 0, "" };
    size_t n = strlen(name);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, name, n) != 0 || p[n] != ' ') continue;
        p += n + 1;
        pr.last = strncmp(p, "pass", 4) == 0;
        pr.done = pr.last || strncmp(p + 4, " done", 5) == 0;
        const char *v = strncmp(p + 4, " done ", 6) == 0 || strncmp(p + 4, " - ", 3) == 0 ? strchr(p + 5, ' ') : NULL;
        if (v) snprintf(pr.verdict, sizeof pr.verdict, "%.*s", (int)strcspn(v + 1, "\n"), v + 1);
        break;
    }
    return pr;
}

void ltt_progress_record(const char *name, int ok, const char *verdict)
{
    const char *path = ltt_progress_path();
    char *old = ltt_read_text(path);
    int done = ok || progress_of(old, name).done;     /* ✓ stays once it was done */
    make_parents(path);
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (f == NULL) {
        free(old);
        return;   /* no progress kept: the check itself still stands */
    }
    size_t n = strlen(name);
    for (char *p = old; p && *p;) {
        char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (!(len > n && strncmp(p, name, n) == 0 && p[n] == ' ')) fprintf(f, "%.*s\n", (int)len, p);
        p = nl ? nl + 1 : p + len;
    }
    char words[200];
    snprintf(words, sizeof words, "%s", verdict ? verdict : ok ? "all checkpoints match" : "");
    for (char *w = words; *w; w++)
        if ((unsigned char)*w < 0x20) *w = ' ';
    fprintf(f, "%s %s %s %s\n", name, ok ? "pass" : "fail", done ? "done" : "-", words);
    free(old);
    if (fclose(f) != 0 || rename(tmp, path) != 0) unlink(tmp);
}

/* The exercise's title: its first comment line, without the dashes. */
static void title_of(const char *path, char *buf, size_t n)
{
    buf[0] = 0;
    FILE *f = fopen(path, "r");
    if (f == NULL) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "--", 2) != 0) continue;
        char *s = line + 2;
        while (*s == '-' || *s == ' ') s++;
        s[strcspn(s, "\r\n")] = 0;
        if (*s) {
            snprintf(buf, n, "%.200s", s);
            break;
        }
    }
    fclose(f);
}

int ltt_exercises_list(void)
{
    const char *dir = exercises_dir();
    int count = 0;
    char **names = dir ? exercise_names(dir, &count) : NULL;
    if (names == NULL || count == 0) {
        fprintf(stderr, PROGNAME ": --exercises: no exercises found (lessons/exercises)\n");
        free_names(names);
        return 2;
    }
    char *recorded = ltt_read_text(ltt_progress_path());
    const char *next = NULL;
    int done = 0;
    char name[256], title[256], path[4400];
    printf("exercises in %s (progress: %s)\n", dir, ltt_progress_path());
    for (int i = 0; names[i]; i++) {
        stem(names[i], name, sizeof name);
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        title_of(path, title, sizeof title);
        progress pr = progress_of(recorded, name);
        printf("  %s %-22s %s\n", pr.done ? "✓" : pr.last == 0 ? "✗" : "·", name, title);
        if (pr.last == 0 || (pr.last == 1 && pr.verdict[0]))
            printf("      last check: %s %s\n", pr.last ? "✓" : "✗", pr.verdict[0] ? pr.verdict : "");
        if (pr.done) done++;
        else if (next == NULL) next = names[i];
    }
    if (next) {
        stem(next, name, sizeof name);
        printf("%d of %d done; next: %s (edit %s/%s, then: " PROGNAME " --exercise %.2s)\n", done, count, name, dir, next, name);
    } else {
        printf("all %d done\n", count);
    }
    free(recorded);
    free_names(names);
    return 0;
}
