-- options: --timeout 0.2
-- finalizers run at exit, with hooks off: still under the timeout
setmetatable({}, {__gc = function() while true do end end})
print("the script itself ends here")
