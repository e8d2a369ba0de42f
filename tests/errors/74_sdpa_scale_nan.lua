-- any finite scale is fine (0 gives uniform weights); NaN is not
local q = tt.randn(2, 5, 8)
local out = tt.sdpa(q, q, q, {scale = 0 / 0})
