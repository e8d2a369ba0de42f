-- a padding mask [B, Nk] must broadcast over heads and queries: [B, 1, 1, Nk]
local q = tt.randn(2, 4, 5, 8):named("B", "H", "N", "Dh")
local keep = tt.tensor({{1, 1, 1, 1, 1}, {1, 1, 1, 0, 0}}):bool()
local out = tt.sdpa(q, q, q, {mask = keep})
