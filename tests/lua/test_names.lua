-- test_names.lua — named dimensions through every op family, and names as
-- dim arguments.
local T = dofile("tests/lua/check.lua")
local check, checkerror = T.check, T.checkerror

local function names(x)
  local n, out = x:names(), {}
  for i = 1, n.n do out[i] = n[i] or "_" end
  return table.concat(out, ",")
end

local x = tt.randn(2, 3, 4):named("B", "N", "D")
check("named/names", names(x) == "B,N,D")
check("names lists nil for unnamed dims", names(tt.zeros(2, 3)) == "_,_")
check("named with nil", names(tt.zeros(2, 3):named(nil, "D")) == "_,D")
checkerror({"named", "2 names given", "3 dims"}, function() return x:named("A", "B") end)
checkerror({"named", "'B'", "dims 1 and 2"}, function() return tt.zeros(2, 3):named("B", "B") end)

-- views move names
check("transpose", names(x:transpose(1, 3)) == "D,N,B")
check("transpose by name", names(x:transpose("N", "D")) == "B,D,N")
check("mT", names(x:mT()) == "B,D,N")
check("permute by name", names(x:permute("D", "B", "N")) == "D,B,N")
check("narrow keeps", names(x:narrow("N", 2, 2)) == "B,N,D")
check("select drops", names(x:select("N", 1)) == "B,D")
check("x[i] drops the first", names(x[1]) == "N,D")
check("unsqueeze adds an unnamed dim", names(x:unsqueeze(2)) == "B,_,N,D")
check("squeeze keeps the rest", names(x:unsqueeze(2):squeeze()) == "B,N,D")
check("expand keeps", names(tt.zeros(1, 4):named("N", "D"):expand(3, 4)) == "N,D")
check("reshape keeps unchanged leading/trailing dims", names(x:reshape(2, 12)) == "B,_")
check("reshape keeps trailing", names(x:reshape(6, 4)) == "_,D")
check("contiguous/clone keep", names(x:mT():contiguous()) == "B,D,N" and names(x:clone()) == "B,N,D")
check("chunk by name", #x:chunk(3, "N") == 3 and names(x:chunk(3, "N")[1]) == "B,N,D")
check("size by name", x:size("D") == 4)

-- elementwise unify
local y = tt.ones(4):named("D")
check("broadcast takes the name", names(tt.zeros(2, 3, 4) + y) == "_,_,D")
check("unify", names(x * y) == "B,N,D")
check("scalar keeps", names(x / 2) == "B,N,D" and names(-x) == "B,N,D" and names(x:exp()) == "B,N,D")
check("comparison keeps", names(x:gt(0)) == "B,N,D")
checkerror({"add", "'N'", "'D'"}, function() return x + tt.zeros(2, 3, 4):named("B", "D", "N") end)

-- reductions drop the reduced dim
check("sum drops", names(x:sum("N")) == "B,D")
check("mean by name", names(x:mean("D")) == "B,N")
check("keepdim leaves the size-1 dim unnamed", names(x:sum("N", true)) == "B,_,D")
local mv, mi = x:max("D")
check("max values and indices drop", names(mv) == "B,N" and names(mi) == "B,N")
check("argmax drops", names(x:argmax("N")) == "B,D")
check("full reduction is 0-d", x:sum():dim() == 0)

-- matmul: batch names unified, row from the left, column from the right
local q = tt.randn(2, 5, 4):named("B", "Nq", "Dh")
local k = tt.randn(2, 6, 4):named("B", "Nk", "Dh")
local s = q:matmul(k:mT())
check("matmul names", names(s) == "B,Nq,Nk")
check("softmax by name keeps", names(s:softmax("Nk")) == "B,Nq,Nk")
check("masked_fill keeps", names(s:masked_fill(tt.zeros(5, 6, "bool"), 0)) == "B,Nq,Nk")
check("tril keeps", names(s:tril()) == "B,Nq,Nk")
local v = tt.randn(2, 6, 3):named("B", "Nk", "Dv")
check("weights @ values", names(s:softmax(-1):matmul(v)) == "B,Nq,Dv")
checkerror({"matmul", "'B'", "'C'"}, function() return q:matmul(tt.randn(2, 4, 5):named("C", nil, nil)) end)

-- joins, repeats, einops, sdpa
check("cat keeps", names(tt.cat({x, x}, "N")) == "B,N,D")
check("stack adds an unnamed dim", names(tt.stack({x, x}, 1)) == "_,B,N,D")
check("repeat_interleave keeps", names(x:repeat_interleave(2, "N")) == "B,N,D")
check("rearrange names from the pattern", names(tt.rearrange(x, "b n (h d) -> b h n d", {h = 2})) == "b,h,n,d")
check("rearrange names a group h*d", names(tt.rearrange(tt.zeros(2, 2, 3, 4), "b h n d -> b n (h d)")) == "b,n,h*d")
check("einsum names from the output", names(tt.einsum("b i d, b j d -> b i j", q, k)) == "b,i,j")
local q4 = tt.randn(1, 2, 5, 4):named("B", "H", "Nq", "Dh")
local k4 = tt.randn(1, 2, 6, 4):named("B", "H", "Nk", "Dh")
check("sdpa keeps the query's names", names(tt.sdpa(q4, k4, k4)) == "B,H,Nq,Dh")

-- names in errors
checkerror({"softmax", "no dim named 'K'", "[B=2,N=3,D=4]"}, function() return x:softmax("K") end)
checkerror({"matmul", "[B=2,N=3,D=4]"}, function() return x:matmul(x) end)

-- a tensor never carries one name on two dims: a result that would has
-- neither, and a lookup by that name fails with a hint
local qn = tt.randn(1, 2, 4, 3):named("b", "h", "n", "d")
local sc = qn:matmul(qn:mT())
check("matmul [n,d]@[d,n]: both n dims unnamed", names(sc) == "b,h,_,_")
checkerror({"softmax", "no dim named 'n'", "[b=1,h=2,4,4]", "names that would repeat are dropped", "'Nq' and 'Nk'"},
           function() return sc:softmax("n") end)
checkerror({"transpose", "no dim named 'n'", "hint"}, function() return sc:transpose("n", "h") end)
checkerror({"softmax", "no dim named 'K'"}, function() return x:softmax("K") end)
check("no hint when every dim is named", not select(2, pcall(x.softmax, x, "K")):find("hint"))
check("einsum drops a repeated name", names(tt.einsum("b h n d, b h m d -> b h n m", qn, qn)) == "b,h,n,m")
check("einsum: ellipsis named like an axis", names(tt.einsum("... n d, ... m d -> ... n m",
      tt.randn(2, 3, 4):named("n", nil, nil), tt.randn(2, 5, 4))) == "_,_,m")
check("rearrange: ellipsis named like an axis", names(tt.rearrange(tt.zeros(2, 3):named("h", nil), "... h -> ... h")) == "_,_")
check("broadcast [N,1] + [1,N]", names(tt.zeros(3, 1):named("N", nil) + tt.zeros(1, 3):named(nil, "N")) == "_,_")
check("transpose/permute of it keep it unique", names(sc:transpose(1, 3)) == "_,h,b,_" and names(sc:permute(3, 1, 2, 4)) == "_,b,h,_")
check("cat/stack of it", names(tt.cat({sc, sc}, 3)) == "b,h,_,_" and names(tt.stack({sc, sc}, 1)) == "_,b,h,_,_")
check("reduction of it", names(sc:sum(4)) == "b,h,_")
check("expand/unsqueeze add unnamed dims", names(tt.zeros(3):named("N"):expand(3, 3)) == "_,N")
check("reshape [N=1] -> [1,1]", names(tt.zeros(1):named("N"):reshape(1, 1)) == "_,_")
local qq = tt.randn(1, 2, 4, 3):named("B", "H", "N", "Dh")
local _, wts = tt.sdpa(qq, qq, qq, {weights = true, mask = tt.causal_mask(4):named("Nq", "Nk")})
check("sdpa weights of [N] @ [N]: unnamed, mask [Nq,Nk] fits", names(wts) == "B,H,_,_")
check("Nq/Nk stay apart", names(tt.randn(1, 4, 3):named("B", "Nq", "D"):matmul(tt.randn(1, 5, 3):named("B", "Nk", "D"):mT())) == "B,Nq,Nk")

T.report()
