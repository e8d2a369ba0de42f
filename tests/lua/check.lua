-- check.lua — the Lua tests' counter: check, close, checkerror (in the
-- spirit of Lua's own testes), report() ends with "N passed, N failed".
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
