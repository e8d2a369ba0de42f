#!/bin/sh
# Every lesson must run (its own asserts pass), reproduce its golden trace
# byte for byte, and redraw the committed figures pixel for pixel with the
# same text chunks (the Source line too: else make figures rewrites a file
# whose pixels did not change); the scripts in tests/golden reproduce their
# text (and JSON) traces.
# Regenerate after an intended change with `make golden figures`.
repo=$(pwd)
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/images"
ln -s "$repo/lessons" "$tmp/lessons"
passed=0 failed=0
fail() { echo "FAIL $1"; failed=$((failed + 1)); }

for f in lessons/*.lua; do
    [ -f "$f" ] || continue
    n=$(basename "$f" .lua)
    if ! (cd "$tmp" && TT_TRACE_NO_TIMES=1 "$repo/tensortrace" "lessons/$n.lua" >"$tmp/$n.trace" 2>"$tmp/$n.err"); then
        fail "$f: the lesson failed"; sed 's/^/    /' "$tmp/$n.err" | head -20; continue
    fi
    passed=$((passed + 1))
    if [ ! -f "tests/golden/$n.trace" ]; then
        fail "$f: no golden trace tests/golden/$n.trace (make golden)"
    elif cmp -s "tests/golden/$n.trace" "$tmp/$n.trace"; then
        passed=$((passed + 1))
    else
        fail "$f: trace differs from tests/golden/$n.trace"; diff "tests/golden/$n.trace" "$tmp/$n.trace" | head -20
    fi
done
# traces of tests/golden/*.lua (run from the repo root; they draw nothing)
for f in tests/golden/*.lua; do
    [ -f "$f" ] || continue
    n=${f%.lua}
    if TT_TRACE_NO_TIMES=1 ./tensortrace "$f" >"$tmp/golden.trace" 2>&1 && cmp -s "$n.trace" "$tmp/golden.trace"; then
        passed=$((passed + 1))
    else
        fail "$f: trace differs from $n.trace"; diff "$n.trace" "$tmp/golden.trace" | head -20
    fi
done
# JSON Lines of tests/golden/*.lua that have a .jsonl, timings ("ns") left out
for j in tests/golden/*.jsonl; do
    [ -f "$j" ] || continue
    f=${j%.jsonl}.lua
    if ./tensortrace -q --trace-json "$tmp/golden.jsonl" "$f" >/dev/null 2>&1 \
       && sed 's/,"ns":[0-9]*}$/}/' "$tmp/golden.jsonl" | cmp -s "$j" -; then
        passed=$((passed + 1))
    else
        fail "$f: JSON differs from $j"; sed 's/,"ns":[0-9]*}$/}/' "$tmp/golden.jsonl" | diff "$j" - | head -20
    fi
done
for img in "$tmp"/images/*.png; do
    [ -f "$img" ] || continue
    name=$(basename "$img")
    if [ ! -f "images/$name" ]; then
        fail "images/$name is not committed (make figures)"
    elif "$repo/build/tests/pngcmp" --text "images/$name" "$img"; then
        passed=$((passed + 1))
    else
        fail "images/$name is stale (make figures)"
    fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
