#!/bin/sh
# The REPL as a machine without readline (libreadline-dev) builds it: its
# own line reader in lua/main.c, Ctrl-C at a prompt included. Runs
# tests/test_repl.c against build/tensortrace-noreadline (make test builds it).
cd "$(dirname "$0")/.." || exit 2
bin=build/tensortrace-noreadline
for f in "$bin" build/tests/test_repl; do
    if [ ! -x "$f" ]; then
        echo "FAIL $f is missing (make test builds it)"
        echo "0 passed, 1 failed"
        exit 1
    fi
done
exec build/tests/test_repl "$bin"
