-- options: --max-memory 1M
-- a 1000x1000 float matrix needs 3.8 MiB
local x = tt.randn(1000, 1000)
