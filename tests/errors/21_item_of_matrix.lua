-- item() is for one element
local loss = tt.randn(2, 3)
print(loss:item())
