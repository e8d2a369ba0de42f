/*
** test_repl.c — the REPL as a person at a terminal meets it: ./tensortrace
** runs on a pseudo-terminal; Ctrl-C interrupts a running chunk (also one
** that swallows errors with pcall) and drops the line at a prompt and at a
** continuation prompt, and the session goes on; headers show what was
** typed. Every wait is bounded; the child is killed at the end. argv[1]
** names the binary (default ./tensortrace; tests/test_repl_noreadline.sh
** gives the one built without readline).
*/
#if !defined(_XOPEN_SOURCE)
#define _XOPEN_SOURCE 700
#endif
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static int master = -1;
static pid_t child = -1;
static char out[1 << 20];          /* everything the REPL wrote since the last mark */
static size_t nout;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Reads until `want` appears after the mark (1) or `secs` pass (0). */
static int wait_for(const char *want, double secs)
{
    double end = now() + secs;
    for (;;) {
        out[nout] = 0;
        if (strstr(out, want)) return 1;
        double left = end - now();
        if (left <= 0) return 0;
        struct pollfd p = {master, POLLIN, 0};
        int r = poll(&p, 1, (int)(left * 1000) + 1);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) continue;
        ssize_t n = read(master, out + nout, sizeof out - 1 - nout);
        if (n <= 0) return 0;      /* the child has gone */
        nout += (size_t)n;
    }
}

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

static void mark(void) { nout = 0; out[0] = 0; }

static void send(const char *s)
{
    mark();
    size_t n = strlen(s);
    while (n > 0) {
        ssize_t w = write(master, s, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        s += w;
        n -= (size_t)w;
    }
}

/* ./tensortrace on a new pseudo-terminal, as its session's foreground. */
static int start(const char *bin)
{
    master = posix_openpt(O_RDWR | O_NOCTTY);
    if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0) return 0;
    const char *slave = ptsname(master);
    if (slave == NULL) return 0;
    child = fork();
    if (child < 0) return 0;
    if (child == 0) {
        setsid();
        int fd = open(slave, O_RDWR);     /* the controlling terminal: Ctrl-C raises SIGINT */
        if (fd < 0) _exit(127);
        dup2(fd, 0);
        dup2(fd, 1);
        dup2(fd, 2);
        if (fd > 2) close(fd);
        setenv("TERM", "dumb", 1);
        setenv("INPUTRC", "/dev/null", 1);
        execl(bin, "tensortrace", (char *)NULL);
        _exit(127);
    }
    return 1;
}

/* The longest line of the text since the mark (bytes, without "\r\n"). */
static size_t widest_line(void)
{
    size_t widest = 0, len = 0;
    for (size_t i = 0; i < nout; i++) {
        if (out[i] == '\n' || out[i] == '\r') len = 0;
        else if (++len > widest) widest = len;
    }
    return widest;
}

int main(int argc, char **argv)
{
    const char *bin = argc > 1 ? argv[1] : "./tensortrace";
    alarm(60);                      /* the whole test, whatever happens */
    CHECK("the binary starts on a pseudo-terminal", start(bin));
    CHECK("the prompt appears", wait_for("tt> ", 10));

    /* Ctrl-C in a running chunk */
    send("x = 41\n");
    CHECK("a statement runs", wait_for("tt> ", 5));
    send("while true do end\n");
    pause_ms(300);
    CHECK("the endless loop is still running", !strstr(out, "interrupted"));
    send("\x03");
    CHECK("Ctrl-C interrupts 'while true do end'", wait_for("interrupted (Ctrl-C)", 5));
    CHECK("and a new prompt comes", wait_for("tt> ", 5));
    send("print(x + 1)\n");
    CHECK("the session goes on, its globals kept", wait_for("42", 5) && wait_for("tt> ", 5));

    /* a pcall in a loop cannot swallow it */
    send("while true do pcall(function() while true do end end) end\n");
    pause_ms(300);
    send("\x03");
    CHECK("Ctrl-C gets through a pcall in a loop", wait_for("interrupted (Ctrl-C)", 5) && wait_for("tt> ", 5));

    /* Ctrl-C at a continuation prompt drops the unfinished chunk */
    send("for i = 1, 3 do\n");
    CHECK("an unfinished chunk asks for more", wait_for("  > ", 5));
    send("\x03");
    CHECK("Ctrl-C at '  > ' comes back to 'tt> '", wait_for("tt> ", 5));
    send("print('after')\n");
    CHECK("the dropped chunk is gone: the next line runs alone",
          wait_for("after", 5) && wait_for("tt> ", 5) && !strstr(out, "syntax") && !strstr(out, "expected"));

    /* Ctrl-C at the prompt drops the line typed so far */
    send("print('dropped')");
    pause_ms(100);
    send("\x03");
    CHECK("Ctrl-C at 'tt> ' gives a fresh prompt", wait_for("tt> ", 5));
    send("print(6 * 7)\n");
    CHECK("the dropped text does not run", wait_for("42", 5) && wait_for("tt> ", 5) && !strstr(out, "dropped"));

    /* the trace's headers show what was typed, not the REPL's rewriting */
    send("y = tt.ones(2)\n");
    CHECK("a statement's header is its text", wait_for("stdin:1  y = tt.ones(2)", 5) && wait_for("tt> ", 5));
    send("tt.ones(2) + 1\n");      /* the same "stdin:1" as the chunk before: a header all the same */
    CHECK("an expression's header is its text, without 'return'",
          wait_for("stdin:1  tt.ones(2) + 1", 5) && wait_for("tt> ", 5) && !strstr(out, "return"));

    /* a [5,64] result prints wrapped (core/tensor/print.c) */
    send("tt.randn(5, 64)\n");
    CHECK("a [5,64] result prints", wait_for("[5,64] float32", 5) && wait_for("tt> ", 5));
    CHECK("in lines of at most 80 columns", widest_line() <= 80);

    /* Ctrl-D ends the session with status 0 */
    send("\x04");
    int status = -1;
    double end = now() + 5;
    pid_t done = 0;
    while ((done = waitpid(child, &status, WNOHANG)) == 0 && now() < end) pause_ms(20);
    CHECK("Ctrl-D ends the REPL with exit status 0", done == child && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    if (done != child) {
        kill(child, SIGKILL);
        waitpid(child, &status, 0);
    }
    if (check_failed) printf("the REPL wrote since the last mark:\n%s\n", out);
    return check_report();
}
