#!/bin/sh
# Runs every test program and script; each prints "N passed, N failed" as its
# last line. Sums them and ends with the total line; non-zero exit on failure.
# Before it: the CPU time (user + sys, children included) and wall time of
# the run and of its slowest groups.
build=${1:-build}
cd "$(dirname "$0")/.." || exit 2
passed=0 failed=0
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
log=$tmp/log
: > "$tmp/times"

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

run() {  # name, command...
    name=$1; shift
    t0=$(now_ms)
    (
        "$@" >"$log" 2>&1
        echo $? >"$tmp/rc"
        times >"$tmp/cpu"   # its second line: this subshell's children
    )
    wall=$(( $(now_ms) - t0 ))
    rc=$(cat "$tmp/rc")
    awk -v w="$wall" -v n="$name" 'NR == 2 { c = 0; for (k = 1; k <= 2; k++) { split($k, a, "m");
        c += a[1] * 60 + a[2] } printf "%d %d %s\n", c * 1000, w, n }' "$tmp/cpu" >>"$tmp/times"
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

start=$(now_ms)
for t in "$build"/tests/test_*; do
    [ -x "$t" ] && run "$(basename "$t")" "$t"
done
for t in tests/lua/test_*.lua; do
    [ -f "$t" ] && run "$t" ./tensortrace -q "$t"
done
for t in tests/test_*.sh; do
    [ -f "$t" ] && run "$t" sh "$t"
done

awk -v all=$(( $(now_ms) - start )) '{ c += $1 } END {
    printf "time: %.1f s CPU (user + sys), %.1f s wall\n", c / 1000, all / 1000 }' "$tmp/times"
echo "slowest (s CPU, s wall):"
sort -rn "$tmp/times" | head -n 8 | awk '{ printf "  %6.1f %6.1f  %s\n", $1 / 1000, $2 / 1000, $3 }'
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
