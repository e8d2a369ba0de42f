#!/bin/sh
# Runs every test program and script; each prints "N passed, N failed" as its
# last line. Sums them and ends with the total line; non-zero exit on failure.
# Each group's CPU time (user + sys of it and its children) and wall time are
# measured; the slowest groups and the CPU total are printed before the total
# line. JOBS=2 runs two groups at once, except the groups in ALONE below, which measure
# time or memory, use short timeouts or watch files: they run one at a time
# afterwards. The output is per group, in a fixed order, whatever JOBS is.
build=${1:-build}
cd "$(dirname "$0")/.." || exit 2
passed=0 failed=0
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT

ALONE="test_sdpa_backward test_repl test_repl_noreadline.sh test_limits.lua
test_sandbox.lua test_cli.lua test_compare.lua test_compare_runs.lua
test_compare_trust.lua test_save.lua test_api.lua test_images.lua test_report.lua"

JOBS=${JOBS:-1}

is_alone() {  # name
    for a in $ALONE; do [ "$a" = "$(basename "$1")" ] && return 0; done
    return 1
}

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

# Runs group $1 (its command in $tmp/$1.cmd's words) and leaves its log,
# exit code, CPU and wall milliseconds in $tmp/$1.*; $tmp/$1.rc comes last.
exec_group() {  # index
    t0=$(now_ms)
    (
        g=$tmp/$1
        set -- $(cat "$g.cmd")
        "$@" >"$g.log" 2>&1
        echo $? >"$g.rc.part"
        times >"$g.times"   # its second line: this subshell's children
    )
    echo $(( $(now_ms) - t0 )) >"$tmp/$1.wall"
    awk 'NR == 2 { n = 0; for (k = 1; k <= 2; k++) { split($k, a, "m");
                   n += a[1] * 60 + a[2] } printf "%d\n", n * 1000 }' \
        "$tmp/$1.times" >"$tmp/$1.cpu"
    mv "$tmp/$1.rc.part" "$tmp/$1.rc"
}

report() {  # index
    name=$(cat "$tmp/$1.name"); rc=$(cat "$tmp/$1.rc"); log=$tmp/$1.log
    last=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1)
    p=$(echo "$last" | sed -n 's/^\([0-9]*\) passed.*/\1/p')
    f=$(echo "$last" | sed -n 's/.* \([0-9]*\) failed$/\1/p')
    if [ -z "$last" ] || [ "$rc" -ne 0 ] && [ "${f:-0}" -eq 0 ]; then
        f=$(( ${f:-0} + 1 ))   # a crash or missing summary is a failure
    fi
    p=${p:-0}
    passed=$((passed + p)); failed=$((failed + f))
    echo "$(cat "$tmp/$1.cpu") $(cat "$tmp/$1.wall") $name" >>"$tmp/times"
    if [ "$f" -ne 0 ]; then
        echo "FAIL $name ($p passed, $f failed, exit $rc)"; sed 's/^/    /' "$log" | tail -n 40
    else
        echo "ok   $name ($p passed)"
    fi
}

start=$(now_ms)
# The groups, numbered in the order they are reported.
n=0
add() {  # name, command words (no spaces inside a word)
    n=$((n + 1)); echo "$1" >"$tmp/$n.name"; shift; echo "$@" >"$tmp/$n.cmd"
}
for t in "$build"/tests/test_*; do
    [ -x "$t" ] && add "$(basename "$t")" "$t"
done
for t in tests/lua/test_*.lua; do
    [ -f "$t" ] && add "$t" ./tensortrace -q "$t"
done
for t in tests/test_*.sh; do
    [ -f "$t" ] && add "$t" sh "$t"
done

# Worker: claims the next unclaimed shared group (mkdir is atomic) and runs it.
worker() {
    i=1
    while [ "$i" -le "$n" ]; do
        if ! is_alone "$(cat "$tmp/$i.name")" && mkdir "$tmp/$i.claim" 2>/dev/null; then
            exec_group "$i"
        fi
        i=$((i + 1))
    done
}

if [ "$JOBS" -ge 2 ]; then
    k=0
    while [ "$k" -lt "$JOBS" ]; do worker & k=$((k + 1)); done
    i=1
    while [ "$i" -le "$n" ]; do
        if ! is_alone "$(cat "$tmp/$i.name")"; then
            while [ ! -f "$tmp/$i.rc" ]; do sleep 1; done
            report "$i"
        fi
        i=$((i + 1))
    done
    wait
fi
i=1
while [ "$i" -le "$n" ]; do
    if [ "$JOBS" -lt 2 ] || is_alone "$(cat "$tmp/$i.name")"; then
        exec_group "$i"; report "$i"
    fi
    i=$((i + 1))
done

awk -v all=$(( $(now_ms) - start )) '{ c += $1 } END {
    printf "time: %.1f s CPU (user + sys), %.1f s wall, %d at a time\n", c / 1000, all / 1000, '"$JOBS"' }' "$tmp/times"
echo "slowest (s CPU, s wall):"
sort -rn "$tmp/times" | head -n 10 | awk '{ printf "  %6.1f %6.1f  %s\n", $1 / 1000, $2 / 1000, $3 }'
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
