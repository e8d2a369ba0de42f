-- test_report.lua — tensortrace --report FILE.html, read as a person (and a
-- strict XML parser) would: well-formed, escaped, figures embedded, nothing
-- from the network, the error of a script that stops half-way, the usage
-- errors. Runs ./tensortrace; the browser side is tests/browser/.
local T = dofile("tests/lua/check.lua")
local check = T.check

local dir = T.tmpdir()
local function write(name, text) return T.write(dir, name, text) end
local function run(args) return T.run(dir, "--seed 7 " .. args) end
local has = function(s, pat) return s ~= nil and s:find(pat, 1, true) ~= nil end
local function count(s, pat)
  local n, at = 0, 1
  while true do
    local i = s:find(pat, at, true)
    if not i then return n end
    n, at = n + 1, i + #pat
  end
end

-- ===== a strict well-formedness checker (XML 1.0, as XHTML needs) =====

local ENTITIES = {amp = true, lt = true, gt = true, quot = true, apos = true}

-- Text between tags: every '&' starts a valid reference; no '<'.
local function check_text(s, where)
  if s:find("<", 1, true) then return "'<' in text at " .. where end
  for ref in s:gmatch("&([^;]*);?") do
    local ok = ENTITIES[ref] or ref:match("^#%d+$") or ref:match("^#x%x+$")
    if not ok then return "bad entity '&" .. ref .. "' at " .. where end
  end
  if s:find("&[^;]*$") then return "unterminated entity at " .. where end
  if s:find("[%z\1-\8\11\12\14-\31]") then return "control character at " .. where end
  if not utf8.len(s) then return "invalid UTF-8 at " .. where end
  return nil
end

-- Returns nil when doc is well-formed, else what is wrong first; also the
-- list of elements {name = ..., attrs = {...}, text = ...} in document order.
local function xml_check(doc)
  local stack, elements, pos, roots = {}, {}, 1, 0
  local function fail(msg) return msg .. " (byte " .. pos .. ")" end
  local prolog = doc:match("^<!DOCTYPE html>\n()")
  if not prolog then return fail("no <!DOCTYPE html> first") end
  pos = prolog
  while pos <= #doc do
    local lt = doc:find("<", pos, true)
    local text = doc:sub(pos, (lt or #doc + 1) - 1)
    local err = check_text(text, pos)
    if err then return fail(err) end
    if #stack == 0 and text:find("%S") then return fail("text outside the root element") end
    if #stack > 0 then stack[#stack].text[#stack[#stack].text + 1] = text end
    if not lt then break end
    pos = lt
    if doc:sub(pos, pos + 3) == "<!--" then
      local e = doc:find("-->", pos + 4, true)
      if not e then return fail("unclosed comment") end
      pos = e + 3
    elseif doc:sub(pos, pos + 8) == "<![CDATA[" then
      local e = doc:find("]]>", pos, true)
      if not e then return fail("unclosed CDATA") end
      pos = e + 3
    elseif doc:sub(pos, pos + 1) == "</" then
      local name, e = doc:match("^</([%w:%-]+)%s*>()", pos)
      if not name then return fail("malformed end tag") end
      local top = table.remove(stack)
      if not top or top.name ~= name then
        return fail("</" .. name .. "> closes <" .. (top and top.name or "nothing") .. ">")
      end
      top.text = table.concat(top.text)
      pos = e
    elseif doc:sub(pos, pos + 1) == "<!" or doc:sub(pos, pos + 1) == "<?" then
      return fail("declaration or processing instruction inside the document")
    else
      local name, p = doc:match("^<([%a][%w:%-]*)()", pos)
      if not name then return fail("malformed start tag") end
      local el = {name = name, attrs = {}, text = {}}
      while true do
        local ws, after = doc:match("^(%s*)()", p)
        p = after
        local close = doc:match("^/?>", p)
        if close then
          p = p + #close
          if close == "/>" then el.text = "" else stack[#stack + 1] = el end
          break
        end
        if #ws == 0 then return fail("attributes of <" .. name .. "> not separated") end
        local an, q, after2 = doc:match("^([%a_:][%w_:%-%.]*)=([\"'])()", p)
        if not an then return fail("unquoted or malformed attribute in <" .. name .. ">") end
        local e = doc:find(q, after2, true)
        if not e then return fail("unterminated attribute value") end
        local v = doc:sub(after2, e - 1)
        local verr = check_text(v, after2)
        if verr then return fail("attribute " .. an .. ": " .. verr) end
        if el.attrs[an] then return fail("duplicate attribute " .. an) end
        el.attrs[an] = v
        p = e + 1
      end
      if #stack == 0 or (#stack == 1 and stack[1] == el) then roots = roots + 1 end
      elements[#elements + 1] = el
      pos = p
    end
  end
  if #stack > 0 then return fail("<" .. stack[#stack].name .. "> never closed") end
  if roots ~= 1 then return fail(roots .. " root elements") end
  return nil, elements
end

-- The checker itself must catch what it is for.
check("checker: accepts a small page", xml_check('<!DOCTYPE html>\n<html><p a="1">x &amp; y</p><br/></html>\n') == nil)
check("checker: unclosed tag", xml_check("<!DOCTYPE html>\n<html><p>x</html>") ~= nil)
check("checker: crossed tags", xml_check("<!DOCTYPE html>\n<html><b><i>x</b></i></html>") ~= nil)
check("checker: unquoted attribute", xml_check("<!DOCTYPE html>\n<html><p a=1>x</p></html>") ~= nil)
check("checker: bad entity", xml_check("<!DOCTYPE html>\n<html>&nbsp;</html>") ~= nil)
check("checker: bare ampersand", xml_check("<!DOCTYPE html>\n<html>a & b</html>") ~= nil)
check("checker: '<' in an attribute", xml_check('<!DOCTYPE html>\n<html><p a="<">x</p></html>') ~= nil)
check("checker: two roots", xml_check("<!DOCTYPE html>\n<html></html><html></html>") ~= nil)

local function b64decode(s)
  local A = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
  local out, bits, nbits = {}, 0, 0
  for c in s:gmatch("[^=]") do
    local v = A:find(c, 1, true)
    if not v then return nil end
    bits, nbits = (bits << 6) | (v - 1), nbits + 6
    if nbits >= 8 then
      nbits = nbits - 8
      out[#out + 1] = string.char((bits >> nbits) & 0xff)
    end
  end
  return table.concat(out)
end

local function by_class(elements, name, class)
  local r = {}
  for _, e in ipairs(elements) do
    if e.name == name and (not class or (" " .. (e.attrs.class or "") .. " "):find(" " .. class .. " ", 1, true)) then
      r[#r + 1] = e
    end
  end
  return r
end

-- ===== a small script that runs to the end =====

local small = write("small.lua", [[
-- A small lesson: <script>alert("title")</script>
print("The <script>alert('x')</script> & \"friends\" narrative")
tt.trace.section("Scores <b>bold</b>")
local q = tt.randn(2, 3):named("N", "D"):label("<script>q</script>")
local s = q:matmul(q:mT()):label("scores")
tt.heatmap(s, "]] .. dir .. [[/scores.png", {title = "Scores <i>&</i>"})
io.write("written ", 42, " ", 1.5, "\n")
tt.assert_close(s, s:mT())
tt.trace.section("Views")
local t = q:transpose(1, 2):contiguous()
print("the end")
]])
local html_path = dir .. "/small.html"
local out, err, code = run("--report " .. html_path .. " " .. small)
local plain = run(small)
check("report run exits 0: " .. err, code == 0)
check("stdout still gets the normal trace", out == plain and has(out, "matmul"))
local f = io.open(html_path)
check("the report file is written", f ~= nil)
local html = f and f:read("a") or ""
if f then f:close() end
local bad, els = xml_check(html)
check("the page is well-formed XML: " .. tostring(bad), bad == nil)
els = els or {}
check("no temporary file left beside it", io.popen("ls -A " .. dir):read("a"):find("small.html.", 1, true) == nil)

-- escaping: the only <script> element is the page's own
check("one <script> element (the page's own)", count(html, "<script") == 1)
check("labels escaped", has(html, "&lt;script&gt;q&lt;/script&gt;"))
check("printed text escaped", has(html, "The &lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;friends&quot; narrative"))
check("section title escaped", has(html, "Scores &lt;b&gt;bold&lt;/b&gt;"))
check("no reference to the network", not html:find("https?://"))
check("no external file: no src/href but data: and #anchors", (function()
  for _, e in ipairs(els) do
    for _, a in ipairs{"src", "href"} do
      local v = e.attrs[a]
      if v and not (v:match("^data:") or v:match("^#")) then return false end
    end
    if e.name == "link" then return false end
  end
  return true
end)())

-- header: title from the first comment line, command, seed, date
local h1 = by_class(els, "h1")[1]
check("title from the first comment line", h1 and h1.text:find("A small lesson: &lt;script&gt;", 1, true) == 1)
check("header shows the command", has(html, "--report " .. html_path))
check("header shows the seed", html:find("<dt>seed</dt><dd>7</dd>", 1, true) ~= nil)
local date = html:match("<dt>date</dt><dd>(.-)</dd>")
check("header shows a date", date and date:match("^%d%d%d%d%-%d%d%-%d%d"))
check("result: ran to the end, 1 check", has(html, "ran to the end") and has(html, "1 check passed"))

-- table of contents from tt.trace.section, linking to the headings
local toc = by_class(els, "nav", "toc")[1]
check("table of contents", toc ~= nil)
local links = {}
for _, e in ipairs(els) do if e.name == "a" and e.attrs.href then links[#links + 1] = e.attrs.href end end
check("toc: one link a section, in order", #links == 2 and links[1] == "#s1" and links[2] == "#s2")
local ids = {}
for _, e in ipairs(els) do if e.attrs.id then ids[e.attrs.id] = e end end
check("toc links reach their headings", ids.s1 and ids.s1.name == "h2" and ids.s2 and ids.s2.text == "Views")

-- trace groups: collapsible, header with file:line and source, styled fields
local groups = by_class(els, "details", "g")
check("each traced line is a <details> group", #groups == 4)
check("group header has file:line and source",
      html:find('<span class="loc">' .. small:gsub("%p", "%%%0") .. ':5</span><code class="src">local s = q:matmul%(q:mT%(%)%)') ~= nil)
check("dim names styled", has(html, '<span class="dn">N</span>=2'))
check("labels styled", has(html, '<span class="lbl">scores</span>'))
check("views marked", has(html, '<span class="mark view">view</span>'))
check("copies marked", has(html, '<span class="mark copy">copy</span>'))
check("FLOPs shown", has(html, '<span class="flops">24 FLOP</span>'))
check("passing check styled with ✓", has(html, '<div class="row check pass">✓ checked'))
check("io.write text as io.write writes it", has(html, "written 42 1.5\n"))

-- narrative, groups and figure in the order they happened
local p_say = html:find("friends", 1, true)
local p_group = html:find('class="loc"', 1, true)
local p_fig = html:find("<figure", 1, true)
local p_write = html:find("written 42", 1, true)
local p_end = html:find("\nthe end\n", 1, true)
check("order: print, trace, figure, io.write, print",
      p_say and p_group and p_fig and p_write and p_end and p_say < p_group and p_group < p_fig and p_fig < p_write and p_write < p_end)

-- the figure: embedded PNG with its title
local img = by_class(els, "img")[1]
local data = img and img.attrs.src:match("^data:image/png;base64,(.*)$")
local png = data and b64decode(data)
check("figure embedded as a PNG data URI", png and png:sub(1, 8) == "\137PNG\r\n\26\n")
local disk = T.slurp(dir .. "/scores.png")
check("the embedded bytes are the file's", png == disk)
check("figure caption is its title", has(html, "<figcaption>Scores &lt;i&gt;&amp;&lt;/i&gt;"))

-- TT_REPORT_DATE pins the one changing field: two runs give the same page
local p1, p2 = dir .. "/d1.html", dir .. "/d2.html"
T.run(dir, "--report " .. p1 .. " " .. small)
T.run(dir, "--report " .. p2 .. " " .. small)
os.execute("TT_REPORT_DATE=2025-01-02 ./tensortrace -q --report " .. p1 .. " " .. small .. " >/dev/null 2>&1")
os.execute("TT_REPORT_DATE=2025-01-02 ./tensortrace -q --report " .. p2 .. " " .. small .. " >/dev/null 2>&1")
local d1, d2 = T.slurp(p1), T.slurp(p2)
check("TT_REPORT_DATE pins the date", has(d1, "<dd>2025-01-02</dd>"))
check("same run, same page (but the command line)", d1:gsub("d1%.html", "X") == d2:gsub("d2%.html", "X"))
check("-q: narrative and figure, no trace rows", has(d1, "the end") and has(d1, "<figure") and not has(d1, 'class="row"'))

-- --trace=values: the summaries, compactly
local vpath = dir .. "/values.html"
T.run(dir, "--trace=values --report " .. vpath .. " " .. small)
local vhtml = T.slurp(vpath)
check("values: well-formed", xml_check(vhtml) == nil)
check("values: summaries shown without the terminal's indent", vhtml:find('<pre class="vals">\nmin ', 1, true) ~= nil)

-- ===== a script that stops half-way =====

local broken = write("broken.lua", [[
print("first part")
local q = tt.randn(5, 64):label("q")
local k = tt.randn(5, 64):label("k")
tt.heatmap(q:narrow(2, 1, 5), "]] .. dir .. [[/q.png")
print("about to fail <here>")
local s = q:matmul(k)
print("never printed")
]])
local bpath = dir .. "/broken.html"
out, err, code = T.run(dir, "--report " .. bpath .. " " .. broken)
check("error: exit status 1", code == 1)
check("error: stderr as without --report", has(err, "matmul: inner sizes differ"))
local bhtml = T.slurp(bpath)
local bbad, bels = xml_check(bhtml)
check("error page is well-formed XML: " .. tostring(bbad), bbad == nil)
bels = bels or {}
check("error page keeps everything before the error", has(bhtml, "first part") and has(bhtml, "about to fail &lt;here&gt;")
      and has(bhtml, '<span class="lbl">k</span>') and has(bhtml, "data:image/png;base64,"))
check("error page has nothing after it", not has(bhtml, "never printed"))
local box = by_class(bels, "section", "error")[1]
check("error box", box ~= nil)
check("error message", has(bhtml, "broken.lua:6: matmul: inner sizes differ: [5,64] @ [5,64] (64 vs 5)"))
check("error line and its source", has(bhtml, 'broken.lua:6 <code>local s = q:matmul(k)</code>'))
check("error traceback", has(bhtml, "stack traceback</summary><pre tabindex=\"0\"") and has(bhtml, "in main chunk"))
check("header says it stopped", has(bhtml, "stopped with an error at") and not has(bhtml, "ran to the end"))
local bimg = by_class(bels, "img")[1]
local bpng = bimg and b64decode(bimg.attrs.src:match("base64,(.*)$") or "")
check("error page: figure decodes to a PNG", bpng and bpng:sub(1, 8) == "\137PNG\r\n\26\n")

-- a limit (the instruction budget) is an error like any other
local loop = write("loop.lua", 'print("spinning")\nwhile true do end\n')
local lpath = dir .. "/loop.html"
out, err, code = T.run(dir, "--max-instructions 1e6 --report " .. lpath .. " " .. loop)
local lhtml = T.slurp(lpath)
check("limit: page written with the narrative and the limit's error",
      code == 1 and has(lhtml, "spinning") and has(lhtml, "instruction limit") and xml_check(lhtml) == nil)

-- os.exit ends the process inside the script: the page is still written
local quit = write("quit.lua", 'print("bye")\nos.exit(0)\n')
local qpath = dir .. "/quit.html"
out, err, code = T.run(dir, "--report " .. qpath .. " " .. quit)
local qf = io.open(qpath)
local qhtml = qf and qf:read("a") or ""
if qf then qf:close() end
check("os.exit: page written", code == 0 and has(qhtml, "bye") and has(qhtml, "ended by os.exit") and xml_check(qhtml) == nil)

-- bad bytes in printed text stay well-formed
local bytes = write("bytes.lua", 'print("bad \\xff\\xfe utf8, ctrl \\x01\\x1b[31m, ok é")\n')
local ypath = dir .. "/bytes.html"
T.run(dir, "--report " .. ypath .. " " .. bytes)
local yhtml = T.slurp(ypath)
check("invalid UTF-8 and control characters replaced", xml_check(yhtml) == nil and has(yhtml, "ok é")
      and has(yhtml, "bad \u{FFFD}\u{FFFD} utf8"))

-- a warning and a call site: the group opens with its note, under the
-- line inside the function and the line that called it
local warn = write("warn.lua", [[
local function attend(q, k, v, mask)
  return tt.sdpa(q, k, v, {mask = mask})
end
local q = tt.randn(1, 2, 3, 4)
local mask = tt.tensor({{true, true, true}, {false, false, false}, {true, false, true}}, "bool")
local out = attend(q, q, q, mask)
]])
local wpath = dir .. "/warn.html"
out = T.run(dir, "--report " .. wpath .. " " .. warn)
local whtml = T.slurp(wpath)
check("warning: row and note styled", has(whtml, '<div class="row warn"><span class="op">sdpa</span>')
      and has(whtml, '<span class="note">⚠ 2 query rows with no visible key'))
check("warning: its group marked, badge and header count", has(whtml, '<details class="g warn" open="open">')
      and has(whtml, '<span class="b w">⚠ 1</span>') and has(whtml, "1 warning"))
check("call site after file:line, before the source, as in the text trace",
      has(whtml, 'warn.lua:2</span><span class="via">← line 6</span><code class="src">return tt.sdpa'))

-- a syntax error: the page says so
local syn = write("syntax.lua", 'print("ok")\nlocal = 3\n')
local xpath = dir .. "/syntax.html"
out, err, code = T.run(dir, "--report " .. xpath .. " " .. syn)
local xhtml = T.slurp(xpath)
check("syntax error: page with the message", code == 1 and has(xhtml, "syntax.lua:2:") and xml_check(xhtml) == nil)

-- -e: a chunk has a page too
local epath = dir .. "/chunk.html"
out, err, code = T.run(dir, "--report " .. epath .. " -e 'print(tt.ones(2):sum():item())'")
local ehtml = T.slurp(epath)
check("-e: page with the chunk's output", code == 0 and has(ehtml, "2.0") and xml_check(ehtml) == nil)

-- a run that prints more than the page holds: cut, said, still well-formed
local flood = write("flood.lua", [[
for i = 1, 36000 do print(string.rep("x", 999)) end
print("last line")
error("after the flood")
]])
local fpath = dir .. "/flood.html"
out, err, code = T.run(dir, "-q --report " .. fpath .. " " .. flood)
local fhtml = T.slurp(fpath)
check("a flood: stdout keeps all of it", has(out, "last line"))
check("a flood: the page is cut at 32 MiB and says so", #fhtml < 33 * 2^20 and has(fhtml, "The page stops here")
      and not has(fhtml, "last line"))
check("a flood: the error is still there", has(fhtml, "after the flood") and xml_check(fhtml) == nil)

-- ===== usage errors: detected before the script runs =====

local marker = dir .. "/ran"
local side = write("side.lua", 'local f = io.open("' .. marker .. '", "w") f:write("x") f:close()\n')
out, err, code = T.run(dir, "--report " .. dir .. "/no/such/folder/r.html " .. side)
check("unwritable path: exit 2", code == 2)
check("unwritable path: message names it", has(err, "cannot write the report '" .. dir .. "/no/such/folder/r.html'")
      and has(err, "No such file or directory"))
check("unwritable path: the script never ran", io.open(marker) == nil)
out, err, code = T.run(dir, "--report " .. dir .. " " .. side)
check("a folder as the report: exit 2", code == 2 and has(err, "it is a folder"))
out, err, code = T.run(dir, "--report")
check("--report without a file: exit 2", code == 2 and has(err, "'--report' needs a file name"))
out, err, code = T.run(dir, "--report " .. dir .. "/x.html")
check("--report without a script: exit 2", code == 2 and has(err, "needs a script"))
check("--help lists --report", has(T.run(dir, "--help"), "--report FILE.html"))

-- --sandbox: the report path is the command line's, not the script's
os.execute("mkdir -p " .. dir .. "/sbx/images")
local sbx = T.write(dir .. "/sbx", "s.lua", 'print("sandboxed")\ntt.heatmap(tt.eye(3), "' .. dir .. '/sbx/images/e.png")\n')
local spath = dir .. "/outside.html"
out, err, code = T.run(dir, "--sandbox --images " .. dir .. "/sbx/images --report " .. spath .. " " .. sbx)
local sf = io.open(spath)
check("sandbox: report written outside --images: " .. err, code == 0 and sf ~= nil)
if sf then
  local s = sf:read("a")
  sf:close()
  check("sandbox: figure embedded", has(s, "sandboxed") and has(s, "data:image/png;base64,"))
end

-- ===== every lesson's page, as make report makes it =====
-- run in a folder of their own (the lessons write into images/ there), each
-- page is well-formed, fetches nothing, and ran its lesson to the end
do
  local root = dir .. "/lessons_run"
  os.execute("mkdir -p '" .. root .. "/images' && ln -s '" .. os.getenv("PWD") .. "/lessons' '" .. root .. "/lessons'")
  local exe = os.getenv("PWD") .. "/tensortrace"
  local p = io.popen("ls lessons/*.lua")
  for lesson in p:lines() do
    local page = root .. "/" .. lesson:match("([^/]+)%.lua$") .. ".html"
    local ok = os.execute("cd '" .. root .. "' && TT_REPORT_DATE=2026-01-01 '" .. exe .. "' -q --report '" .. page
                          .. "' " .. lesson .. " >/dev/null 2>&1")
    local doc = T.slurp(page) or ""
    local bad = xml_check(doc)
    check(lesson .. ": the report is well-formed" .. (bad and (": " .. bad) or ""), ok and doc ~= "" and bad == nil)
    check(lesson .. ": ran to the end, fetches nothing", has(doc, "ran to the end")
          and not doc:find("https?://") and not doc:find('src="[^d#]'))
  end
  p:close()
end

-- a backward row: "grad <op>" in the op's place, the gradients after it
local bw = write("bw.lua", [[
local x = tt.ones(2, 3):requires_grad_():label("x")
local loss = x:softmax(2):sum()
loss:backward()
]])
local bw_html = dir .. "/bw.html"
run("--report " .. bw_html .. " " .. bw)
local page = T.slurp(bw_html) or ""
check("report: a backward row names its op as the trace does",
      has(page, '<span class="op">grad softmax</span> grad[2,3] -&gt; grad of x[2,3]'))
check("report: the backward page is well-formed XML", xml_check(page) == nil)

-- an inline SVG: its own ids and url(#...) get the figure's number, a
-- label's text stays as written, and a megabyte of "url(#" in labels is
-- one pass (a strstr per match from each match took minutes: fuzz_writers)
local svg_lua = write("svg.lua", [[
local title = string.rep("url(#a ", 150000)
tt.bars(tt.tensor{1, 2, 3}, "]] .. dir .. [[/b1.svg", {title = "see url(#x) in the text"})
tt.bars(tt.tensor{1, 2, 3}, "]] .. dir .. [[/b2.svg", {title = title})
]])
local svg_html = dir .. "/svg.html"
local _, svg_err, svg_code, svg_secs = run("--report " .. svg_html .. " " .. svg_lua)
local svg_page = T.slurp(svg_html) or ""
check("report: the SVG figures run: " .. svg_err, svg_code == 0)
check("report: a label's url(# text is not rewritten", has(svg_page, ">see url(#x) in the text<"))
check("report: a megabyte of url(# in labels takes under 20 s (" .. string.format("%.1f", svg_secs) .. " s)",
      svg_secs < 20)
check("report: the SVG page is well-formed XML", xml_check(svg_page) == nil)

-- ===== The page's limits (issue 31): one entry of any size is cut where
-- the page's cap is, visibly; the page counts against --max-memory, and
-- under --sandbox against --max-write =====
local sbx = dir .. "/sbx"
assert(os.execute("mkdir -p " .. sbx .. "/images"))
local quotes = T.write(sbx, "q.lua", [[
local s = string.rep("'", 4e7)     -- escaped five times over: 200 MB of page
tt.trace.section(s)
print(s)
local f = io.open("/proc/self/status")
local hwm = f and f:read("a"):match("VmHWM:%s*(%d+)")
if f then f:close() end
io.stderr:write("HWM ", hwm or "?", "\n")
]])
local out, err, code = T.run(sbx, "--max-memory 100M --report " .. sbx .. "/images/q.html " .. quotes)
local qhtml = T.slurp(sbx .. "/images/q.html") or ""
local hwm = tonumber(err:match("HWM (%d+)"))
check("one huge entry: exit 0", code == 0)
check("one huge entry: the page stays within its cap (" .. #qhtml .. " bytes)",
      #qhtml > 0 and #qhtml <= 32 * 2^20 + 128 * 2^10)
check("one huge entry: the title is cut, saying how much (1024 bytes kept of 4e7)",
      has(qhtml, "(cut: 39999805 bytes)"))
check("one huge entry: the printed text is cut where the page ends, saying so",
      qhtml:find("%(cut: %d+ bytes%)") ~= nil and has(qhtml, "The page stops here: it reached its cap"))
check("one huge entry: the page is well-formed", xml_check(qhtml) == nil)
check("one huge entry: the process stays near the cap (peak " .. tostring(hwm) .. " KB; 470 MB before)",
      hwm ~= nil and hwm < 200 * 1024)
-- the page's memory counts: a 30 MB narrative leaves no room under a 48M
-- cap for a 20 MB tensor (without the report it fits: Lua's 10 MB
-- string counts in Lua's own share)
local held = T.write(sbx, "held.lua", [[
local s = string.rep("x", 10 * 2^20)
for _ = 1, 3 do print(s) end
local ok, e = pcall(tt.zeros, 5 * 2^20)
io.stderr:write(ok and "ALLOCATED" or e, "\n")
]])
out, err = T.run(sbx, "--max-memory 48M --report " .. sbx .. "/images/held.html " .. held)
check("the page's memory counts against --max-memory", has(err, "the memory cap is 48.0 MiB"))
out, err = T.run(sbx, "--max-memory 48M " .. held)
check("... (without --report the tensor fits)", has(err, "ALLOCATED"))
-- --max-write: the page is a write of the run (it wrote 225 MB past 1M)
out, err, code = T.run(sbx, "--sandbox --images " .. sbx .. "/images --max-memory 100M --max-write 1M --report " .. sbx .. "/images/w.html " .. quotes)
local whtml = T.slurp(sbx .. "/images/w.html") or ""
check("--max-write 1M: the page stays under it (" .. #whtml .. " bytes)", #whtml > 0 and #whtml <= 2^20)
check("--max-write 1M: the cut is visible", qhtml:find("%(cut: %d+ bytes%)") ~= nil
      and has(whtml, "The page stops here"))
check("--max-write 1M: well-formed", xml_check(whtml) == nil)
-- the body fitted while it grew; a write after it left too little room
local fill = T.write(sbx, "fill.lua", [[
print(string.rep("x", 100000))
local f = io.open("]] .. sbx .. [[/images/blob", "w"); f:write(string.rep("b", 1000 * 1000 - 20000)); f:close()
]])
out, err, code = T.run(sbx, "--sandbox --images " .. sbx .. "/images --max-write 1000K --report " .. sbx .. "/images/f.html " .. fill)
local fhtml2 = T.slurp(sbx .. "/images/f.html") or ""
check("--max-write nearly used: the page without its body (" .. #fhtml2 .. " bytes)",
      #fhtml2 > 0 and #fhtml2 <= 1000 * 1024 - (1000 * 1000 - 20000) and has(fhtml2, "body is left out")
      and xml_check(fhtml2) == nil)
local full = T.write(sbx, "full.lua", [[
local f = io.open("]] .. sbx .. [[/images/blob", "w"); f:write(string.rep("b", 1000 * 1024 - 10)); f:close()
]])
out, err, code = T.run(sbx, "--sandbox --images " .. sbx .. "/images --max-write 1000K --report " .. sbx .. "/images/g.html " .. full)
check("--max-write used up: no page, and the reason", io.open(sbx .. "/images/g.html") == nil
      and has(err, "cannot write the report '" .. sbx .. "/images/g.html': even without its body")
      and has(err, "would pass --max-write"))

os.execute("rm -rf '" .. dir .. "'")
T.report()
