-- benchlib.lua — what the Lua benches share (loaded with dofile next to them).
local M = {}

-- median, min and max of a list of times (sorts it)
function M.median_min_max(ts)
  table.sort(ts)
  return ts[(#ts + 1) // 2], ts[1], ts[#ts]
end

function M.sh_quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

function M.read_cmd(cmd)
  local f = io.popen(cmd)
  local s = f:read("a")
  f:close()
  return s
end

-- The interpreter running this script (as lua.c's arg: the lowest index),
-- made absolute against cwd when given, so a child can run elsewhere.
function M.interpreter(cwd)
  local i = 0
  while arg[i - 1] do i = i - 1 end
  local exe = arg[i]
  if cwd and exe:sub(1, 1) ~= "/" then exe = cwd .. "/" .. exe end
  return exe
end

return M
