-- test_sandbox.lua — --sandbox: each escape hatch gives an error and
-- nothing escapes (.., absolute paths, symlinks out of the folders), writes
-- land only under --images, reads only under the script's folder, and the
-- memory cap and timeout are on by default. Runs ./tensortrace --sandbox on
-- scripts in a temporary tree:
--   root/outside/secret.txt          a file the script must not read or write
--   root/class/script.lua            the sandboxed scripts (read root)
--   root/class/lib/mod.lua           a Lua module it may require
--   root/class/images/               the --images folder
--   root/class/images/link -> ../../outside/secret.txt
--   root/class/images/out  -> ../../outside
--   root/class/up -> ..
local T = dofile("tests/lua/check.lua")
local check = T.check

local root = os.tmpname()
os.remove(root)
local class, outside = root .. "/class", root .. "/outside"
assert(os.execute("mkdir -p " .. class .. "/images " .. class .. "/lib " .. outside))

local function write(path, text)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
  return path
end
local function slurp(p) local f = io.open(p); if not f then return nil end local s = f:read("a"); f:close(); return s end
local function exists(p) local f = io.open(p); if f then f:close() end return f ~= nil end

write(outside .. "/secret.txt", "secret\n")
write(class .. "/lib/mod.lua", "return {answer = 42}\n")
write(class .. "/data.txt", "hello\n")
write(class .. "/binary.luac", string.dump(function() return 1 end))
write(class .. "/lib/binmod.lua", string.dump(function() return 1 end))
assert(os.execute("ln -s ../../outside/secret.txt " .. class .. "/images/link"))
assert(os.execute("ln -s ../../outside " .. class .. "/images/out"))
assert(os.execute("ln -s .. " .. class .. "/up"))
local repo = io.popen("pwd"):read("l")
local bin = repo .. "/tensortrace"

-- os.getenv: every variable unset but tensortrace's own (TT_*)
write(class .. "/env.lua", 'print(os.getenv("HOME"), os.getenv("TT_TRACE_NO_TIMES"), os.getenv("TT_X_UNSET"))\n')
local env_out = io.popen("cd " .. class .. " && HOME=/root TT_TRACE_NO_TIMES=1 " .. bin
                         .. " -q --sandbox env.lua 2>&1"):read("a")
check("sandboxed os.getenv hides HOME, shows TT_TRACE_NO_TIMES: " .. env_out, env_out == "nil\t1\tnil\n")

-- Runs a script in class/ with --sandbox (from class/, so images/ is the
-- default --images); returns stdout, stderr, exit code.
local function run(text, opts)
  local script = write(class .. "/script.lua", text)
  local out, err = root .. "/out", root .. "/err"
  local cmd = string.format("cd %s && %s -q --sandbox %s %s >%s 2>%s </dev/null", class, bin, opts or "",
                            script, out, err)
  local _, _, code = os.execute(cmd)
  return slurp(out), slurp(err), code
end

local has = function(s, pat) return s ~= nil and s:find(pat, 1, true) ~= nil end

-- Each line "name|ok|message" of a script that pcalls every attempt.
local probes = [[
local function try(name, f, ...)
  local ok, a, b = pcall(f, ...)
  if ok and a == nil and b then ok, a = false, b end   -- io.open style failure
  print(name .. "|" .. tostring(ok) .. "|" .. tostring(a):gsub("\n", " "))
end
local OUT = "]] .. outside .. [["
try("os.execute", os.execute, "touch " .. OUT .. "/x")
try("io.popen", io.popen, "ls")
try("package.loadlib", package.loadlib, "libc.so.6", "*")
try("os.tmpname", os.tmpname)
try("io.tmpfile", io.tmpfile)
try("debug.sethook", function() return debug.sethook(print, "l") end)
try("debug.getupvalue", function() return debug.getupvalue(io.open, 1) end)
try("getenv", function() return os.getenv("HOME") == nil end)
try("load binary", load, string.dump(function() return 1 end))
try("load binary mode b", load, string.dump(function() return 1 end), "x", "b")
try("load text", function() return load("return 7")() end)
try("loadfile binary", loadfile, "binary.luac")
try("dofile outside", dofile, OUT .. "/secret.txt")
try("loadfile outside", loadfile, OUT .. "/secret.txt")
try("loadfile dotdot", loadfile, "../outside/secret.txt")
try("read absolute", io.open, OUT .. "/secret.txt")
try("read dotdot", io.open, "../outside/secret.txt")
try("read via dir symlink", io.open, "up/outside/secret.txt")
try("read via file symlink", io.open, "images/link")
try("read /etc/passwd", io.open, "/etc/passwd")
try("read inside", function() return io.open("data.txt"):read("l") end)
try("read inside via ./", function() return io.open("./lib/../data.txt"):read("l") end)
try("io.lines outside", io.lines, OUT .. "/secret.txt")
try("io.input outside", io.input, OUT .. "/secret.txt")
try("write outside", io.open, OUT .. "/new.txt", "w")
try("append outside", io.open, OUT .. "/secret.txt", "a")
try("read-write outside", io.open, OUT .. "/secret.txt", "r+")
try("write script folder", io.open, "new.txt", "w")
try("write images/..", io.open, "images/../new.txt", "w")
try("write via symlink file", io.open, "images/link", "w")
try("write via symlink dir", io.open, "images/out/new.txt", "w")
try("write missing folder", io.open, "images/nope/x.txt", "w")
try("write images", function() local f = io.open("images/ok.txt", "w"); f:write("ok"); f:close(); return true end)
try("io.output outside", io.output, OUT .. "/new.txt")
try("io.output number name", io.output, 123)
try("io.lines number name", io.lines, 123)
try("os.remove outside", os.remove, OUT .. "/secret.txt")
try("os.rename out of images", os.rename, "images/ok.txt", OUT .. "/moved.txt")
try("os.rename into images", os.rename, OUT .. "/secret.txt", "images/stolen.txt")
try("require lua module", function() return require("lib.mod").answer end)
try("require C module", function() package.cpath = "/usr/lib/x86_64-linux-gnu/lua/5.4/?.so;" .. package.cpath; return require "lpeg" end)
try("require via path outside", function() package.path = OUT .. "/?.txt;" .. package.path; return require "secret" end)
if tt.heatmap then
  try("heatmap outside", tt.heatmap, tt.ones(2, 2), OUT .. "/h.png")
  try("heatmap via symlink dir", tt.heatmap, tt.ones(2, 2), "images/out/h.png")
  try("heatmap images", tt.heatmap, tt.ones(2, 2), "images/h.png")
  try("heatmap number name", tt.heatmap, tt.ones(2, 2), 123)
  try("bars outside", tt.bars, tt.ones(3), OUT .. "/b.png")
  try("flow outside", tt.flow, OUT .. "/f.png")
end
try("memory cap on", tt.zeros, 1 << 29)
-- the real load must be out of reach: no debug but traceback
for _, f in ipairs{"getinfo", "getlocal", "getupvalue", "getregistry", "getmetatable", "upvalueid", "setupvalue"} do
  try("no debug." .. f, debug[f], 1)
end
try("debug.traceback", function() return type(debug.traceback("x")) end)
try("load reader: stack", function()
  local got
  local once = false
  local f, msg = load(function() if once then return nil end once = true got = debug.getinfo(2, "f").func return "return 1" end)
  return got == nil and not f and msg
end)
try("load reader text", function()
  local parts = {"return ", "5"}
  return load(function() return table.remove(parts, 1) end)()
end)
try("load env", function() return load("return x", "n", "t", {x = 3})() end)
try("load mode b of text", function() return load("return 8", "n", "b")() end)
try("load dump via reader", function()
  local s = string.dump(function() return 1 end)
  return load(function() local r = s s = nil return r end)
end)
try("require binary module", function() return require("lib.binmod") end)
try("dofile binary", dofile, "binary.luac")
try("open NUL write", io.open, "images/a\0b", "w")
try("open NUL read", io.open, "data.txt\0x")
try("io.output NUL", io.output, "images/o\0p")
try("heatmap NUL", tt.heatmap, tt.ones(2, 2), "images/h\0x.png")
]]

-- files that are not regular files: a FIFO would block its opener until
-- a writer comes (only the watchdog ended it, blaming a finalizer); a
-- folder or device is no file. Refused at once, the kind named; the short
-- --timeout turns the old wait into a failure instead of a hang.
assert(os.execute("mkfifo " .. class .. "/fifo " .. class .. "/images/fifo " .. class .. "/lib/fifomod.lua"))
do
  local o, e, c = run([[
local function try(name, f, ...) print(name .. "|" .. tostring(select(2, pcall(f, ...)))) end
try("open fifo", io.open, "fifo")
try("open fifo rb", io.open, "fifo", "rb")
try("lines fifo", io.lines, "fifo")
try("input fifo", io.input, "fifo")
try("dofile fifo", dofile, "fifo")
try("loadfile fifo", loadfile, "fifo")
try("load fifo", tt.load, "fifo")
try("write fifo", io.open, "images/fifo", "w")
try("append fifo", io.open, "images/fifo", "a")
try("open folder", io.open, "lib")
try("open device", io.open, "/dev/zero")
try("require fifo", require, "lib.fifomod")
print("done")
]], "--timeout 3")
  check("non-regular files: the script ran to its end (exit " .. tostring(c) .. ")", c == 0 and has(o, "done"))
  for _, n in ipairs{"open fifo", "open fifo rb", "lines fifo", "input fifo", "dofile fifo", "loadfile fifo", "load fifo"} do
    check(n .. ": refused", has(o, n .. "|") and has(o:match(n .. "|[^\n]*"),
          "sandbox: cannot read 'fifo': not a regular file (a FIFO); --sandbox reads regular files only"))
  end
  for _, n in ipairs{"write fifo", "append fifo"} do
    check(n .. ": refused", has(o:match(n .. "|[^\n]*"),
          "sandbox: cannot write 'images/fifo': not a regular file (a FIFO); --sandbox writes regular files only"))
  end
  check("open folder: refused", has(o:match("open folder|[^\n]*"), "not a regular file (a folder)"))
  check("open device: refused (outside the folder first)", has(o:match("open device|[^\n]*"), "files may be read only"))
  check("require of a FIFO module: not found, not waited on", has(o:match("require fifo|[^\n]*"), "module 'lib.fifomod' not found"))
end
os.remove(class .. "/fifo")
os.remove(class .. "/images/fifo")
os.remove(class .. "/lib/fifomod.lua")

local out, err, code = run(probes)
check("probe script ran (exit " .. tostring(code) .. ")", code == 0)
local res = {}
for line in (out or ""):gmatch("[^\n]+") do
  local name, ok, msg = line:match("^(.-)|(.-)|(.*)$")
  if name then res[name] = {ok = ok == "true", msg = msg} end
end
if code ~= 0 then print(err) end

local function denied(name, pat)
  local r = res[name]
  check(name .. ": denied" .. (r and (" (" .. r.msg .. ")") or " (no result)"),
        r and not r.ok and (pat == nil or has(r.msg, pat)))
end
local function allowed(name, want)
  local r = res[name]
  check(name .. ": allowed" .. (r and (" (" .. r.msg .. ")") or " (no result)"),
        r and r.ok and (want == nil or r.msg == want))
end

denied("os.execute", "sandbox: 'os.execute' is not available with --sandbox")
denied("io.popen", "sandbox: 'io.popen' is not available with --sandbox")
denied("package.loadlib", "sandbox: 'package.loadlib' is not available")
denied("os.tmpname", "not available")
denied("io.tmpfile", "not available")
denied("debug.sethook", "sandbox: 'debug.sethook' is not available with --sandbox")
denied("debug.getupvalue", "sandbox: 'debug.getupvalue' is not available with --sandbox")
allowed("getenv", "true")
denied("load binary", "attempt to load a binary chunk")
denied("load binary mode b", "attempt to load a binary chunk")
allowed("load text", "7")
denied("loadfile binary", "attempt to load a binary chunk")
for _, n in ipairs{"dofile outside", "loadfile outside", "loadfile dotdot", "read absolute", "read dotdot",
                   "read via dir symlink", "read via file symlink", "read /etc/passwd", "io.lines outside",
                   "io.input outside"} do
  denied(n, "files may be read only under the script's folder")
end
allowed("read inside", "hello")
allowed("read inside via ./", "hello")
for _, n in ipairs{"write outside", "append outside", "read-write outside", "write script folder",
                   "write images/..", "write via symlink dir", "io.output outside", "os.remove outside",
                   "os.rename out of images", "os.rename into images"} do
  denied(n, "files may be written only under 'images' (--images)")
end
denied("io.output number name", "cannot write '123'")
denied("io.lines number name", "'123'")  -- class/123 may be read; it is missing
denied("write via symlink file", "it is a symbolic link")
denied("write missing folder", "sandbox: cannot write 'images/nope/x.txt': its folder does not exist")
allowed("write images", "true")
allowed("require lua module", "42")
denied("require C module", "not found")
denied("require via path outside", "not found")
if res["heatmap outside"] then
  denied("heatmap outside", "files may be written only under 'images'")
  denied("heatmap via symlink dir", "files may be written only under 'images'")
  allowed("heatmap images")
  denied("heatmap number name", "cannot write '123'")
  denied("bars outside", "files may be written only under 'images'")
  denied("flow outside", "files may be written only under 'images'")
end
denied("memory cap on", "the memory cap is 1.0 GiB")
for _, f in ipairs{"getinfo", "getlocal", "getupvalue", "getregistry", "getmetatable", "upvalueid", "setupvalue"} do
  denied("no debug." .. f, "sandbox: 'debug." .. f .. "' is not available with --sandbox")
end
allowed("debug.traceback", "string")
local r = res["load reader: stack"]
check("the reader passed to load cannot reach the real load (" .. (r and r.msg or "no result") .. ")",
      r and r.ok and has(r.msg, "sandbox: 'debug.getinfo' is not available with --sandbox"))
allowed("load reader text", "5")
allowed("load env", "3")
allowed("load mode b of text", "8")
denied("load dump via reader", "attempt to load a binary chunk")
denied("require binary module", "binmod.lua: attempt to load a binary chunk")
denied("dofile binary", "binary.luac: attempt to load a binary chunk (mode is 't'); --sandbox runs Lua source only")
denied("open NUL write", "sandbox: cannot open 'images/a\\0b': the name contains a NUL byte")
denied("open NUL read", "the name contains a NUL byte")
denied("io.output NUL", "the name contains a NUL byte")
denied("heatmap NUL", "path contains a NUL byte")
check("a NUL name created nothing", not exists(class .. "/images/a") and not exists(class .. "/images/o")
      and not exists(class .. "/images/h"))

-- nothing escaped
check("secret.txt untouched", slurp(outside .. "/secret.txt") == "secret\n")
local p = io.popen("ls " .. outside)
local listing = p:read("a")
p:close()
check("nothing new outside (" .. listing:gsub("\n", " ") .. ")", listing == "secret.txt\n")
check("no file in the script folder", not exists(class .. "/new.txt"))
check("the allowed write happened", slurp(class .. "/images/ok.txt") == "ok")

-- an uncaught violation: exit 1 with file:line
out, err, code = run("local x = 1\nos.execute('true')\n")
check("uncaught: exit 1", code == 1)
check("uncaught: file:line and message", has(err, "script.lua:2: sandbox: 'os.execute' is not available with --sandbox"))
out, err, code = run("local f = io.open('" .. outside .. "/secret.txt')\n")
check("uncaught read: file:line", has(err, "script.lua:1: sandbox: cannot read '" .. outside .. "/secret.txt': files may be read only under the script's folder"))

-- a chunk named "@file" must not make the trace print that file's lines
write(class .. "/trace.lua", "local f = load('local x = tt.zeros(2)', '@" .. outside .. "/secret.txt')\nf()\n")
local _, _, c4 = os.execute(string.format("cd %s && %s --sandbox trace.lua >%s/out 2>&1", class, bin, root))
local o4 = slurp(root .. "/out")
check("trace of a chunk named after a file outside: runs", c4 == 0 and has(o4, "zeros"))
check("... but does not print that file", not has(o4, "secret\n") and not o4:find("secret%s*$"))

-- a precompiled main script does not run (a crafted one could crash the VM)
local _, _, cb = os.execute(string.format("cd %s && %s -q --sandbox binary.luac >%s/out 2>%s/err", class, bin, root, root))
check("binary main script: exit 1", cb == 1)
check("... says why", has(slurp(root .. "/err"), "binary.luac: attempt to load a binary chunk (mode is 't'); --sandbox runs Lua source only"))

-- a figure's error keeps the script line under the sandbox
out, err, code = run("local x = 1\ntt.heatmap(tt.zeros(2, 2, 2, 2), 'images/x.png')\n")
check("figure error under --sandbox: file:line", code == 1 and has(err, "script.lua:2: heatmap: expected a 2-D tensor"))

-- ===== the write quota =====
local function count_images()
  local p = io.popen("ls -A " .. class .. "/images | wc -l")
  local n = tonumber(p:read("a"))
  p:close()
  return n
end
local function clean_images() os.execute("rm -f " .. class .. "/images/q*") end
local before = count_images()
out, err, code = run([[
local s = string.rep("x", 100000)
local f = assert(io.open("images/q_big.bin", "w"))
for i = 1, 100 do f:write(s) end
]], "--max-write 1M")
check("--max-write: exit 1", code == 1)
check("... names the cap and the option", has(err, "script.lua:3: sandbox: write quota: writing 97.7 KiB would pass the cap of 1.0 MiB on bytes written") and has(err, "hint: raise it with --max-write SIZE"))
local sz = #(slurp(class .. "/images/q_big.bin") or "")
check("... nothing past the cap was written (" .. sz .. " bytes)", sz <= 1 << 20)
clean_images()

out, err, code = run([[for i = 1, 2000 do local f = assert(io.open("images/q" .. i, "w")) f:write("x") f:close() end]], "--max-files 5")
check("--max-files: exit 1", code == 1 and has(err, "sandbox: file quota: writing 'images/q6' would pass the cap of 5 files written (--max-files); hint: raise it with --max-files N"))
check("... 5 files and no more", count_images() == before + 5)
clean_images()

out, err, code = run([[for i = 1, 20 do local f = assert(io.open("images/q_same", "w")) f:write("x") f:close() end
for i = 1, 3 do tt.heatmap(tt.ones(2, 2), "images/q_same.png") end print("ok")]], "--max-files 2")
check("rewriting the same files counts each once", code == 0 and has(out, "ok"))
clean_images()

out, err, code = run([[for i = 1, 3 do tt.heatmap(tt.ones(2, 2), "images/q" .. i .. ".png") end]], "--max-files 2")
check("figures count as files", code == 1 and has(err, "script.lua:1: sandbox: file quota: writing 'images/q3.png'"))
check("... the figure past the cap is not written", count_images() == before + 2)
clean_images()

out, err, code = run([[for i = 1, 3 do tt.head_groups("images/q" .. i .. ".png", {q_heads = 4, kv_heads = {2}}) end]], "--max-files 2")
check("head_groups figures count as files too", code == 1 and has(err, "sandbox: file quota: writing 'images/q3.png'"))
clean_images()
out, err, code = run([[tt.head_groups("images/q1.png", {q_heads = 8, kv_heads = {8, 2, 1}}) print("ok")]], "--max-write 1K")
check("head_groups bytes count against --max-write", code == 1 and has(err, "--max-write"))
clean_images()

out, err, code = run([[tt.heatmap(tt.rand(40, 40), "images/q1.png") tt.heatmap(tt.rand(40, 40), "images/q2.png")]], "--max-write 2K")
check("figure bytes count", code == 1 and has(err, "sandbox: write quota") and has(err, "--max-write"))
clean_images()

out, err, code = run([[io.output("images/q_out.txt") for i = 1, 1000 do io.write(string.rep("y", 1000)) end]], "--max-write 100K")
check("io.write to a file counts", code == 1 and has(err, "sandbox: write quota"))
clean_images()

out, err, code = run([[local f = assert(io.open("images/q_hole", "w")) f:seek("set", 1 << 40) f:write("x")]], "--max-write 1M")
check("seeking past the end counts the hole", code == 1 and has(err, "sandbox: write quota: writing 1.0 TiB") or has(err, "sandbox: write quota: writing 1024.0 GiB"))
clean_images()

out, err, code = run([[for i = 1, 100 do io.write(string.rep("z", 1000)) end print()]], "--max-write 1K")
check("stdout does not count", code == 0 and #out > 100000)

out, err, code = run("print(1)", "--max-write 1K --max-files 1")
check("quota options run", code == 0)
local _, _, cu = os.execute(bin .. " --max-write 1M -e 1 >/dev/null 2>" .. root .. "/err")
check("--max-write without --sandbox: usage error", cu == 2 and has(slurp(root .. "/err"), "'--max-write' only applies with --sandbox"))
_, _, cu = os.execute(bin .. " --sandbox --max-files x -e 1 >/dev/null 2>" .. root .. "/err")
check("--max-files x: usage error", cu == 2)

-- the default timeout can be shortened; it is on without --timeout (30 s),
-- which the help text states
out, err, code = run("while true do end\n", "--timeout 0.3")
check("sandbox timeout: exit 1", code == 1 and has(err, "timeout: the script ran longer than 0.3 s"))
out, err, code = run("while true do pcall(error) end\n", "--timeout 0.3")
check("sandbox timeout cannot be caught", code == 1 and has(err, "timeout"))
local help = io.popen(bin .. " --help"):read("a")
check("--help documents --sandbox and --images", has(help, "--sandbox") and has(help, "--images DIR"))
check("--help documents the quota and its defaults", has(help, "--max-write SIZE") and has(help, "default 256M")
      and has(help, "--max-files N") and has(help, "default 1000"))

-- --images elsewhere; a missing --images folder is a usage error
assert(os.execute("mkdir -p " .. root .. "/figs"))
out, err, code = run("local f = assert(io.open('" .. root .. "/figs/a.txt', 'w')) f:write('x') f:close()\n" ..
                     "print(pcall(io.open, 'images/b.txt', 'w'))\n", "--images " .. root .. "/figs")
check("--images DIR: writes go there", code == 0 and slurp(root .. "/figs/a.txt") == "x")
check("--images DIR: the default folder is then closed", has(out, "false") and has(out, "--images"))
out, err, code = run("print(1)\n", "--images " .. root .. "/missing")
check("--images of a missing folder: exit 2", code == 2 and has(err, "--images '" .. root .. "/missing': the folder does not exist"))

-- without --images and without images/: every write is refused, with a reason
assert(os.execute("mkdir -p " .. root .. "/bare"))
write(root .. "/bare/s.lua", "print(pcall(io.open, 'images/x.txt', 'w'))\n")
local _, _, c2 = os.execute(string.format("cd %s/bare && %s -q --sandbox s.lua >%s/out 2>&1", root, bin, root))
check("no images/ folder: writes refused with a reason",
      c2 == 0 and has(slurp(root .. "/out"), "files may be written only under 'images', which does not exist"))

-- -e and the REPL read under the current folder
local _, _, c3 = os.execute(string.format("cd %s && %s -q --sandbox -e 'print(io.open(\"data.txt\"):read(\"l\")) print(pcall(io.open, \"../outside/secret.txt\"))' >%s/out 2>&1",
                                          class, bin, root))
local o3 = slurp(root .. "/out")
check("-e: reads under the current folder", c3 == 0 and has(o3, "hello") and has(o3, "false"))

-- --read DIR: one more folder the script may read (a teacher's lessons/);
-- writes stay where they were; only with --sandbox; a missing folder is a
-- usage error
local readprobe = "print(pcall(function() return io.open('" .. outside .. "/secret.txt'):read('l') end))\n"
  .. "print(pcall(io.open, '" .. outside .. "/w.txt', 'w'))\n"
out, err, code = run(readprobe, "--read " .. outside)
check("--read DIR: a file under DIR is read", code == 0 and has(out, "true\tsecret"))
check("--read DIR: writing there is still refused", has(out, "false") and not exists(outside .. "/w.txt"))
out, err, code = run(readprobe)
check("without --read: the read is refused with the hint",
      code == 0 and has(out, "files may be read only under the script's folder; hint: --read DIR allows one more"))
out, err, code = run("print(1)\n", "--read " .. root .. "/missing")
check("--read of a missing folder: exit 2", code == 2 and has(err, "--read: the --read folder does not exist ('" .. root .. "/missing')"))
local _, _, c4 = os.execute(string.format("%s --read %s -e 'print(1)' >%s/out 2>&1", bin, outside, root))
check("--read without --sandbox: exit 2", c4 == 2 and has(slurp(root .. "/out"), "'--read' only applies with --sandbox"))

os.execute("rm -rf " .. root)
T.report()
