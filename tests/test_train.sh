#!/bin/sh
# The tiny model of tests/lua/test_train.lua trained with --threads 1, 2
# and 3: each run passes its own checks, and the 50 losses (printed as hex
# floats) are bit-identical across thread counts.
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
fail() { echo "FAIL $1"; failed=$((failed + 1)); }

for n in 1 2 3; do
    if ./tensortrace -q --threads "$n" tests/lua/test_train.lua >"$tmp/$n.out" 2>&1 \
       && grep -q '^[0-9]* passed, 0 failed$' "$tmp/$n.out"; then
        passed=$((passed + 1))
    else
        fail "--threads $n: the training script failed"; sed 's/^/    /' "$tmp/$n.out" | tail -5
    fi
    grep '^losses: ' "$tmp/$n.out" >"$tmp/$n.losses"
done
for n in 2 3; do
    if [ -s "$tmp/1.losses" ] && cmp -s "$tmp/1.losses" "$tmp/$n.losses"; then
        passed=$((passed + 1))
    else
        fail "losses with --threads $n differ from --threads 1"
        tr ' ' '\n' <"$tmp/1.losses" >"$tmp/a"; tr ' ' '\n' <"$tmp/$n.losses" >"$tmp/b"
        diff "$tmp/a" "$tmp/b" | head -6
    fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
