-- check.lua — the Lua tests' counter: check, close, checkerror (in the
-- spirit of Lua's own testes), report() ends with "N passed, N failed";
-- the float64 references' rounding to bfloat16 and float16 (round16,
-- near16, once16), shared by the 16-bit tests; rope's float64 rotation.
local M = {passed = 0, failed = 0}

local function where(level)
  local info = debug.getinfo(level + 1, "Sl")
  return info and (info.short_src .. ":" .. info.currentline) or "?"
end

function M.check(descr, cond, level)
  if cond then
    M.passed = M.passed + 1
  else
    M.failed = M.failed + 1
    print("FAIL " .. where((level or 1) + 1) .. ": " .. descr)
  end
  return cond
end

-- check, with what a command printed written to stderr when it fails
-- (the command-line tests pass its stdout and stderr).
function M.check_out(descr, cond, output)
  if not cond and output then io.stderr:write(output, "\n") end
  local r = M.check(descr, cond, 2)  -- not a tail call: keeps the caller's line
  return r
end

-- Every element of tensor x within tol of the plain Lua values in want
-- (a nested table or a number).
function M.close(descr, x, want, tol)
  tol = tol or 1e-5
  local got = type(x) == "number" and x or x:totable()
  local ok, why = true, nil
  local function walk(g, w, path)
    if type(w) == "table" then
      if type(g) ~= "table" or #g ~= #w then ok, why = false, path .. ": length differs"; return end
      for i = 1, #w do walk(g[i], w[i], path .. "[" .. i .. "]") end
    elseif w ~= w then
      if g == g then ok, why = false, path .. ": want NaN, got " .. tostring(g) end
    elseif w == math.huge or w == -math.huge then
      if g ~= w then ok, why = false, path .. ": want " .. tostring(w) .. ", got " .. tostring(g) end
    elseif type(g) ~= "number" or not (math.abs(g - w) <= tol * (1 + math.abs(w))) then  -- a NaN g fails
      ok, why = false, path .. ": want " .. tostring(w) .. ", got " .. tostring(g)
    end
  end
  walk(got, want, "")
  if not ok then descr = descr .. " (" .. why .. ")" end
  local r = M.check(descr, ok, 2)  -- not a tail call: keeps the caller's line
  return r
end

-- f(...) must raise an error whose message contains every string in pats
-- (plain find). Returns the message.
function M.checkerror(pats, f, ...)
  if type(pats) == "string" then pats = {pats} end
  local ok, msg = pcall(f, ...)
  msg = tostring(msg)
  local good = not ok
  local missing = nil
  for _, p in ipairs(pats) do
    if not string.find(msg, p, 1, true) then good, missing = false, p end
  end
  local descr = ok and ("no error raised, expected: " .. table.concat(pats, " | "))
             or (missing and ("error message lacks '" .. missing .. "': " .. msg)) or "error"
  M.check(descr, good, 2)
  return msg
end

-- ===== 16-bit floats: the reference rounding, from the definition =====
-- p bits of precision, emin the least normal exponent, overflow the first
-- value that rounds to inf (the largest finite plus half its ulp).
M.FMT16 = {
  bfloat16 = { p = 8, emin = -126, max = 0x1.fep127 },
  float16 = { p = 11, emin = -14, max = 65504.0 },
}

local function exponent(a)            -- e with 2^e <= a < 2^(e+1), a > 0
  local e = math.floor(math.log(a, 2))
  while 2.0^e > a do e = e - 1 end
  while 2.0^(e + 1) <= a do e = e + 1 end
  return e
end

-- The spacing of dtype dt's values at a >= 0.
function M.quantum16(dt, a)
  local f = M.FMT16[dt]
  local e = a > 0 and exponent(a) or f.emin
  if e < f.emin then e = f.emin end
  return 2.0^(e - (f.p - 1))
end

-- x (a double) rounded to dtype dt: to the nearest multiple of the
-- quantum, ties to the even multiple; inf past max + half an ulp.
function M.round16(dt, x)
  if x ~= x or x == math.huge or x == -math.huge then return x end
  local a = math.abs(x)
  local q = M.quantum16(dt, a)
  local m = a / q
  local r = math.floor(m)
  local d = m - r
  if d > 0.5 or (d == 0.5 and r % 2 == 1) then r = r + 1 end
  r = r * q
  if r > M.FMT16[dt].max then r = math.huge end
  return x < 0 and -r or r
end

-- A nested table's numbers as one flat list, in row-major order.
function M.flat(t, out)
  out = out or {}
  if type(t) ~= "table" then out[#out + 1] = t; return out end
  for _, v in ipairs(t) do M.flat(v, out) end
  return out
end

-- Every element of tensor x within ulps of dtype dt's spacing (default
-- x's dtype) at the reference want (a number list, flat or nested, row-major)
-- rounded to dt; NaN and inf exactly.
function M.near16(descr, x, want, ulps, dt)
  dt = dt or x:dtype()
  local got, bad = M.flat(x:totable()), nil
  want = M.flat(want)
  if #got ~= #want then M.check(descr .. ": " .. #got .. " elements, want " .. #want, false, 2); return end
  for i = 1, #want do
    local w, g = M.round16(dt, want[i]), got[i]
    local ok
    if w ~= w then ok = g ~= g
    elseif math.abs(w) == math.huge then ok = g == w
    else ok = math.abs(g - w) <= ulps * M.quantum16(dt, math.abs(w)) end
    if not ok and not bad then bad = string.format("[%d] got %.10g want %.10g", i, g, w) end
  end
  M.check(descr .. (bad and (" " .. bad) or ""), bad == nil, 2)
end

-- Every element of x (16-bit; dt, default its dtype) within half a unit in
-- the last place of the float64 value want, plus eps for float32's own
-- error: one rounding. Two roundings (an intermediate rounded to 16 bits)
-- miss by up to a unit or more.
function M.once16(descr, x, want, eps, dt)
  dt = dt or x:dtype()
  local got, bad, worst = M.flat(x:float():totable()), nil, 0
  want = M.flat(want)
  if #got ~= #want then M.check(descr .. ": " .. #got .. " elements, want " .. #want, false, 2); return end
  for i = 1, #want do
    local q = M.quantum16(dt, math.abs(M.round16(dt, want[i])))
    local err = math.abs(got[i] - want[i])
    worst = math.max(worst, err / q)
    if err > 0.5 * q + eps and not bad then bad = string.format("[%d] got %.10g want %.10g", i, got[i], want[i]) end
  end
  M.check(string.format("%s (worst %.3g ulp)%s", descr, worst, bad and (" " .. bad) or ""),
          bad == nil and x:dtype() == dt, 2)
end

-- ===== rope's float64 reference (test_block.lua, test_half_nn.lua) =====
-- x [B][N][D] (nested tables) turned by pos[n]: pair (i, i + D/2), or
-- (2i, 2i + 1) interleaved, by the angle pos[n] * base^(-2i/D).
function M.rope_ref(x, pos, base, interleaved)
  local out = {}
  for b = 1, #x do
    out[b] = {}
    for n = 1, #x[b] do
      local row, d = x[b][n], #x[b][n]
      local h, y = d // 2, {}
      for i = 0, h - 1 do
        local ia, ib = interleaved and 2 * i + 1 or i + 1, interleaved and 2 * i + 2 or i + 1 + h
        local ang = pos[n] * base ^ (-2 * i / d)
        y[ia] = row[ia] * math.cos(ang) - row[ib] * math.sin(ang)
        y[ib] = row[ib] * math.cos(ang) + row[ia] * math.sin(ang)
      end
      out[b][n] = y
    end
  end
  return out
end

-- ===== running ./tensortrace from a test =====

-- A fresh temporary folder.
function M.tmpdir()
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir -p '" .. dir .. "'"))
  return dir
end

-- Writes text to dir/name and returns the path.
function M.write(dir, name, text)
  local path = dir .. "/" .. name
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
  return path
end

function M.slurp(path)
  local f = assert(io.open(path))
  local s = f:read("a")
  f:close()
  return s
end

-- Runs ./tensortrace with args (a shell string), stdin from the file
-- stdin_path (or /dev/null): stdout, stderr, exit code, seconds.
function M.run(dir, args, stdin_path)
  local out, err = dir .. "/out", dir .. "/err"
  local t0 = tt and tt.clock() or 0
  local _, _, code = os.execute("./tensortrace " .. args .. " >" .. out .. " 2>" .. err
                                .. " <" .. (stdin_path or "/dev/null"))
  return M.slurp(out), M.slurp(err), code, (tt and tt.clock() or 0) - t0
end

function M.report()
  print(string.format("%d passed, %d failed", M.passed, M.failed))
  if M.failed > 0 then os.exit(1) end
end

return M
