#!/bin/sh
# The layers of core/ (core/README.md, How the code is laid out), checked two ways:
#   includes  every #include "..." in core/<layer>/ resolves to a header of
#             the same or a lower layer; the public headers at core/ root
#             (tt.h, tt_internal.h) are for tensor and up, never for base or
#             kernel (not even as a known exception); no core file includes
#             Lua's headers; <png.h> only in core/figure/.
#   calls     every symbol a core object uses from another core object is
#             defined in the same or a lower layer (nm on the built objects),
#             and no core object calls into Lua.
#   lua/      every file of lua/ has a rank (LUA_RANKS, as lauxtt.h's header
#             comment orders them) and includes only headers of lua/ of its
#             own rank or below (any core header is below all of lua/).
# Upward uses that exist today are listed in tests/layers.known, each with
# its reason; they print as known exceptions, and one that no longer occurs
# is an error, so the list only shrinks.
# Usage: sh tests/layers.sh [root [build]]   (run by make layers)
root=${1:-.} build=${2:-build}
cd "$root" || exit 2
LAYERS="base kernel tensor trace ops figure"   # lowest first
API_RANK=3                                     # tt.h and tt_internal.h: tensor and up
# lua/ by file name (without .c/.h), lowest first: lauxtt; the parts of tt
# and the interpreter's services; linit, which assembles tt; main.
LUA_RANKS="lauxtt:1 ltensor:2 lnn:2 loptim:2 lfigures:2 lio:2 lgradcheck:2 ltrace:2 lsandbox:2 lreport:2 lttlib:2 linit:3 main:4 lcompare:4"
NM=${NM:-nm}
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0

rank() {  # layer name -> 1..6, 0 when not a layer
    i=1
    for l in $LAYERS; do [ "$l" = "$1" ] && { echo $i; return; }; i=$((i + 1)); done
    echo 0
}

# The allow-list: "file -> header-or-symbol" per line, '#' starts a comment.
sed 's/#.*//; s/[[:space:]]*$//; /^[[:space:]]*$/d; s/[[:space:]][[:space:]]*/ /g' \
    tests/layers.known > "$tmp/known" 2>/dev/null || : > "$tmp/known"
: > "$tmp/seen"

# One upward use: a known exception, or a failure.
upward() {  # "file -> what", explanation
    if grep -qxF "$1" "$tmp/known"; then
        echo "known exception: $1 ($2)"; echo "$1" >> "$tmp/seen"
    else
        echo "FAIL $1: $2"; bad=1
    fi
}

# ===== Files in no layer =====
for f in core/*; do
    case ${f#core/} in
    tt.h|tt_internal.h|README.md) ;;   # the public headers, and the docs
    *) if [ -d "$f" ] && [ "$(rank "${f#core/}")" -gt 0 ]; then :; else
           echo "FAIL $f is in no layer (folders: $LAYERS)"; failed=$((failed + 1)); fi ;;
    esac
done

# ===== Includes =====
for f in core/*.h core/*/*.c core/*/*.h; do
    [ -f "$f" ] || continue
    dir=$(dirname "$f"); layer=${dir#core}; layer=${layer#/}
    if [ -z "$layer" ]; then r=$API_RANK; else r=$(rank "$layer"); fi
    bad=0
    for h in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*<\([^>]*\)>.*/\1/p' "$f"); do
        case $h in
        lua.h|lauxlib.h|lualib.h|luaconf.h)
            echo "FAIL $f includes <$h>: the core knows nothing of Lua"; bad=1 ;;
        png.h|pngconf.h)
            [ "$layer" = figure ] || { echo "FAIL $f includes <$h>: only core/figure/ talks to libpng"; bad=1; } ;;
        esac
    done
    for h in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f"); do
        if [ -f "$dir/$h" ]; then t="$dir/$h"; elif [ -f "core/$h" ]; then t="core/$h"; else
            echo "FAIL $f includes \"$h\", which is not in core/"; bad=1; continue; fi
        tdir=$(dirname "$t"); tlayer=${tdir#core}; tlayer=${tlayer#/}
        if [ -z "$tlayer" ] && [ "$r" -lt "$API_RANK" ]; then
            # never an allowed exception: base and kernel stand below the API
            echo "FAIL $f -> ${t#core/}: $layer never sees the public API, not even as a known exception"
            bad=1; continue
        fi
        if [ -z "$tlayer" ]; then tr=$API_RANK; tname="the public API (tensor and up)";
        else tr=$(rank "$tlayer"); tname="layer $tlayer"; fi
        if [ "$tr" -gt "$r" ]; then
            upward "$f -> ${t#core/}" "${layer:-core root} includes a header of $tname"
        fi
    done
    if [ $bad -eq 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done

# ===== lua/: includes by rank =====
lua_rank() {  # lua/ file -> its rank, 0 when it has none
    b=$(basename "$1"); b=${b%.[ch]}
    for e in $LUA_RANKS; do [ "${e%%:*}" = "$b" ] && { echo "${e#*:}"; return; }; done
    echo 0
}
for f in lua/*.c lua/*.h; do
    [ -f "$f" ] || continue
    r=$(lua_rank "$f")
    if [ "$r" -eq 0 ]; then
        echo "FAIL $f has no rank in lua/ (LUA_RANKS in tests/layers.sh: $LUA_RANKS)"; failed=$((failed + 1)); continue
    fi
    bad=0
    for h in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f"); do
        if [ -f "lua/$h" ]; then
            hr=$(lua_rank "lua/$h")
            [ "$hr" -gt "$r" ] &&
                upward "$f -> $h" "$(basename "$f") (rank $r in lua/) includes a header of rank $hr"
        elif [ -f "core/$h" ] || ls core/*/"$h" >/dev/null 2>&1; then
            :   # the core is below all of lua/
        else
            echo "FAIL $f includes \"$h\", which is neither in lua/ nor in core/"; bad=1
        fi
    done
    if [ $bad -eq 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done

# ===== Calls (symbols between the built objects) =====
: > "$tmp/defs"
for c in core/*/*.c; do
    [ -f "$c" ] || continue     # a tree with no core sources (the checker's own tests)
    o="$build/${c%.c}.o"
    if [ ! -f "$o" ]; then echo "FAIL $o is not built (make layers builds it)"; failed=$((failed + 1)); continue; fi
    $NM -P -g "$o" | awk -v f="$c" '$2 != "U" && $2 != "w" && $2 != "v" { print $1, f }' >> "$tmp/defs"
done
sort -u "$tmp/defs" > "$tmp/defs.sorted"
for c in core/*/*.c; do
    o="$build/${c%.c}.o"
    [ -f "$o" ] || continue
    layer=$(dirname "$c"); layer=${layer#core/}; r=$(rank "$layer")
    bad=0
    $NM -P -g "$o" | awk '$2 == "U" { print $1 }' | sort -u > "$tmp/uses"
    for s in $(grep -E '^_?luaL?_' "$tmp/uses"); do
        echo "FAIL $c calls $s: the core knows nothing of Lua"; bad=1
    done
    # file defining each used symbol, in its layer
    for pair in $(join "$tmp/uses" "$tmp/defs.sorted" | tr ' ' '='); do
        s=${pair%%=*}; t=${pair#*=}
        tlayer=$(dirname "$t"); tlayer=${tlayer#core/}
        if [ "$(rank "$tlayer")" -gt "$r" ]; then
            upward "$c -> $s" "$layer calls $tlayer: $s is defined in $t"
        fi
    done
    if [ $bad -eq 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done

# ===== lua/: calls by rank (nm on the built objects) =====
# A lua/ object may call functions of lua/ files of its own rank or below
# (and anything in core/); a call upward is what a hook replaces.
: > "$tmp/ldefs"
for c in lua/*.c; do
    o="$build/${c%.c}.o"
    [ -f "$o" ] || continue     # make layers builds them; the checker's own tests may not
    $NM -P -g "$o" | awk -v f="$c" '$2 != "U" && $2 != "w" && $2 != "v" { print $1, f }' >> "$tmp/ldefs"
done
sort -u "$tmp/ldefs" > "$tmp/ldefs.sorted"
for c in lua/*.c; do
    o="$build/${c%.c}.o"
    [ -f "$o" ] || continue
    r=$(lua_rank "$c")
    bad=0
    $NM -P -g "$o" | awk '$2 == "U" { print $1 }' | sort -u > "$tmp/uses"
    for pair in $(join "$tmp/uses" "$tmp/ldefs.sorted" | tr ' ' '='); do
        s=${pair%%=*}; t=${pair#*=}
        tr_=$(lua_rank "$t")
        if [ "$tr_" -gt "$r" ]; then
            upward "$c -> $s" "$(basename "$c") (rank $r in lua/) calls $s of $(basename "$t") (rank $tr_)"
        fi
    done
    if [ $bad -eq 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done

# ===== Known exceptions that no longer occur =====
while IFS= read -r k; do
    grep -qxF "$k" "$tmp/seen" ||
        { echo "FAIL known exception no longer occurs, remove it from tests/layers.known: $k"; failed=$((failed + 1)); }
done < "$tmp/known"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
