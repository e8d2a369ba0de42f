#!/bin/sh
# results.sh — what `make bench` runs: the kernel sections (bench.c), the
# tiny ops and the lessons (overhead.lua), the training step (train.lua),
# a class's grading (grading.lua),
# shown as they run and then written as one Markdown file, the only place
# the READMEs take numbers from: tests/bench/RESULTS.md for a whole run,
# build/bench/RESULTS.md when sections are picked or the run is quick.
# Usage: sh tests/bench/results.sh BUILD [quick] [section...] [path=P] [notorch]
build=${1:-build}
[ $# -gt 0 ] && shift
cd "$(dirname "$0")/../.." || exit 2
out=tests/bench/RESULTS.md
[ $# -gt 0 ] && out=$build/bench/RESULTS.md
log=$(mktemp) && rc=$(mktemp) || exit 2
trap 'rm -f "$log" "$rc"' EXIT

commit=$(git rev-parse --short HEAD 2>/dev/null)
[ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] && commit="$commit with uncommitted changes"
start=$(date +%s)
{
    "$build/bench/bench" "$@" &&
    ./tensortrace -q tests/bench/overhead.lua "$@" &&
    ./tensortrace -q tests/bench/train.lua "$@" &&
    ./tensortrace -q tests/bench/grading.lua "$@"
    echo $? >"$rc"
} 2>&1 | tee "$log"
status=$(cat "$rc")
[ "$status" = 0 ] || { echo "bench: failed (exit $status); $out not written"; exit 1; }
secs=$(( $(date +%s) - start ))

{
    echo "# Benchmark results"
    echo
    echo "Written by \`make bench\` (\`tests/bench/results.sh\`): run it again"
    echo "rather than edit this file. What each section measures and how the"
    echo "kernels are built: [core/README.md](../../core/README.md), \"Measuring\", and"
    echo "[core/kernel/README.md](../../core/kernel/README.md)."
    echo
    echo "- run: \`make bench\`${*:+ with the arguments \`$*\`} at commit $commit, $(( secs / 60 )) min $(( secs % 60 )) s of wall time"
    echo "- rates move with whatever else the machine runs; the ratios, measured"
    echo "  in turns, move less: compare ratios across runs, not rates"
    echo
    echo "Each section is the table the bench prints: medians with (min-max),"
    echo "ours beside its yardstick (OpenBLAS, a \`memcpy\` of the same bytes,"
    echo "PyTorch on \`/usr/bin/python3\`), and the ratio of the two, measured in"
    echo "turns so that a noisy spell falls on both sides."
    awk '
        BEGIN { print "\n## Machine\n\n```text" }
        /^== / { t = substr($0, 4); sub(/ \(.*$/, "", t); sub(/:.*$/, "", t)
                 print "```\n\n## " t "\n\n```text"; print; next }
        /^$/ { next }
        /^tensortrace bench/ { sub(/ — [0-9-]+ [0-9:]+ UTC;/, " —") }   # the file says what holds, not when
        { print }
        END { print "```" }
    ' "$log"
} >"$out"
echo "bench: wrote $out"
