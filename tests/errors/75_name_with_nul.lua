-- a name cut at its NUL byte would pass as "N" in silence
local x = tt.zeros(2, 3):named("B", "N\0q")
