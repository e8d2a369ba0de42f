-- json.lua — a strict JSON reader for the tests (RFC 8259 values; raises
-- on anything else, so a bare NaN or a trailing comma fails the test).
local M = {}

local function fail(s, i, what) error(string.format("json: %s at byte %d: %q", what, i, s:sub(i, i + 20)), 0) end

local function skip(s, i) return s:find("[^ \t\r\n]", i) or #s + 1 end

local value
local function str(s, i)
  local out, j = {}, i + 1
  while true do
    local c = s:sub(j, j)
    if c == "" then fail(s, j, "unterminated string") end
    if c == '"' then return table.concat(out), j + 1 end
    if c:byte() < 32 then fail(s, j, "control character in string") end
    if c == "\\" then
      local e = s:sub(j + 1, j + 1)
      local map = {['"'] = '"', ["\\"] = "\\", ["/"] = "/", b = "\b", f = "\f", n = "\n", r = "\r", t = "\t"}
      if map[e] then out[#out + 1] = map[e]; j = j + 2
      elseif e == "u" and s:sub(j + 2, j + 5):match("^%x%x%x%x$") then
        out[#out + 1] = utf8.char(tonumber(s:sub(j + 2, j + 5), 16)); j = j + 6
      else fail(s, j, "bad escape") end
    else out[#out + 1] = c; j = j + 1 end
  end
end

function value(s, i)
  i = skip(s, i)
  local c = s:sub(i, i)
  if c == "{" then
    local obj = {}
    i = skip(s, i + 1)
    if s:sub(i, i) == "}" then return obj, i + 1 end
    while true do
      if s:sub(i, i) ~= '"' then fail(s, i, "expected a key") end
      local k; k, i = str(s, i)
      i = skip(s, i)
      if s:sub(i, i) ~= ":" then fail(s, i, "expected ':'") end
      obj[k], i = value(s, i + 1)
      i = skip(s, i)
      local d = s:sub(i, i)
      if d == "}" then return obj, i + 1 end
      if d ~= "," then fail(s, i, "expected ',' or '}'") end
      i = skip(s, i + 1)
    end
  elseif c == "[" then
    local arr = {n = 0}
    i = skip(s, i + 1)
    if s:sub(i, i) == "]" then return arr, i + 1 end
    while true do
      arr.n = arr.n + 1
      arr[arr.n], i = value(s, i)
      i = skip(s, i)
      local d = s:sub(i, i)
      if d == "]" then return arr, i + 1 end
      if d ~= "," then fail(s, i, "expected ',' or ']'") end
      i = i + 1
    end
  elseif c == '"' then return str(s, i)
  elseif s:sub(i, i + 3) == "true" then return true, i + 4
  elseif s:sub(i, i + 4) == "false" then return false, i + 5
  elseif s:sub(i, i + 3) == "null" then return M.null, i + 4
  else
    local num = s:match("^-?%d+%.?%d*[eE]?[-+]?%d*", i)
    if not num or num == "" or num == "-" then fail(s, i, "unexpected character") end
    if num:match("^-?0%d") then fail(s, i, "leading zero") end
    return tonumber(num), i + #num
  end
end

M.null = setmetatable({}, {__tostring = function() return "null" end})

function M.decode(s)
  local v, i = value(s, 1)
  i = skip(s, i)
  if i <= #s then fail(s, i, "trailing characters") end
  return v
end

return M
