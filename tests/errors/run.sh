#!/bin/sh
# The error catalogue: each tests/errors/NN_*.lua is one mistake a learner
# makes. Run alone through ./tensortrace (options from a first line
# "-- options: ..."), it must exit 1 and the first line of its stderr must be
# exactly NN_*.expected: op, shapes (with dim names), file:line and a hint.
#   sh tests/errors/run.sh            check
#   sh tests/errors/run.sh --update   rewrite the .expected files (review the diff!)
cd "$(dirname "$0")/../.." || exit 2
bin=./tensortrace
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
for f in tests/errors/*.lua; do
    exp=${f%.lua}.expected
    opts=$(sed -n '1s/^-- options: //p' "$f")
    # shellcheck disable=SC2086
    $bin -q $opts "$f" >"$tmp/out" 2>"$tmp/err" </dev/null
    rc=$?
    got=$(head -n 1 "$tmp/err")
    if [ "$1" = "--update" ]; then
        printf '%s\n' "$got" >"$exp"
    fi
    if [ ! -f "$exp" ]; then
        echo "FAIL $f: no $exp (sh tests/errors/run.sh --update)"; failed=$((failed + 1))
    elif [ "$rc" -ne 1 ]; then
        echo "FAIL $f: exit $rc, expected 1"; sed 's/^/    /' "$tmp/err" | head -5; failed=$((failed + 1))
    elif [ "$got" != "$(cat "$exp")" ]; then
        echo "FAIL $f: the message changed"
        echo "    want: $(cat "$exp")"
        echo "    got:  $got"
        failed=$((failed + 1))
    else
        passed=$((passed + 1))
    fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
