-- 00_tensors_and_views.lua — what a tensor really is, and why most reshaping is free.
--
-- Attention code is mostly shape juggling: split D into heads, swap two dims,
-- add a mask to a batch of score matrices. This lesson shows the machinery
-- under all of it: a tensor is a flat block of numbers (its storage) read
-- through a shape, a stride per dim and an offset. Views change only that
-- reading recipe, so they copy nothing. Then: reshape vs view vs contiguous,
-- broadcasting, and names on dims.
--
-- Run it:   ./tensortrace lessons/00_tensors_and_views.lua    (every shape and stride)
--           ./tensortrace -q lessons/00_tensors_and_views.lua (narrative only)

tt.manual_seed(0)

local function untraced(fn, ...)
  tt.trace.off(); fn(...); tt.trace.on()
end

local function list(t) return "(" .. table.concat(t, ",") .. ")" end

-- The address rule: element [i1][i2]... of x lives at storage position
--   offset + (i1-1)*stride1 + (i2-1)*stride2 + ...
-- Our base tensor holds 0, 1, 2, ... so each value IS its storage position,
-- and we can check the rule on every element of every view.
local function check_addresses(x, what)
  untraced(function()
    local strides, offset = x:stride(), x:offset()
    local function walk(v, d, addr)
      if type(v) ~= "table" then
        if v ~= addr then
          error(string.format("%s: value %g found where the address rule says %d", what, v, addr))
        end
        return
      end
      for i, sub in ipairs(v) do walk(sub, d + 1, addr + (i - 1) * strides[d]) end
    end
    walk(x:totable(), 1, offset)
  end)
end

local base -- the tensor every view below is taken from
local function describe(name, x)
  untraced(function()
    print(string.format("  %-22s shape %-8s strides %-9s offset %-2d contiguous %-5s shares storage %s",
      name, list(x:shape()), list(x:stride()), x:offset(), tostring(x:is_contiguous()),
      tostring(x:shares_storage(base))))
  end)
end

print("How to read the trace (the indented lines between the narrative):")
print("  lessons/00_tensors_and_views.lua:70  local x = ...")
print("      the script line that ran; the ops it made are indented under it, one a row:")
print("  view        [24] -> x[2,3,4]   view, strides (12,4,1)")
print("      the op, its inputs' shapes (and labels, x), the result; \"view, strides\"")
print("      means no number was copied: the result reads the same storage with")
print("      those strides (section 1). An op that computes shows its FLOPs instead.")
print("  lessons/01_qkv_projection.lua:111 ← line 123")
print("      a line inside a function, then (after ←, \"called from\") the line that")
print("      called it, outwards to the script's own line.")
print("  … ×4 more (same shapes)")
print("      a loop: its first pass is shown in full, and this counts the passes that")
print("      repeated it with the same ops and shapes; \"… ×4 more of the rows since")
print("      line 15\" when the repeat spans several lines.")
print("  ✓ checked   [4] ≈ [4] (rtol 1e-5, atol 1e-6)")
print("      a tt.assert_close that passed (a failing one stops the lesson).")
print("Run with -q for the narrative alone. lua/README.md (the trace) has the details.")
print("")
tt.trace.section("1. A tensor is storage + shape + strides + offset")
print("Make 24 numbers 0..23 and read them as a [2,3,4] block.")
local x = tt.arange(24):view(2, 3, 4):label("x")
base = x
print(x)
print("The strides say how far to jump in storage to move one step along a dim:")
print("  next block +12, next row +4, next column +1.")
describe("x", x)
print("So x[2][3][4] lives at 0 + 1*12 + 2*4 + 3*1 = 23. (Indexing is 1-based as")
print("everywhere in Lua, and x[i] is x:select(1, i): the trace shows three selects.)")
local last = x[2][3][4]:item()
if last ~= 23 then error("x[2][3][4] should be 23, got " .. last) end
check_addresses(x, "x")

tt.trace.section("2. Views: a new recipe for the same storage")
print("Each op below returns a view: new shape/strides/offset, no copy.")
print("Watch the strides in the trace and in the table.")
local xt = x:transpose(2, 3):label("x_T")      -- swap two dims: swap their strides
local xp = x:permute(3, 1, 2):label("x_perm")  -- reorder all dims: reorder the strides
local xn = x:narrow(3, 2, 2):label("x_narrow") -- columns 2..3: the offset moves to 1
local xs = x:select(2, 3):label("x_row3")      -- fix row 3: that dim disappears
local col = x:narrow(3, 1, 1)                  -- [2,3,1]: the first column
local xe = col:expand(2, 3, 4):label("x_expand") -- repeat it 4 times: stride 0
describe("x", x)
describe("x:transpose(2,3)", xt)
describe("x:permute(3,1,2)", xp)
describe("x:narrow(3,2,2)", xn)
describe("x:select(2,3)", xs)
describe("x:narrow(3,1,1):expand", xe)
for _, item in ipairs({ {"transpose", xt}, {"permute", xp}, {"narrow", xn}, {"select", xs}, {"expand", xe} }) do
  local name, v = item[1], item[2]
  if not v:shares_storage(x) then error(name .. " should be a view of x") end
  check_addresses(v, name)
end
print("Checked: all five share x's storage, and every element of every view sits")
print("exactly where offset + sum((index-1) * stride) says.")
print("expand's stride 0 means all 4 columns read the same stored number: the")
print("column is repeated without copying anything.")
tt.assert_close(xe, { { {0, 0, 0, 0}, {4, 4, 4, 4}, {8, 8, 8, 8} },
                      { {12, 12, 12, 12}, {16, 16, 16, 16}, {20, 20, 20, 20} } },
  0, 0, "expand repeats the first column")

tt.trace.section("3. view vs reshape vs contiguous")
print("view only relabels memory, so it needs elements in storage order.")
local flat = x:view(6, 4)
print("x:view(6, 4) works: x is contiguous. But after a transpose the row-order")
print("walk jumps around storage, and view refuses:")
local ok, err = pcall(function() return xt:view(24) end)
if ok then error("view of a transposed tensor should fail") end
print("  error: " .. err)
print("reshape does what view can't: it copies when it has to.")
local r_view = x:reshape(6, 4)
local r_copy = xt:reshape(24):label("x_T_flat")
if not r_view:shares_storage(x) then error("reshape of a contiguous tensor should be a view") end
if r_copy:shares_storage(x) then error("reshape of a transposed tensor must copy") end
print("  x:reshape(6,4)    shares storage with x: " .. tostring(r_view:shares_storage(x)) .. " (a view)")
print("  x_T:reshape(24)   shares storage with x: " .. tostring(r_copy:shares_storage(x)) .. " (a copy)")
print("contiguous() makes that copy explicitly; after it, view works again.")
local packed = xt:contiguous():label("x_T_packed")
local packed_flat = packed:view(24)
tt.assert_close(packed_flat, r_copy, 0, 0, "contiguous():view equals reshape")
tt.assert_close(flat, r_view, 0, 0, "view and reshape agree on contiguous x")
untraced(function()
  local first = {}
  for i, v in ipairs(r_copy:narrow(1, 1, 6):totable()) do first[i] = string.format("%d", v) end
  print("The copy holds x_T in reading order: " .. table.concat(first, ", ") .. ", ...")
end)
tt.assert_close(r_copy:narrow(1, 1, 6), {0, 4, 8, 1, 5, 9}, 0, 0, "transposed reading order")

tt.trace.section("4. Broadcasting: smaller shapes stretch to fit")
print("Line the shapes up from the right. Each pair of sizes must be equal, or one")
print("of them 1 (or missing); size-1 dims are stretched (stride 0, no copy).")
local bias = tt.tensor{100, 200, 300, 400}:label("bias")
local shifted = x + bias                        -- [2,3,4] + [4]: per-column bias
tt.assert_close(shifted, x + bias:view(1, 1, 4):expand(2, 3, 4), 0, 0,
  "broadcast add equals add of the explicitly expanded bias")
print("  [2,3,4] + [4]     -> [2,3,4]  (the same bias row added to every row)")
local rows = tt.tensor{{1}, {2}, {3}}            -- [3,1]
local cols = tt.tensor{{10, 20, 30, 40}}         -- [1,4]
local grid = rows * cols                        -- outer product by broadcasting
print("  [3,1] * [1,4]     -> [3,4]    (an outer product without a loop)")
tt.assert_close(grid[3], {30, 60, 90, 120}, 0, 0, "row 3 of the broadcast product")
local scores = tt.randn(2, 4, 4)
local mask = tt.zeros(4, 4)
local _ = scores + mask
print("  [2,4,4] + [4,4]   -> [2,4,4]  (one mask for every sentence in a batch;")
print("                                lesson 03 uses exactly this)")
print("When the sizes clash, the error names both shapes:")
local ok2, err2 = pcall(function() return x + tt.ones(3) end)
if ok2 then error("[2,3,4] + [3] should not broadcast") end
print("  error: " .. err2)

tt.trace.section("5. Names on dims")
print("Dims can carry names. Views move the names along, reductions drop them,")
print("and any dim argument can be a name instead of a number.")
local xnamed = x:named("B", "N", "D")
local swapped = xnamed:transpose("N", "D")
local per_token = xnamed:sum("D")
untraced(function()
  print("  x:named(\"B\",\"N\",\"D\"):transpose(\"N\",\"D\") has dims "
    .. table.concat(swapped:names(), ","))
end)
tt.assert_close(swapped, xt, 0, 0, "transpose by name equals transpose by number")
tt.assert_close(per_token, x:sum(3), 0, 0, "sum over D by name equals sum over dim 3")
print("The trace prints named shapes as [B=2,N=3,D=4], which is how the next")
print("lessons keep batch, tokens and features apart.")
