/*
** fuzz_cli.c — libFuzzer harness for the command-line parser of
** lua/main.c (included here with its main renamed): the input is split at
** NUL bytes (or newlines) into argv. Options must parse or be refused with
** status 2; nothing runs. Build: make fuzz.
*/
#define main tensortrace_main
#include "../../lua/main.c"
#undef main

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096) return 0;
    char *buf = malloc(size + 1);
    if (buf == NULL) return 0;
    memcpy(buf, data, size);
    buf[size] = 0;
    char *argv[34];
    int argc = 0;
    argv[argc++] = (char *)"tensortrace";
    char *p = buf;
    while (argc < 33 && p < buf + size) {
        argv[argc++] = p;
        while (p < buf + size && *p && *p != '\n') p++;
        *p++ = 0;
    }
    argv[argc] = NULL;
    options o;
    int r = parse_args(argc, argv, &o);
    if (r != -1 && r != 0 && r != 2) abort();
    if (r == -1) {
        /* what main does next with the values, short of running anything */
        char dir[4096];
        const char *d = script_dir(o.script, dir, sizeof dir);
        if (d == NULL) abort();
        if (o.max_memory < -1 || (o.timeout != -1 && !(o.timeout > 0))) abort();
        if (o.script_arg < 0 || o.script_arg > argc) abort();
    }
    free(buf);
    return 0;
}
