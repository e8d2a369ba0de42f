#!/bin/sh
# make install / make uninstall into a temporary DESTDIR: the binary runs a
# lesson from the installed copy, a stock lua5.4 requires the installed tt.so,
# the man page renders without warnings, and uninstall leaves no file behind.
cd "$(dirname "$0")/.." || exit 2
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
ok() { if [ "$1" = 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL $2"; fi; }

dest=$tmp/dest prefix=/opt/tt
make --no-print-directory -s install DESTDIR="$dest" PREFIX=$prefix >"$tmp/install.out" 2>&1
ok $? "make install: $(cat "$tmp/install.out")"
root=$dest$prefix
for f in bin/tensortrace lib/lua/5.4/tt.so share/man/man1/tensortrace.1 \
         share/tensortrace/lessons/03_causal_mask.lua share/tensortrace/images/03_weights.png; do
    [ -f "$root/$f" ]; ok $? "not installed: $f"
done
[ -x "$root/bin/tensortrace" ]; ok $? "bin/tensortrace is not executable"
n_src=$(ls lessons/*.lua | wc -l); n_dst=$(ls "$root"/share/tensortrace/lessons/*.lua | wc -l)
[ "$n_src" = "$n_dst" ]; ok $? "lessons installed: $n_dst of $n_src"

# The installed binary runs an installed lesson away from the source tree.
mkdir "$tmp/run" "$tmp/run/images"
(cd "$tmp/run" && "$root/bin/tensortrace" -q "$root/share/tensortrace/lessons/05_hand_example.lua") >"$tmp/out" 2>&1
ok $? "installed lesson 05 failed: $(tail -5 "$tmp/out")"
[ -f "$tmp/run/images/05_weights.png" ]; ok $? "installed lesson 05 wrote no figure"
# lesson 09 loads the shared model (lessons/lib) and its checkpoint (lessons/data)
(cd "$tmp/run" && "$root/bin/tensortrace" -q "$root/share/tensortrace/lessons/09_kv_cache.lua") >"$tmp/out" 2>&1
ok $? "installed lesson 09 failed: $(tail -5 "$tmp/out")"
# lesson 07 loads the GQA checkpoint (and the MHA one); without it, it would retrain
(cd "$tmp/run" && "$root/bin/tensortrace" -q "$root/share/tensortrace/lessons/07_gqa.lua") >"$tmp/out" 2>&1
ok $? "installed lesson 07 failed: $(tail -5 "$tmp/out")"
! grep -q "^Trained" "$tmp/out"; ok $? "installed lesson 07 retrained: the GQA checkpoint was not installed"

# The browser page goes along when make web has built it (make test does not).
if [ -f build/web/index.html ]; then
    for f in index.html tensortrace.js lessons.js; do
        cmp -s "build/web/$f" "$root/share/tensortrace/web/$f"; ok $? "the web page's $f is not installed"
    done
else
    grep -q "no web page" "$tmp/install.out"; ok $? "make install did not say the web page is missing: $(cat "$tmp/install.out")"
fi

# --exercise finds the installed exercises from any folder (beside ../share)
(cd "$tmp/run" && XDG_STATE_HOME="$tmp/state" "$root/bin/tensortrace" --exercise 03) >"$tmp/out" 2>&1
[ $? -eq 1 ] && grep -q "not yet: .* is missing — the TODO at line" "$tmp/out"
ok $? "installed --exercise 03 did not say 'not yet': $(tail -3 "$tmp/out")"
(cd "$tmp/run" && XDG_STATE_HOME="$tmp/state" "$root/bin/tensortrace" --exercises) >"$tmp/out" 2>&1
grep -q "✗ 03_causal_mask" "$tmp/out" && grep -q "of $(ls lessons/exercises/[0-9]*.lua | wc -l | tr -d " ") done" "$tmp/out"
ok $? "installed --exercises: $(tail -3 "$tmp/out")"

# A stock lua5.4 finds the module through its C path.
LUA_CPATH="$root/lib/lua/5.4/?.so" lua5.4 -e 'local tt = require "tt"; assert(tt.ones(2, 3):sum():item() == 6); print("ok")' >"$tmp/out" 2>&1
ok $? "lua5.4 require 'tt' from the install: $(cat "$tmp/out")"

# The man page renders cleanly (groff warnings are errors here).
if command -v man >/dev/null 2>&1; then
    MANWIDTH=80 man --warnings -l "$root/share/man/man1/tensortrace.1" >"$tmp/man" 2>"$tmp/manerr"
    ok $? "man page failed to render"
    [ ! -s "$tmp/manerr" ]; ok $? "man page warnings: $(cat "$tmp/manerr")"
    grep -q 'EXIT STATUS' "$tmp/man"; ok $? "man page has no EXIT STATUS section"
    for o in --sandbox --max-memory --timeout --trace-json --seed --threads; do
        grep -q -- "$o" "$tmp/man"; ok $? "man page does not document $o"
    done
fi
# Every option of --help is in the man page.
for o in $(./tensortrace --help | grep -o -- '--[a-z-]*' | sort -u); do
    grep -q -- "$(echo "$o" | sed 's/-/\\\\-/g')" lua/tensortrace.1; ok $? "man page lacks $o (listed by --help)"
done

make --no-print-directory -s uninstall DESTDIR="$dest" PREFIX=$prefix >"$tmp/out" 2>&1
ok $? "make uninstall: $(cat "$tmp/out")"
left=$(find "$dest" -type f | head -5)
[ -z "$left" ]; ok $? "uninstall left files: $left"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
