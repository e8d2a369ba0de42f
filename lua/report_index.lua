-- report_index.lua — the index of `make report`: one link a lesson, in the
-- order of the README's lesson table, each with the table's one-line
-- description. Usage: tensortrace -q lua/report_index.lua README.md DIR
-- (DIR holds NN_name.html from tensortrace --report; writes DIR/index.html).
local readme, dir = arg[1], arg[2]
assert(readme and dir, "usage: tensortrace -q lua/report_index.lua README.md DIR")

local function esc(s)
  return (s:gsub("[&<>\"']", {["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;", ["'"] = "&#39;"}))
end
-- Markdown's `code` as <code>, everything else as text.
local function inline(s)
  return (esc(s):gsub("`([^`]+)`", "<code>%1</code>"))
end

local rows = {}
for line in io.lines(readme) do
  local name, path, what = line:match("^|%s*%[([%w_]+)%]%(([^)]+)%)%s*|%s*([^|]-)%s*|")
  if name and path:match("^lessons/") then rows[#rows + 1] = {name = name, what = what} end
end
assert(#rows > 0, readme .. ": no lesson table (| [NN_name](lessons/NN_name.lua) | description | ...)")

local out = {[[
<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8"/>
<meta name="viewport" content="width=device-width, initial-scale=1"/>
<title>tensortrace lessons</title>
<style>
body{margin:0;background:#eef1f4;color:#1f2328;font:16px/1.5 system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif}
.page{max-width:860px;margin:0 auto;background:#fff;padding:28px 40px 40px;min-height:100vh}
h1{font-size:30px;margin:0 0 4px}
p.lead{color:#59636e;margin:0 0 20px}
ol{list-style:none;padding:0;margin:0}
li{border:1px solid #d1d9e0;border-radius:8px;margin:10px 0;padding:10px 14px}
li a{font:600 16px ui-monospace,'DejaVu Sans Mono',Menlo,Consolas,monospace;color:#0969da;text-decoration:none}
li a:hover{text-decoration:underline}
li p{margin:4px 0 0;color:#3d444d;overflow-wrap:anywhere}
code{font:14px ui-monospace,'DejaVu Sans Mono',Menlo,Consolas,monospace;background:#f6f8fa;padding:0 4px;border-radius:4px}
@media (max-width:640px){.page{padding:14px 12px}h1{font-size:24px}}
</style>
</head>
<body>
<div class="page">
<h1>tensortrace lessons</h1>
<p class="lead">Self-attention step by step: each page is one lesson as it ran, with its narrative,
every traced shape, its checks and its figures.</p>
<ol>
]]}
for _, r in ipairs(rows) do
  out[#out + 1] = string.format('<li><a href="%s.html">%s</a><p>%s</p></li>\n', esc(r.name), esc(r.name), inline(r.what))
end
out[#out + 1] = "</ol>\n</div>\n</body>\n</html>\n"

local path = dir .. "/index.html"
local f = assert(io.open(path .. ".tmp", "w"))
f:write(table.concat(out))
assert(f:close())
assert(os.rename(path .. ".tmp", path))
print(path .. ": " .. #rows .. " lessons")
