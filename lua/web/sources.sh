#!/bin/sh
# make web's sources: Lua 5.4, zlib and libpng from Debian's source packages
# (apt-get source, which checks each file against the signed Sources index),
# unpacked under DIR. Adds a deb-src entry for the configured Debian mirror
# when there is none, and says so. Usage: sh lua/web/sources.sh DIR
set -e
dir=$1
[ -n "$dir" ] || { echo "usage: sh lua/web/sources.sh DIR" >&2; exit 2; }
mkdir -p "$dir"
cd "$dir"
sudo=""; [ "$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1 && sudo="sudo"
have() { ls -d "$1"-*/ >/dev/null 2>&1; }
have lua5.4 && have zlib && have libpng1.6 && exit 0
command -v apt-get >/dev/null 2>&1 || {
    echo "web: needs apt-get source (Debian) for lua5.4, zlib and libpng1.6; or unpack them into $dir"; exit 1; }
command -v dpkg-source >/dev/null 2>&1 || {
    echo "web: dpkg-dev is missing; running: $sudo apt-get install -y dpkg-dev"; $sudo apt-get install -y dpkg-dev; }
if ! grep -rqsE '^(deb-src|Types:.*deb-src)' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    # The first Debian archive the machine is configured with (deb822 or one-line form).
    uri=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v security | head -n 1)
    [ -n "$uri" ] || uri=$(sed -n 's/^deb \(\[[^]]*\] \)\{0,1\}\([^ ]*\) .*/\2/p' /etc/apt/sources.list 2>/dev/null | grep -v security | head -n 1)
    suite=$(. /etc/os-release && echo "$VERSION_CODENAME")
    [ -n "$uri" ] && [ -n "$suite" ] || { echo "web: no Debian mirror found in /etc/apt to add a deb-src entry for"; exit 1; }
    entry="Types: deb-src
URIs: $uri
Suites: $suite
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg"
    echo "web: no deb-src entry in /etc/apt; adding /etc/apt/sources.list.d/tensortrace-src.sources:"
    echo "$entry" | sed 's/^/    /'
    echo "$entry" | $sudo tee /etc/apt/sources.list.d/tensortrace-src.sources >/dev/null
    echo "web: running: ${sudo:+$sudo }apt-get update"
    $sudo apt-get update -qq
fi
for p in lua5.4 zlib libpng1.6; do
    have "$p" && continue
    echo "web: running: apt-get source $p (in $dir)"
    apt-get source -q "$p" >"$p.log" 2>&1 || { cat "$p.log"; exit 1; }
done
