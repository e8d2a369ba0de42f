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

# The same heatmap as PNG and as SVG: Chromium draws the SVG at its own size
# and nearly every pixel of the PNG has its colour at most a pixel away
# (cells, hatching, colour bar; the text's font differs). Drawn 3 px off,
# the cell edges no longer line up: the check can fail.
svg_vs_png() {  # offset_px -> "MATCHED TOTAL"
    cat >"$tmp/fig.html" <<HTML
<!DOCTYPE html><html><head><meta charset="utf-8"/><style>body{margin:0;background:#fff}
img{display:block;margin-left:${1}px}</style></head><body><img src="fig.svg"/></body></html>
HTML
    profile=$(mktemp -d "$tmp/profile.XXXXXX")
    set -- $("$pngcolors" "$tmp/fig.png")
    timeout 60 "$chrome" --headless --no-sandbox --disable-gpu --disable-background-networking \
        --disable-component-update --disable-sync --no-first-run --user-data-dir="$profile" \
        --hide-scrollbars --force-device-scale-factor=1 --window-size="$1,$2" \
        --screenshot="$tmp/fig-svg.png" "file://$tmp/fig.html" >/dev/null 2>&1
    rm -rf "$profile"
    "$pngcolors" "$tmp/fig.png" "$tmp/fig-svg.png"
}
fig_lua='local x = tt.tensor{{0.1, 0.7, -1, 2, 0.3, 0.9, 0.2}, {1, -2, 0.5, 0.4, 1.5, -0.1, 0.8},
  {0.3, 0.2, 1.1, -0.6, 0.9, 0.4, -1.2}, {2, 0.1, -0.3, 0.7, -0.8, 1.3, 0.6},
  {-0.5, 0.6, 0.2, 1.8, 0.1, -0.9, 0.4}}:masked_fill(~tt.causal_mask(5, 7, "upper_left"), -math.huge)
for _, ext in ipairs({"png", "svg"}) do tt.heatmap(x, arg[1] .. "/fig." .. ext, {title = "Scores", annotate = false}) end'
printf '%s\n' "$fig_lua" >"$tmp/fig.lua"
./tensortrace -q "$tmp/fig.lua" "$tmp" >"$tmp/fig.out" 2>&1
ok $? "the PNG and SVG heatmap for the layout check: $(cat "$tmp/fig.out")"
set -- $(svg_vs_png 0)
m0=${1:-0} t0=${2:-1}
[ $((m0 * 100)) -ge $((t0 * 99)) ]; ok $? "SVG drawn by Chromium matches the PNG within a pixel: $m0 of $t0 pixels"; echo "svg vs png: $m0 of $t0 pixels within a pixel"
set -- $(svg_vs_png 3)
m3=${1:-0} t3=${2:-1}
[ $((m3 * 100)) -lt $((m0 * 100 - t3)) ]; ok $? "the layout check sees a 3 px shift: $m3 of $t3 pixels (unshifted $m0)"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
