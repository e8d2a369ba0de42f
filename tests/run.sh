#!/bin/sh
# Runs every test program and script; each prints "N passed, N failed" as its
# last line. Sums them and ends with the total line; non-zero exit on failure.
build=${1:-build}
cd "$(dirname "$0")/.." || exit 2
passed=0 failed=0
log=$(mktemp) || exit 2
trap 'rm -f "$log"' EXIT

run() {  # name, command...
    name=$1; shift
    "$@" >"$log" 2>&1
    rc=$?
    last=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1)
    p=$(echo "$last" | sed -n 's/^\([0-9]*\) passed.*/\1/p')
    f=$(echo "$last" | sed -n 's/.* \([0-9]*\) failed$/\1/p')
    if [ -z "$last" ] || [ "$rc" -ne 0 ] && [ "${f:-0}" -eq 0 ]; then
        f=$(( ${f:-0} + 1 ))   # a crash or missing summary is a failure
    fi
    p=${p:-0}
    passed=$((passed + p)); failed=$((failed + f))
    if [ "$f" -ne 0 ]; then
        echo "FAIL $name ($p passed, $f failed, exit $rc)"; sed 's/^/    /' "$log" | tail -n 40
    else
        echo "ok   $name ($p passed)"
    fi
}

for t in "$build"/tests/test_*; do
    [ -x "$t" ] && run "$(basename "$t")" "$t"
done
for t in tests/lua/test_*.lua; do
    [ -f "$t" ] && run "$t" ./tensortrace -q "$t"
done
for t in tests/test_*.sh; do
    [ -f "$t" ] && run "$t" sh "$t"
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
