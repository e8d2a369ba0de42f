-- a hand calculation that does not match
local w = tt.tensor{0.2, 0.3, 0.5}
tt.assert_close(w, tt.tensor{0.2, 0.3, 0.4})
