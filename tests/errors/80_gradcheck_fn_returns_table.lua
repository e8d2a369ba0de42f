-- the function must return one tensor, not the list chunk gives
local x = tt.randn(4, 6):requires_grad_()
tt.gradcheck(function(a) return a:chunk(2, 2) end, {x})
