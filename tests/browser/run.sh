#!/bin/sh
# Every lesson's report (and the index) of `make report`, in headless
# Chromium, at a desktop (1280 px) and a phone (390 px) width: a copy of each
# page gets tests/browser/harness.js first in its <head>; chromium --dump-dom
# prints the harness's PASS/FAIL lines (images load, nothing fetched, a click
# on a group header toggles it, no sideways scrolling, no console errors) and
# --screenshot keeps the picture, which must not be blank (many distinct
# colours). Screenshots stay in BUILD/report/screenshots for a look.
# Usage: sh tests/browser/run.sh [BUILD]; ends with "N passed, N failed".
build=${1:-build}
cd "$(dirname "$0")/../.." || exit 2
reports=$build/report
shots=$reports/screenshots
pngcolors=$build/tests/pngcolors
chrome=$(command -v chromium || command -v chromium-browser)
[ -n "$chrome" ] || { echo "test-browser: chromium not found"; echo "0 passed, 1 failed"; exit 1; }
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$shots"
passed=0 failed=0
ok() {  # status, description
    if [ "$1" = 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL $2"; fi
}

# page.html width height -> $tmp/NAME-WIDTH.dom and $shots/NAME-WIDTH.png.
# Headless windows are at least 500 px wide: a narrower width puts the page
# in a frame of that width (its own viewport), at the window's left edge,
# which the screenshot of that width shows.
browse() {
    name=$(basename "$1" .html)
    copy=$tmp/$name-$2.html
    awk -v h=tests/browser/harness.js '{ print }
        !done && /<meta charset=/ { print "<script>"; while ((getline l < h) > 0) print l; print "</script>"; done = 1 }' \
        "$1" >"$copy"
    if [ "$2" -lt 500 ]; then
        frame=$copy
        copy=$tmp/$name-$2-frame.html
        printf '%s\n' '<!DOCTYPE html><html><head><meta charset="utf-8"/><style>body{margin:0}</style>' \
            "<script>window.addEventListener('message', function (e) { var p = document.createElement('pre');" \
            "p.id = 'tt-results'; p.textContent = e.data; document.body.appendChild(p); });</script></head><body>" \
            "<iframe src=\"$(basename "$frame")\" style=\"width:$2px;height:$3px;border:0;display:block\"></iframe>" \
            '</body></html>' >"$copy"
    fi
    profile=$(mktemp -d "$tmp/profile.XXXXXX")
    timeout 90 "$chrome" --headless --no-sandbox --disable-gpu --disable-background-networking \
        --disable-component-update --disable-sync --no-first-run --user-data-dir="$profile" \
        --hide-scrollbars --window-size="$2,$3" --virtual-time-budget=5000 \
        --screenshot="$shots/$name-$2.png" --dump-dom "file://$copy" \
        >"$tmp/$name-$2.dom" 2>"$profile.log"
    rm -rf "$profile"
}

judge() {  # page.html width
    name=$(basename "$1" .html)
    dom=$tmp/$name-$2.dom
    results=$(sed -n '/<pre id="tt-results">/,/<\/pre>/p' "$dom" | grep -E '^(PASS|FAIL) ')
    [ -n "$results" ]; ok $? "$name at $2 px: the page's checks never ran ($(tail -c 300 "$dom"))"
    echo "$results" | while IFS= read -r line; do
        case $line in FAIL*) echo "FAIL $name at $2 px: ${line#FAIL }" | cut -c1-400;; esac
    done
    p=$(echo "$results" | grep -c '^PASS'); f=$(echo "$results" | grep -c '^FAIL')
    passed=$((passed + p)); failed=$((failed + f))
    set -- $("$pngcolors" "$shots/$name-$2.png" 2>/dev/null)
    w=${1:-0} colours=${3:-0}
    [ "$w" -gt 0 ] && [ "$colours" -ge 200 ]
    ok $? "$name: the screenshot at $w px is blank or missing ($colours colours)"
}

pages=$(ls "$reports"/[0-9]*.html 2>/dev/null)
[ -n "$pages" ]; ok $? "no report pages in $reports (run make report)"
n=0
for page in $pages "$reports/index.html"; do
    [ -f "$page" ] || continue
    browse "$page" 1280 900 &
    browse "$page" 390 844 &
    wait
    judge "$page" 1280
    judge "$page" 390
    n=$((n + 1))
done
echo "$n pages checked; screenshots in $shots"

# The index links every lesson's page, and only pages that are there.
links=$(grep -o 'href="[^"#]*"' "$reports/index.html" | sed 's/^href="//; s/"$//')
[ "$(echo "$links" | grep -c .)" = "$(ls lessons/*.lua | wc -l)" ]
ok $? "index.html links $(echo "$links" | grep -c .) pages for $(ls lessons/*.lua | wc -l) lessons"
for l in $links; do [ -f "$reports/$l" ]; ok $? "index.html links a missing page: $l"; done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
