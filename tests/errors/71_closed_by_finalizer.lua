-- options: --max-memory 8M
-- A finalizer closes A while A + 1 runs (past the memory cap that op
-- collects garbage): the op finishes on A, and A is closed afterwards
collectgarbage("stop")
local A = tt.ones(512 * 1024)                 -- 2 MiB
local garbage = tt.ones(5 * 256 * 1024)       -- 5 MiB, dropped below
-- (made in a coroutine: no stale register of this chunk keeps it alive)
coroutine.wrap(function() setmetatable({}, {__gc = function() local c <close> = A end}) end)()
garbage = nil
local B = A + 1                               -- needs 2 MiB more: collects
assert(B:sum():item() == 2 * 512 * 1024)
print(A:sum())
