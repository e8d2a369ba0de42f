-- stats.lua — the mean and its standard error, shared by lessons 16 and 18
-- (which state a measured difference with its noise).
--
-- A lesson loads it from its own folder, as it loads flops.lua:
--   local mean_se = dofile((arg[0]:match("^(.*)/") or ".") .. "/lib/stats.lua").mean_se
local S = {}

-- The mean of the list a and its standard error, sd / sqrt(n); with a second
-- list b of the same length, those of the paired differences a[i] - b[i].
function S.mean_se(a, b)
  local n, sum, sq = #a, 0, 0
  for i = 1, n do sum = sum + (a[i] - (b and b[i] or 0)) end
  local mean = sum / n
  for i = 1, n do sq = sq + (a[i] - (b and b[i] or 0) - mean) ^ 2 end
  return mean, math.sqrt(sq / (n - 1) / n)
end

return S
