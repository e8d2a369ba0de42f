-- an options table whose __index closes q: the options are read first,
-- then q is found closed
local q = tt.randn(1, 2, 4, 8)
local opts = setmetatable({}, {__index = function() local c <close> = q end})
local out = tt.sdpa(q, q, q, opts)
