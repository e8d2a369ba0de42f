-- module_check.lua — run by a stock lua5.4 (tests/test_module.sh): the
-- `tt` module loads with require and computes the hand example.
package.cpath = "./?.so;" .. package.cpath
local T = dofile("tests/lua/check.lua")
local tt = require "tt"
T.check("require returns the module", type(tt) == "table" and tt.sdpa ~= nil and tt.heatmap ~= nil)
local Q = tt.tensor{{1, 0}, {0, 1}, {1, 1}}
local V = tt.tensor{{1, 0}, {0, 2}, {1, 1}}
local W = (Q:matmul(Q:mT()) / math.sqrt(2)):softmax(2)
T.close("hand example through the module", W:matmul(V)[3], {0.75175, 1.0}, 1e-4)
T.checkerror({"matmul", "[3,2]"}, function() return Q:matmul(V) end)
T.report()
