/*
** file.c — the one atomic file writer (tt__write_file): figures and
** safetensors files are never seen half-written. On Linux the bytes go into
** an unnamed O_TMPFILE, then the finished file is linked under a temporary
** name and renamed into place (a SIGKILL leaves nothing, or, in the instant
** between link and rename, a whole file); elsewhere, or when the filesystem
** refuses O_TMPFILE, into ".name.tt-tmp-PID". A later write into the same
** folder removes such a temporary once PID is gone.
*/
#define _GNU_SOURCE                   /* O_TMPFILE */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "base.h"

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif

/* ===== Temporary files =====
   The write in progress, for a hard stop from another thread (the
   watchdog of --timeout): the file's path, and its temporary's name once
   it has one. `busy` is set after the names and cleared before they change.
   A temporary's name appears or goes only with names_mu held, which a hard
   stop takes for good: else the writer could make the next figure's
   temporary between the stop's unlink and its _exit. */
static struct {
    char path[PATH_MAX];
    const char *what;             /* "figure", "checkpoint" (a literal) */
    char tmp[PATH_MAX];           /* "" while the file has no name */
    atomic_int busy;
} cur;

static pthread_mutex_t names_mu = PTHREAD_MUTEX_INITIALIZER;

#define TMP_MARK ".tt-tmp-"

const char *tt_file_in_progress(const char **what)
{
    if (!atomic_load(&cur.busy)) return NULL;
    *what = cur.what;
    return cur.path;
}

void tt_file_stop_writes(void)
{
    pthread_mutex_lock(&names_mu);         /* never released: the process is ending */
    if (atomic_load(&cur.busy) && cur.tmp[0]) unlink(cur.tmp);
}

/* Removes ".*.tt-tmp-PID" files in dir whose process is gone: what a
   process killed mid-write left. Once per folder and process. */
static void clean_stale(const char *dir)
{
    static char last[PATH_MAX];
    if (strcmp(last, dir) == 0) return;
    snprintf(last, sizeof last, "%s", dir);
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *mark = e->d_name[0] == '.' ? strstr(e->d_name, TMP_MARK) : NULL;
        if (!mark) continue;
        char *end;
        long pid = strtol(mark + strlen(TMP_MARK), &end, 10);
        if (*end || pid <= 0 || pid == (long)getpid()) continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        char full[PATH_MAX];
        if (snprintf(full, sizeof full, "%s/%s", dir, e->d_name) < (int)sizeof full) unlink(full);
    }
    closedir(d);
}

/* Opens the file to write into: an unnamed O_TMPFILE in dir when the
   system has one (*named = 0), else the named temporary tmp (*named = 1).
   -1 with errno on failure. */
static int open_temp(const char *dir, const char *tmp, int *named)
{
#if defined(O_TMPFILE)
    if (access("/proc/self/fd", X_OK) == 0) {
        int fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
        if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)) {
            *named = 0;
            return fd;
        }
    }
#endif
    *named = 1;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno == EEXIST && unlink(tmp) == 0)   /* a leftover of ours */
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    return fd;
}

/* ===== Atomic writes ===== */

tt_status tt__write_file(const char *path, const char *what, tt_file_emit emit, void *ctx)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    char dir[PATH_MAX], tmp[PATH_MAX];
    int dlen = slash == path ? 1 : slash ? (int)(slash - path) : 1;
    if (snprintf(dir, sizeof dir, "%.*s", dlen, slash ? path : ".") >= (int)sizeof dir ||
        snprintf(tmp, sizeof tmp, "%s/.%s" TMP_MARK "%ld", dir, base, (long)getpid()) >= (int)sizeof tmp)
        return tt__err(TT_EIO, "cannot write '%s': the path is too long", path);
    clean_stale(dir);

    pthread_mutex_lock(&names_mu);
    atomic_store(&cur.busy, 0);
    snprintf(cur.path, sizeof cur.path, "%s", path);
    cur.what = what;
    snprintf(cur.tmp, sizeof cur.tmp, "%s", tmp);
    int named = 1;
    int fd = open_temp(dir, tmp, &named);
    if (!named) cur.tmp[0] = 0;
    atomic_store(&cur.busy, 1);
    pthread_mutex_unlock(&names_mu);

    tt_status st = TT_OK;
    FILE *fp = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (fd >= 0 && !fp) {
        int e = errno;
        close(fd);
        errno = e;
    }
    if (!fp && errno == ENOENT && slash)     /* say which folder is missing */
        st = tt__err(TT_EIO, "cannot write '%s': folder '%.*s' does not exist", path,
                     (int)(slash - path), path);
    else if (!fp) {
        st = tt__err(TT_EIO, "cannot write '%s': %s", path, strerror(errno));
    } else {
        char errtext[128] = "";
        int rc = emit(fp, ctx, errtext);
        int werr = fflush(fp) != 0 || ferror(fp);
        int saved = errno;
        if (rc != 0)
            st = tt__err(TT_EIO, "cannot write '%s': %s", path, werr ? strerror(saved) : errtext);
        else if (werr)
            st = tt__err(TT_EIO, "cannot write '%s': %s", path, strerror(saved));
        if (st == TT_OK && !named) {          /* give the finished file its temporary name */
            char proc[64];
            snprintf(proc, sizeof proc, "/proc/self/fd/%d", fileno(fp));
            pthread_mutex_lock(&names_mu);
            atomic_store(&cur.busy, 0);
            snprintf(cur.tmp, sizeof cur.tmp, "%s", tmp);
            atomic_store(&cur.busy, 1);
            if (linkat(AT_FDCWD, proc, AT_FDCWD, tmp, AT_SYMLINK_FOLLOW) != 0 &&
                (errno != EEXIST || unlink(tmp) != 0 ||
                 linkat(AT_FDCWD, proc, AT_FDCWD, tmp, AT_SYMLINK_FOLLOW) != 0))
                st = tt__err(TT_EIO, "cannot write '%s': %s", path, strerror(errno));
            pthread_mutex_unlock(&names_mu);
        }
        if (fclose(fp) != 0 && st == TT_OK)
            st = tt__err(TT_EIO, "cannot write '%s': %s", path, strerror(errno));
    }
    pthread_mutex_lock(&names_mu);
    if (fp) {
        if (st == TT_OK && rename(tmp, path) != 0)
            st = tt__err(TT_EIO, "cannot write '%s': %s", path, strerror(errno));
        if (st != TT_OK) unlink(tmp);
    } else if (fd >= 0 && named) {
        unlink(tmp);                           /* fdopen failed on the named temporary */
    }
    atomic_store(&cur.busy, 0);
    pthread_mutex_unlock(&names_mu);
    return st;
}
