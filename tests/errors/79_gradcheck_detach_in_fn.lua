-- a detach inside the function hides half of the gradient: gradcheck names the first element off
local x = tt.tensor({{0.5, 1.0}, {-1.5, 2.0}}):requires_grad_()
tt.gradcheck(function(a) return a * a:detach() end, {x})
