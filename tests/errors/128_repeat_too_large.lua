-- a repeat too large to count says so as repeat's, with the pattern (found
-- by fuzz_pattern: the message named expand, a step the script never called)
local x = tt.ones(2)
local y = tt.einrepeat(x, "h -> h c", {c = 1e18})
