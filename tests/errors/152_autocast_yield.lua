-- a generator that yields from inside autocast: the setting would leak
-- into the code that resumes it
local x, w = tt.randn(4, 8), tt.randn(8, 3)
local steps = coroutine.wrap(function()
  tt.autocast("bfloat16", function()
    coroutine.yield(x:matmul(w))
  end)
end)
local y = steps()
