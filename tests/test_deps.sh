#!/bin/sh
# The README's two commands on a fresh machine: with the lua5.4 interpreter
# missing from PATH, `make check-test-deps` (run by `make test`) must ask the
# package manager for it; the build alone (`make check-deps`) must not.
# .ci/run installs nothing itself (it would hide what a newcomer meets).
cd "$(dirname "$0")/.." || exit 2
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
ok() { if [ "$1" = 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL $2"; fi; }

# A PATH with the usual tools but no lua5.4, and an apt-get that only logs.
mkdir "$tmp/bin"
for t in sh make pkg-config id cat echo grep sed rm mkdir env test true; do
    p=$(command -v "$t") && [ -x "$p" ] && ln -s "$p" "$tmp/bin/$t"
done
printf '#!/bin/sh\necho "apt-get $*" >> %s/log\n' "$tmp" > "$tmp/bin/apt-get"
chmod +x "$tmp/bin/apt-get"
: > "$tmp/log"

PATH="$tmp/bin" make --no-print-directory -s check-deps >"$tmp/out1" 2>&1
ok $? "make check-deps failed: $(cat "$tmp/out1")"
grep -q . "$tmp/log"; [ $? -ne 0 ]; ok $? "make check-deps installed packages the build does not need: $(cat "$tmp/log")"

PATH="$tmp/bin" make --no-print-directory -s check-test-deps >"$tmp/out2" 2>&1
ok $? "make check-test-deps failed: $(cat "$tmp/out2")"
grep -q 'install.* lua5\.4' "$tmp/log"; ok $? "make check-test-deps did not install lua5.4: log '$(cat "$tmp/log")'"
grep -q 'lua5\.4' "$tmp/out2"; ok $? "make check-test-deps did not say what it runs: $(cat "$tmp/out2")"

grep -Eq '(apt-get|apt|dnf|brew|pip3?|npm) +install' .ci/run; [ $? -ne 0 ]; ok $? ".ci/run installs packages itself"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
