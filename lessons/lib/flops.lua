-- flops.lua — the FLOPs the trace has counted, shared by lessons 09, 10, 18
-- and 19 (which measure what each step or each N costs).
--
-- A lesson loads it from its own folder, as it loads induction_model.lua:
--   local counted_flops = dofile((arg[0]:match("^(.*)/") or ".") .. "/lib/flops.lua").counted_flops
local F = {}

-- Total FLOPs the trace has counted since the last tt.trace.reset(), over
-- every op kind: the sum of the `flops` column of tt.trace.summary.
function F.counted_flops()
  local total = 0
  for _, op in pairs(tt.trace.summary{print = false}) do total = total + op.flops end
  return total
end

return F
