-- test_save.lua — tt.save / tt.load: round trips of awkward tensors and
-- metadata, the bytes of a small file, every error a script can cause
-- (each naming save or load, the key and a hint), hostile tables, and the
-- sandbox's rules for these files.
local T = dofile("tests/lua/check.lua")
local check, checkerror = T.check, T.checkerror

local dir = T.tmpdir()
local path = dir .. "/w.safetensors"

local function same(a, b)
  local sa, sb = a:shape(), b:shape()
  if a:dtype() ~= b:dtype() or #sa ~= #sb then return false end
  for i = 1, #sa do if sa[i] ~= sb[i] then return false end end
  if a:numel() == 0 then return true end
  return a:eq(b):float():sum():item() == a:numel()
end

-- ===== Round trips =====
local base = tt.randn(3, 4, 5)
local saved = {
  strided = base:permute(3, 1, 2),                 -- [5, 3, 4], not contiguous
  narrowed = base:narrow(2, 2, 2),                 -- a view with an offset
  expanded = tt.randn(3, 1):expand(3, 6),          -- stride 0
  scalar = tt.tensor(-2.5),                        -- 0-d
  empty = tt.zeros(0, 3),
  mask = tt.randn(7, 5):gt(0),
  mask_t = tt.randn(4, 6):gt(0):transpose(1, 2),
  one = tt.ones(1, 1, 1, 1, 1, 1, 1, 1),           -- 8 dims
  ['with "quotes" and \\ backslash'] = tt.arange(3),
  ["données/αβγ/日本"] = tt.ones(2),
}
local meta = {format = "pt", note = 'line 1\nline "2"\t\\', ["clé é"] = "日本語", [""] = ""}
tt.save(path, saved, meta)
local got, gmeta = tt.load(path)
local n = 0
for k, v in pairs(saved) do
  n = n + 1
  check("round trip of '" .. k .. "'", got[k] ~= nil and same(got[k], v))
end
local m = 0
for _ in pairs(got) do m = m + 1 end
check("as many tensors back as saved", m == n)
for k, v in pairs(meta) do check("metadata '" .. k .. "' back", gmeta[k] == v) end
check("0-d stays 0-d", #got.scalar:shape() == 0 and got.scalar:item() == -2.5)
check("bool stays bool", got.mask:dtype() == "bool" and got.mask_t:dtype() == "bool")
check("loaded tensors are contiguous", got.strided:is_contiguous())

-- no metadata: an empty table back; no tensors at all: a valid file
tt.save(path, {x = tt.ones(2)})
local _, none = tt.load(path)
check("no metadata: an empty table", type(none) == "table" and next(none) == nil)
tt.save(path, {})
local nothing = tt.load(path)
check("an empty file of tensors loads", type(nothing) == "table" and next(nothing) == nil)

-- the bytes of a small file, by the format: 8-byte length, JSON, data
tt.save(path, {b = tt.tensor({true, false}), a = tt.tensor({1, 2})}, {k = "v"})
local bytes = T.slurp(path)
local hlen = string.unpack("<I8", bytes)
local header = bytes:sub(9, 8 + hlen)
check("header padded to a multiple of 8", hlen % 8 == 0 and header:match("^{.-}%s*$") ~= nil)
check("header names dtype, shape and offsets", header:find(
  '"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"BOOL","shape":[2],"data_offsets":[8,10]}',
  1, true) ~= nil)
check("header holds __metadata__", header:find('"__metadata__":{"k":"v"}', 1, true) ~= nil)
check("data after the header", bytes:sub(9 + hlen) == string.pack("<ff", 1, 2) .. "\1\0")
-- metadata keys in sorted order, whatever the table's hash order (which
-- changes from run to run): the same checkpoint gives the same bytes
do
  local many, keys = {}, {}
  for i = 1, 40 do many[string.format("key%02d", 41 - i)] = tostring(i) end
  local mpath = path .. ".meta"
  tt.save(mpath, {a = tt.tensor({1})}, many)
  local mbytes = T.slurp(mpath)
  os.remove(mpath)
  local mheader = mbytes:sub(9, 8 + string.unpack("<I8", mbytes))
  for k in mheader:gmatch('"(key%d%d)"') do keys[#keys + 1] = k end
  local sorted = #keys == 40
  for i = 2, #keys do sorted = sorted and keys[i - 1] < keys[i] end
  check("metadata keys written in sorted order", sorted)
end

-- atomic: a refused save leaves the old file as it was
checkerror("save:", tt.save, path, {x = 5})
check("a refused save leaves the old file", T.slurp(path) == bytes)
local leftovers = io.popen("ls -A " .. dir):read("a")
check("no temporary left behind", not leftovers:find("tt-tmp", 1, true))

-- ===== Errors of save =====
local x = tt.ones(2)
checkerror({"save: the tensors must be a table, got a number", "hint:"}, tt.save, path, 5)
checkerror({"save: the metadata must be a table", "hint:"}, tt.save, path, {x = x}, "meta")
checkerror({"save: tensor key [1] is not a string", "hint: tensors are saved by name"}, tt.save, path, {x})
checkerror({"save: tensor key [2.5] is not a string"}, tt.save, path, {[2.5] = x})
checkerror({"save: tensor key of type table is not a string"}, tt.save, path, {[{}] = x})
checkerror({"save: tensor key of type boolean is not a string"}, tt.save, path, {[true] = x})
checkerror({"save: 'w' is a number, not a tensor", "hint: tt.save(path, {name = tensor"}, tt.save, path, {w = 3})
checkerror({"save: 'w' is a table, not a tensor"}, tt.save, path, {w = {1, 2}})
checkerror({"save: metadata 'k' is a number, not a string", "hint: metadata maps strings to strings"},
           tt.save, path, {x = x}, {k = 1})
checkerror({"save: metadata key [1] is not a string", "hint: metadata maps strings"},
           tt.save, path, {x = x}, {"v"})
checkerror({"save: tensor key 'a\\0...' contains a NUL byte", "hint:"}, tt.save, path, {["a\0b"] = x})
checkerror({"save: metadata 'k' contains a NUL byte", "hint:"}, tt.save, path, {x = x}, {k = "a\0b"})
checkerror({"save: the path contains a NUL byte"}, tt.save, dir .. "/a\0b", {x = x})
checkerror({"save: a tensor needs a non-empty name", "hint:"}, tt.save, path, {[""] = x})
checkerror({"save: '__metadata__' is the format's own key"}, tt.save, path, {__metadata__ = x})
checkerror({"save: tensor name 'ab\\xff' is not valid UTF-8", "hint:"}, tt.save, path, {["ab\xff"] = x})
checkerror({"save: metadata value 'v\\xc3' is not valid UTF-8", "hint:"}, tt.save, path, {x = x}, {k = "v\xc3"})
checkerror({"save: cannot write '" .. dir .. "/no/w.safetensors'", "does not exist"},
           tt.save, dir .. "/no/w.safetensors", {x = x})
local closed = tt.ones(3)
do local c <close> = closed end
checkerror({"save: tensor 'c' was closed", "hint:"}, tt.save, path, {c = closed})

-- raw access only: __pairs and __index of the tables never run
local called = false
local tricky = setmetatable({x = x}, {
  __pairs = function() called = true; return next, {y = 5}, nil end,
  __index = function() called = true; return x end,
})
tt.save(path, tricky, setmetatable({}, {__index = function() called = true end}))
local back = tt.load(path)
check("no metamethod ran", not called and back.x ~= nil and back.y == nil)

-- a finalizer that closes a tensor and empties the table during the call
local victims = {v = tt.ones(4)}
local victim = victims.v
collectgarbage("stop")
setmetatable({}, {__gc = function() local c <close> = victim; victims.v = nil end})
for _ = 1, 50 do local _ = {} end
local ok, err = pcall(function()
  collectgarbage("restart")
  for _ = 1, 3 do tt.save(path, victims) end
end)
check("a finalizer's close during save: saved, or an error naming save",
      ok or tostring(err):find("save: tensor 'v' was closed", 1, true) ~= nil)
collectgarbage()

-- too many entries in one table
local many = {}
for i = 1, (1 << 20) + 1 do many["t" .. i] = x end
checkerror({"save: more than 1048576 entries in one table", "hint:"}, tt.save, path, many)
many = nil
collectgarbage()

-- ===== Errors of load =====
local function raw(name, header, data, hlen)
  local p = dir .. "/" .. name
  local f = assert(io.open(p, "wb"))
  f:write(string.pack("<I8", hlen or #header), header, data or "")
  f:close()
  return p
end
checkerror({"load: cannot read '" .. dir .. "/missing'"}, tt.load, dir .. "/missing")
checkerror({"load: '" .. dir .. "' is not a regular file"}, tt.load, dir)
checkerror({"load: the path contains a NUL byte"}, tt.load, "a\0b")
local short = dir .. "/short"
T.write(dir, "short", "abc")
checkerror({"load: '" .. short .. "' is not a safetensors file", "shorter than the 8-byte header length"},
           tt.load, short)
checkerror({"the header length says 1000000000000 bytes", "truncated?"}, tt.load,
           raw("lying", "{}", "", 1000000000000))
checkerror({"not a safetensors file", "bad JSON"}, tt.load, raw("badjson", '{"a":{"dtype":"F32",}}'))
checkerror({"unsupported dtype 'F64'"}, tt.load,
           raw("f64", '{"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}}', "\0\0\0\0\0\0\0\0"))
do  -- BF16 and F16 round trips (the bytes are checked by hand in test_safetensors.c)
  local p = dir .. "/half.safetensors"
  local b, h = tt.randn(3, 5):bfloat16():t(), tt.randn(4):half()
  tt.save(p, {b = b, h = h})
  local back = tt.load(p)
  check("BF16 loads as bfloat16", back.b:dtype() == "bfloat16" and tt.allclose(back.b:float(), b:float(), 0, 0))
  check("F16 loads as float16", back.h:dtype() == "float16" and tt.allclose(back.h:float(), h:float(), 0, 0))
end
checkerror({"tensor 'a' has data_offsets [0, 4]", "need 8 bytes"}, tt.load,
           raw("size", '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}', "\0\0\0\0"))
checkerror({"the tensors hold 4 bytes of data but the file has 8"}, tt.load,
           raw("extra", '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}', "\0\0\0\0\0\0\0\0"))
checkerror({"BOOL tensor 'm' holds byte 2"}, tt.load,
           raw("bool", '{"m":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}}', "\1\2"))
checkerror({"the shape of 'a' is too large"}, tt.load,
           raw("huge", '{"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}}', "\0\0\0\0"))
checkerror({"two tensors are named 'a'"}, tt.load,
           raw("twice", '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},'
                        .. '"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}', string.rep("\0", 8)))
-- a key given twice is refused, as the reference reader does (found by
-- fuzz_safetensors: the second __metadata__ value was kept beside the first,
-- and a save of what was read wrote both)
checkerror({"__metadata__ has two keys 'k'"}, tt.load, raw("meta2", '{"__metadata__":{"k":"a","j":"b","k":"c"}}'))
checkerror({"two __metadata__ keys"}, tt.load, raw("meta3", '{"__metadata__":{},"__metadata__":{"k":"c"}}'))
-- a tensor named "" loaded, then could not be saved (fuzz_safetensors's
-- round trip): refused on load as on save
checkerror({"a tensor has an empty name"}, tt.load, raw("empty", '{"":{"dtype":"F32","shape":[],"data_offsets":[0,4]}}', "\0\0\0\0"))
checkerror({"tensor 'a' has two \"dtype\" fields"}, tt.load,
           raw("dtype2", '{"a":{"dtype":"F32","shape":[1],"dtype":"I64","data_offsets":[0,4]}}', "\0\0\0\0"))
checkerror({"tensor 'a' has two \"shape\" fields"}, tt.load,
           raw("shape2", '{"a":{"shape":[2],"dtype":"F32","shape":[1],"data_offsets":[0,4]}}', "\0\0\0\0"))
checkerror({"tensor 'a' has two \"data_offsets\" fields"}, tt.load,
           raw("offs2", '{"a":{"data_offsets":[0,8],"dtype":"F32","shape":[1],"data_offsets":[0,4]}}', "\0\0\0\0"))

-- a tensor past the memory cap: the cap's message once, with the real size
-- (the error was once formatted into its own buffer: the prefix twice and
-- a garbled size)
do
  local n = 3 * 1024 * 1024                           -- 12 MiB of float32
  local hdr = '{"a":{"dtype":"F32","shape":[' .. n .. '],"data_offsets":[0,' .. 4 * n .. ']}}'
  local big = raw("big", hdr, string.rep("\0", 4 * n))
  local o, e, c = T.run(dir, "-q --max-memory 4M -e 'tt.load(\"" .. big .. "\")'")
  local _, count = e:gsub("load: tensor 'a'", "")
  check("load past the cap: exit 1", c == 1)
  check("load past the cap: the prefix once", count == 1)
  check("load past the cap: the size asked for", e:find("12.0 MiB needed but the memory cap is 4.0 MiB", 1, true) ~= nil)
end

-- a FIFO is refused at once, never waited on (opening it for reading
-- would block until a writer comes); --timeout ends the old behaviour
do
  local fifo = dir .. "/fifo"
  assert(os.execute("mkfifo '" .. fifo .. "'"))
  local o, e, c = T.run(dir, "-q --timeout 5 -e 'print(pcall(tt.load, \"" .. fifo .. "\"))'")
  check("load of a FIFO: an error, not a wait",
        c == 0 and o:find("load: '" .. fifo .. "' is not a regular file (a FIFO)", 1, true) ~= nil)
  os.remove(fifo)
end

-- a header naming 200000 tensors loads in linear time: the duplicate-name
-- check compared every pair once (over 60 s for this file); the --timeout
-- of 30 s leaves a wide margin over the ~0.2 s it takes now
do
  local n, parts = 200000, {}
  for i = 1, n do
    parts[i] = string.format('"t%d":{"dtype":"F32","shape":[1],"data_offsets":[%d,%d]}', i, 4 * (i - 1), 4 * i)
  end
  local many = raw("many", "{" .. table.concat(parts, ",") .. "}", string.rep("\0\0\128\63", n))   -- 1.0f
  local o, e, c = T.run(dir, "-q --timeout 30 -e 'local t0 = tt.clock(); local t = tt.load(\"" .. many
                             .. "\"); local s = 0; for _, x in pairs(t) do s = s + x:item() end; "
                             .. "print(s, tt.clock() - t0)'")
  local sum, secs = o:match("^(%S+)\t(%S+)")
  check("load of 200000 tensors: every one back (" .. tostring(secs) .. " s)", c == 0 and tonumber(sum) == n)
  print(string.format("load of 200000 tensors: %.2f s", tonumber(secs) or -1))
end

-- ===== The sandbox =====
local class = dir .. "/class"
assert(os.execute("mkdir -p " .. class .. "/images"))
tt.save(class .. "/in.safetensors", {x = tt.ones(2)})
tt.save(dir .. "/outside.safetensors", {x = tt.ones(2)})
local function sandboxed(text, opts)
  T.write(class, "s.lua", text)
  local out, err, code = T.run(dir, "-q --sandbox " .. (opts or "") .. " --images " .. class .. "/images "
                               .. class .. "/s.lua")
  return out, err, code
end
local out, err, code = sandboxed([[
tt.save("]] .. class .. [[/images/a.safetensors", {x = tt.ones(3)})
local t = tt.load("]] .. class .. [[/images/a.safetensors")
local u = tt.load("]] .. class .. [[/in.safetensors")
print(t.x:sum():item(), u.x:sum():item())
print(pcall(tt.save, "]] .. class .. [[/b.safetensors", {x = tt.ones(3)}))
print(pcall(tt.load, "]] .. dir .. [[/outside.safetensors"))
]])
check("sandbox: save inside images, load inside the script's folder", code == 0 and out:find("^3%.?0?\t2") ~= nil)
check("sandbox: no save outside images",
      out:find("sandbox: cannot write '" .. class .. "/b.safetensors'", 1, true) ~= nil)
check("sandbox: no load outside the script's folder",
      out:find("sandbox: cannot read '" .. dir .. "/outside.safetensors'", 1, true) ~= nil)
out, err, code = sandboxed([[
for i = 1, 3 do tt.save("]] .. class .. [[/images/q" .. i .. ".safetensors", {x = tt.ones(3)}) end
]], "--max-files 2")
check("sandbox: saves count against --max-files", code == 1 and err:find("--max-files", 1, true) ~= nil)
out, err, code = sandboxed([[
tt.save("]] .. class .. [[/images/big.safetensors", {x = tt.ones(100000)})
]], "--max-write 100K")
check("sandbox: saves count against --max-write", code == 1 and err:find("--max-write", 1, true) ~= nil)

os.execute("rm -rf '" .. dir .. "'")
T.report()
