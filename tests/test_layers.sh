#!/bin/sh
# make layers on the real tree (its known exceptions printed), then the
# checker itself on small made-up trees: each rule it enforces must fail a
# tree that breaks it, and the allow-list must pass a listed use, fail an
# unlisted one and fail a stale line.
cd "$(dirname "$0")/.." || exit 2
build=${1:-build}
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
ok() { if [ "$1" = 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL $2"; fi; }
CC=${CC:-cc}

sh tests/layers.sh . "$build" > "$tmp/real" 2>&1
ok $? "the tree breaks its layers: $(grep -v '^known' "$tmp/real")"
grep '^known exception' "$tmp/real"

# A made-up tree: core/<layer>/<file> and lua/<file> with the given lines, plus tt.h.
# Compiles its .c files into t/build so the call check has objects.
tree() {  # name, then "path:line" pairs
    t=$tmp/$1; shift
    mkdir -p "$t/core/base" "$t/core/kernel" "$t/core/ops" "$t/core/figure" "$t/tests" "$t/lua"
    printf '/* public API */\nint tt_api(void);\n' > "$t/core/tt.h"
    for pl in "$@"; do printf '%s\n' "${pl#*:}" >> "$t/${pl%%:*}"; done
    for c in "$t"/core/*/*.c "$t"/lua/*.c; do
        [ -f "$c" ] || continue; rel=${c#"$t"/}; mkdir -p "$t/build/$(dirname "$rel")"
        $CC -std=c11 -c -I"$t/core" -o "$t/build/${rel%.c}.o" "$c" 2>>"$t/cc.log" || :
    done
}
check() {  # name, expect (pass|fail), what, text the output must hold
    sh tests/layers.sh "$tmp/$1" build > "$tmp/$1.out" 2>&1; rc=$?
    if [ "$2" = pass ]; then [ $rc -eq 0 ]; else [ $rc -ne 0 ]; fi
    ok $? "$3: expected $2, got exit $rc: $(cat "$tmp/$1.out")"
    grep -qF -- "$4" "$tmp/$1.out"; ok $? "$3: output lacks '$4': $(cat "$tmp/$1.out")"
}

tree good "core/kernel/k.c:int tk_add(int a);" "core/kernel/k.c:int tk_add(int a) { return a + 1; }" \
     "core/ops/o.c:#include \"tt.h\"" "core/ops/o.c:int tk_add(int a);" "core/ops/o.c:int tt_op(void) { return tk_add(1); }"
check good pass "a clean tree" " 0 failed"

tree kincl "core/kernel/k.c:#include \"tt.h\"" "core/kernel/k.c:int tk_one(void) { return 1; }"
check kincl fail "a kernel file including tt.h" "FAIL core/kernel/k.c -> tt.h"
cp -R "$tmp/kincl" "$tmp/kincl_listed" && printf 'core/kernel/k.c -> tt.h\n' > "$tmp/kincl_listed/tests/layers.known"
check kincl_listed fail "a kernel file including tt.h, even when listed" "never sees the public API, not even as a known exception"
tree bincl "core/base/b.c:#include \"tt_internal.h\"" "core/base/b.c:int tb_one(void) { return 1; }"
printf '/* internal API */\n' > "$tmp/bincl/core/tt_internal.h"
check bincl fail "a base file including tt_internal.h" "FAIL core/base/b.c -> tt_internal.h"

tree upinc "core/ops/o.h:int tt_op(void);" "core/kernel/k.c:#include \"ops/o.h\"" "core/kernel/k.c:int tk_one(void) { return 1; }"
check upinc fail "a kernel file including an ops header" "FAIL core/kernel/k.c -> ops/o.h"

tree lua "core/base/b.c:#include <lua.h>"
check lua fail "a core file including lua.h" "FAIL core/base/b.c includes <lua.h>"

tree png "core/ops/o.c:#include <png.h>"
check png fail "libpng outside core/figure" "FAIL core/ops/o.c includes <png.h>"

tree stray "core/misc.c:int x;"
check stray fail "a file in no layer" "FAIL core/misc.c is in no layer"

tree call "core/ops/o.c:int tt_op(void) { return 2; }" \
     "core/kernel/k.c:int tt_op(void);" "core/kernel/k.c:int tk_one(void) { return tt_op(); }"
check call fail "a kernel calling an op" "FAIL core/kernel/k.c -> tt_op: kernel calls ops: tt_op is defined in core/ops/o.c"

tree luacall "core/ops/o.c:void lua_settop(void *L, int i);" "core/ops/o.c:void tt_op(void *L) { lua_settop(L, 0); }"
check luacall fail "a core file calling Lua" "FAIL core/ops/o.c calls lua_settop"

tree luagood "lua/lauxtt.h:#include \"tt.h\"" "lua/lauxtt.c:#include \"lauxtt.h\"" \
     "lua/ltrace.h:#include \"lauxtt.h\"" "lua/ltensor.c:#include \"ltrace.h\"" "lua/linit.c:#include \"ltrace.h\""
check luagood pass "lua/ files including their own rank and below" " 0 failed"

tree luacallup "lua/linit.c:int luaopen_tt(void) { return 1; }" \
     "lua/lauxtt.c:int luaopen_tt(void);" "lua/lauxtt.c:int ltt_one(void) { return luaopen_tt(); }"
check luacallup fail "lauxtt.c calling linit.c" "FAIL lua/lauxtt.c -> luaopen_tt: lauxtt.c (rank 1 in lua/) calls luaopen_tt of linit.c (rank 3)"

cp -R "$tmp/luagood" "$tmp/luaup" && printf '#include "ltrace.h"\n' >> "$tmp/luaup/lua/lauxtt.c"
check luaup fail "lauxtt.c including a rank-2 header" "FAIL lua/lauxtt.c -> ltrace.h: lauxtt.c (rank 1 in lua/) includes a header of rank 2"

cp -R "$tmp/luagood" "$tmp/luaup2" && : > "$tmp/luaup2/lua/linit.h"
printf '#include "linit.h"\n' >> "$tmp/luaup2/lua/ltensor.c"
check luaup2 fail "a part including linit's header" "FAIL lua/ltensor.c -> linit.h: ltensor.c (rank 2 in lua/) includes a header of rank 3"

tree luanorank "lua/lmisc.c:int misc;"
check luanorank fail "a lua/ file with no rank" "FAIL lua/lmisc.c has no rank in lua/"

tree luamissing "lua/lauxtt.c:#include \"nowhere.h\""
check luamissing fail "a lua/ include found nowhere" "FAIL lua/lauxtt.c includes \"nowhere.h\", which is neither in lua/ nor in core/"

cp -R "$tmp/call" "$tmp/listed" && printf '# why\ncore/kernel/k.c -> tt_op  # a comment\n' > "$tmp/listed/tests/layers.known"
check listed pass "a listed upward call" "known exception: core/kernel/k.c -> tt_op"

cp -R "$tmp/good" "$tmp/stale" && printf 'core/kernel/k.c -> tt_op\n' > "$tmp/stale/tests/layers.known"
check stale fail "a stale allow-list line" "no longer occurs, remove it from tests/layers.known: core/kernel/k.c -> tt_op"

tree unbuilt "core/ops/o.c:int tt_op(void) { return 2; }"; rm -f "$tmp/unbuilt/build/core/ops/o.o"
check unbuilt fail "a missing object" "build/core/ops/o.o is not built"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
