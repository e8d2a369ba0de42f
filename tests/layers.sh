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
LUA_RANKS="lauxtt:1 ltensor:2 lnn:2 loptim:2 lfigures:2 lio:2 lgradcheck:2 ltrace:2 lsandbox:2 lreport:2 lttlib:2 linit:3 main:4 lcompare:4 lexercise:4"
NM=${NM:-nm}
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0

# rank and lua_rank set $rk rather than print it: a $(...) forks, and the
# calls check asks for thousands of ranks.
rank() {  # layer name -> rk = 1..6, 0 when not a layer
    rk=1
    for l in $LAYERS; do [ "$l" = "$1" ] && return; rk=$((rk + 1)); done
    rk=0
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
    *) rank "${f#core/}"
       if [ -d "$f" ] && [ "$rk" -gt 0 ]; then :; else
           echo "FAIL $f is in no layer (folders: $LAYERS)"; failed=$((failed + 1)); fi ;;
    esac
done

# ===== Includes =====
for f in core/*.h core/*/*.c core/*/*.h; do
    [ -f "$f" ] || continue
    dir=${f%/*}; layer=${dir#core}; layer=${layer#/}
    if [ -z "$layer" ]; then r=$API_RANK; else rank "$layer"; r=$rk; fi
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
        tdir=${t%/*}; tlayer=${tdir#core}; tlayer=${tlayer#/}
        if [ -z "$tlayer" ] && [ "$r" -lt "$API_RANK" ]; then
            # never an allowed exception: base and kernel stand below the API
            echo "FAIL $f -> ${t#core/}: $layer never sees the public API, not even as a known exception"
            bad=1; continue
        fi
        if [ -z "$tlayer" ]; then tr=$API_RANK; tname="the public API (tensor and up)";
        else rank "$tlayer"; tr=$rk; tname="layer $tlayer"; fi
        if [ "$tr" -gt "$r" ]; then
            upward "$f -> ${t#core/}" "${layer:-core root} includes a header of $tname"
        fi
    done
    if [ $bad -eq 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done

# ===== lua/: includes by rank =====
lua_rank() {  # lua/ file -> rk = its rank, 0 when it has none
    b=${1##*/}; b=${b%.[ch]}
    for e in $LUA_RANKS; do [ "${e%%:*}" = "$b" ] && { rk=${e#*:}; return; }; done
    rk=0
}
for f in lua/*.c lua/*.h; do
    [ -f "$f" ] || continue
    lua_rank "$f"; r=$rk
    if [ "$r" -eq 0 ]; then
        echo "FAIL $f has no rank in lua/ (LUA_RANKS in tests/layers.sh: $LUA_RANKS)"; failed=$((failed + 1)); continue
    fi
    bad=0
    for h in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f"); do
        if [ -f "lua/$h" ]; then
            lua_rank "lua/$h"; hr=$rk
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
# One nm over all the objects, read by one awk: a process or two per object
# and per symbol made this check take most of a minute. calls_of OBJECTS
# prints, per object in order, "N 0obj SRC", then "N 1lua SRC SYM" for each
# Lua symbol it uses and "N 2use SRC SYM DEFINER" for each symbol it uses
# that an object of the list defines (N: the object's number), sorted.
calls_of() {
    [ $# -gt 0 ] || return 0
    $NM -P -g -A "$@" | awk -v b="$build/" '
        { f = $1; sub(/:$/, "", f); f = substr(f, length(b) + 1); sub(/\.o$/, ".c", f)
          if (!(f in num)) { num[f] = ++n; src[n] = f }
          if ($3 == "U") { if (!((f, $2) in used)) { used[f, $2] = 1; uses[++nu] = f " " $2 } }
          else if ($3 != "w" && $3 != "v" && !(($2, f) in isdef)) { isdef[$2, f] = 1; def[$2] = def[$2] " " f } }
        END {
          for (i = 1; i <= n; i++) printf "%06d 0obj %s\n", i, src[i]
          for (u = 1; u <= nu; u++) {
              split(uses[u], a, " "); k = sprintf("%06d", num[a[1]])
              if (a[2] ~ /^_?luaL?_/) print k, "1lua", a[1], a[2]
              m = split(def[a[2]], d, " ")
              for (j = 1; j <= m; j++) print k, "2use", a[1], a[2], d[j]
          } }' | LC_ALL=C sort
}
objs=
for c in core/*/*.c; do
    [ -f "$c" ] || continue     # a tree with no core sources (the checker's own tests)
    o="$build/${c%.c}.o"
    if [ ! -f "$o" ]; then echo "FAIL $o is not built (make layers builds it)"; failed=$((failed + 1)); continue; fi
    objs="$objs $o"
done
calls_of $objs > "$tmp/calls"
c=
while read -r n kind file s t; do
    case $kind in
    0obj)
        [ -n "$c" ] && if [ $bad -eq 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
        c=$file; layer=${c#core/}; layer=${layer%%/*}; rank "$layer"; r=$rk; bad=0 ;;
    1lua) echo "FAIL $c calls $s: the core knows nothing of Lua"; bad=1 ;;
    2use)
        tlayer=${t#core/}; tlayer=${tlayer%%/*}; rank "$tlayer"
        [ "$rk" -gt "$r" ] && upward "$c -> $s" "$layer calls $tlayer: $s is defined in $t" ;;
    esac
done < "$tmp/calls"
[ -n "$c" ] && if [ $bad -eq 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi

# ===== lua/: calls by rank (nm on the built objects) =====
# A lua/ object may call functions of lua/ files of its own rank or below
# (and anything in core/); a call upward is what a hook replaces.
objs=
for c in lua/*.c; do
    o="$build/${c%.c}.o"
    [ -f "$o" ] && objs="$objs $o"   # make layers builds them; the checker's own tests may not
done
calls_of $objs > "$tmp/calls"
c=
while read -r n kind file s t; do
    case $kind in
    0obj)
        [ -n "$c" ] && if [ $bad -eq 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
        c=$file; lua_rank "$c"; r=$rk; bad=0 ;;
    2use)
        lua_rank "$t"; tr_=$rk
        [ "$tr_" -gt "$r" ] &&
            upward "$c -> $s" "${c##*/} (rank $r in lua/) calls $s of ${t##*/} (rank $tr_)" ;;
    esac
done < "$tmp/calls"
[ -n "$c" ] && if [ $bad -eq 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi

# ===== Known exceptions that no longer occur =====
while IFS= read -r k; do
    grep -qxF "$k" "$tmp/seen" ||
        { echo "FAIL known exception no longer occurs, remove it from tests/layers.known: $k"; failed=$((failed + 1)); }
done < "$tmp/known"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
