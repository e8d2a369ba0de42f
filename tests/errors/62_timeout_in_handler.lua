-- options: --timeout 0.2
-- Lua runs a message handler with hooks off after a limit's error: the
-- watchdog stops it and says so
xpcall(function() while true do end end, function(msg) while true do end end)
