-- options: --sandbox
-- under --sandbox the debug library is only debug.traceback: getinfo,
-- getupvalue and friends would reach what the sandbox wraps
local info = debug.getinfo(1, "Sl")
