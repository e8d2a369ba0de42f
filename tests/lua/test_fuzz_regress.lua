-- test_fuzz_regress.lua — what the libFuzzer harnesses (tests/fuzz/) found
-- in the einops patterns, each as a plain case (the safetensors and report
-- findings are in test_save.lua and test_report.lua, the repeat message in
-- tests/errors/128). Expected values are written out here, never taken from tt.
local T = dofile("tests/lua/check.lua")
local check, close = T.check, T.close

-- reduce with a pattern that reduces no axis of an 8-dim tensor (fuzz_pattern:
-- the step that merges the reduced axes wrote a 9th dim past an 8-slot array,
-- then refused "reshape: 9 dims"): a rearrange, as in einops
do
  local vals = {{1, -2, 3}, {0.5, 4, -6}}
  local x = tt.tensor(vals):reshape(1, 1, 1, 1, 1, 1, 2, 3):requires_grad_()
  local want = {}                               -- x transposed, as numbers
  for j = 1, 3 do want[j] = {vals[1][j], vals[2][j]} end
  for _, red in ipairs{"sum", "mean", "max", "min"} do
    local y = tt.reduce(x, "a b c d e f g h -> a b c d e f h g", red)
    check("reduce " .. red .. " of no axis: 8 dims kept", y:dim() == 8)
    close("reduce " .. red .. " of no axis: the transpose", y:reshape(3, 2), want)
  end
  local y = tt.reduce(x, "a b c d e f g h -> a b c d e f h g", "max")
  y:sum():backward()
  close("reduce max of no axis: gradient 1 each", x.grad:reshape(2, 3), {{1, 1, 1}, {1, 1, 1}})
  local b = tt.reduce(x, "a b c d e f g h -> h g a b c d e f", "any")
  check("reduce any of no axis: bool", b:dtype() == "bool")
  check("reduce any of no axis: each element's truth", b:reshape(3, 2):float():sum():item() == 6)
  local z = tt.reduce(tt.tensor{{0, 2}, {3, 0}}, "a b -> b a", "all")
  check("reduce all of no axis: zeros are false", z:dtype() == "bool" and z[1][1]:item() == false
        and z[1][2]:item() == true and z[2][1]:item() == true and z[2][2]:item() == false)
end

-- a pattern across lines (a [[long string]]): the backward of repeat and
-- reduce read its saved spec up to the first newline, so the pattern came
-- back cut ("no '->' in the pattern"; fuzz_pattern)
do
  local x = tt.tensor{1, 2}:requires_grad_()
  local y = tt.einrepeat(x, "h ->\n h c", {c = 3})
  close("repeat across lines: forward", y, {{1, 1, 1}, {2, 2, 2}})
  local loss = (y * tt.tensor{{1, 2, 3}, {4, 5, 6}}):sum()
  loss:backward()
  close("repeat across lines: gradient, the sum over c", x.grad, {6, 15})
  local z = tt.tensor{{1, 5}, {7, 3}}:requires_grad_()
  tt.reduce(z, [[a
    b -> a]], "max"):sum():backward()
  close("reduce across lines: gradient to each row's max", z.grad, {{0, 1}, {1, 0}})
end

T.report()
