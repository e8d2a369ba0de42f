-- compare.lua — the --compare engine, built into tensortrace (lcompare.c
-- runs the scripts, then calls this chunk with both runs).
--
-- A run is {file, checkpoints = {{label, file, line, id, t}...}, nodes,
-- error}: each checkpoint is a tensor the script labelled, nodes[id] the op
-- that made tensor id ({op, args, argv, argkeys, scalar, scalar_first, file,
-- line, out, inputs = {{id, t}...}}; argv the op's arguments as values,
-- argkeys their keys in call order, args the trace's text of them), back
-- from every checkpoint to its inputs.
--
-- Each of REF's labels is checked against MINE's tensor of that label:
-- shape, names, dtype, values. At the first mismatch every hypothesis is
-- tried on the tensors themselves: REF's ops are replayed from REF's own
-- inputs with one mistake put in (softmax over another dim, the scale left
-- out, the mask inverted...), and a hypothesis is named only when the
-- result equals MINE's tensor within tolerance.
local ref, mines, opt = ...

-- s with every byte that is not valid UTF-8 given to bad(byte) -> text
local function utf8_clean(s, bad)
    local parts, pos = {}, 1
    while true do
        local ok, at = utf8.len(s, pos)
        if ok then break end
        parts[#parts + 1] = s:sub(pos, at - 1)
        parts[#parts + 1] = bad(s:byte(at))
        pos = at + 1
    end
    if pos == 1 then return s end
    parts[#parts + 1] = s:sub(pos)
    return table.concat(parts)
end

-- The terminal gets no control character but the line ends and tabs of the
-- verdict (a script's ESC, bell or carriage return is shown as \x1b...),
-- and no invalid UTF-8.
local function printable(s)
    s = utf8_clean(s, function(b) return string.format("\\x%02x", b) end)
    return (s:gsub("[%c\127]", function(c)
        if c == "\n" or c == "\t" then return c end
        return string.format("\\x%02x", c:byte())
    end))
end
local function out(s) opt.out(printable(s)) end

-- JSON arrays and objects (keys in order), for verdict_json
local function arr(t) t.__array = true return t end
local function obj(keys, t) t.__keys = keys return t end

-- ===== Other inputs: the exercise's sizes and seed, varied =====
-- A reference declares the inputs to re-check on above its marked line
-- (its checks section is left out on them):
--   -- recheck: N = 7; N = 1, B = 1; Dh = 8, seed = 5
-- (each ";" one variant). A variant rewrites, above the marked line, the
-- value of each name in its `local a, b = 1, 2` line and the seed of
-- tt.manual_seed(n); the same rewrite is made to the submission.

local MARK = "^%s*%-%-%s*=+%s*your code below"

-- "N = 7, B = 1" -> {{"N", "7"}, {"B", "1"}} (nil when malformed)
local function parse_variant(spec)
    local list = {}
    for part in spec:gmatch("[^,]+") do
        local name, value = part:match("^%s*([%a_][%w_]*)%s*=%s*(%-?[%d%.]+)%s*$")
        if not name then return nil end
        list[#list + 1] = { name, value }
    end
    return #list > 0 and list or nil
end

local function variants_of(text)
    for line in text:gmatch("[^\n]*") do
        if line:find(MARK) then break end
        local specs = line:match("^%s*%-%-%s*recheck:%s*(.-)%s*$")
        if specs then
            local list = {}
            for spec in specs:gmatch("[^;]+") do
                spec = spec:gsub("^%s+", ""):gsub("%s+$", "")
                if parse_variant(spec) then list[#list + 1] = spec end
            end
            return list
        end
    end
    return {}
end

-- text with the variant applied above its marked line; nil and why when a
-- name has no `local` line there (the setup was edited).
local function vary(text, spec)
    local pairs_ = parse_variant(spec)
    if not pairs_ then return nil, "a variant is NAME = NUMBER, ...: " .. spec end
    local lines, above = {}, math.huge
    for line in (text .. "\n"):gmatch("([^\n]*)\n") do
        if line:find("^%s*%-%-%s*=+%s*checks%s*=+") then break end   -- its checks hold for its own inputs only
        lines[#lines + 1] = line
        if above == math.huge and line:find(MARK) then above = #lines end
    end
    for _, nv in ipairs(pairs_) do
        local name, value, done = nv[1], nv[2], false
        for i = 1, math.min(#lines, above) do
            local l = lines[i]
            if name == "seed" then
                local a, b = l:find("tt%.manual_seed%(%s*%d+%s*%)")
                if a then
                    lines[i] = l:sub(1, a - 1) .. "tt.manual_seed(" .. value .. ")" .. l:sub(b + 1)
                    done = true
                    break
                end
            else
                local indent, names, values, rest = l:match("^(%s*local%s+)([%a_][%w_%s,]*)=%s*([^%-]-)(%s*%-%-.*)$")
                if not indent then indent, names, values = l:match("^(%s*local%s+)([%a_][%w_%s,]*)=%s*(.-)%s*$") rest = "" end
                if indent then
                    local ns, vs, k = {}, {}, nil
                    for n in names:gmatch("[%a_][%w_]*") do ns[#ns + 1] = n if n == name then k = #ns end end
                    for v in values:gmatch("[^,]+") do vs[#vs + 1] = v:gsub("^%s+", ""):gsub("%s+$", "") end
                    if k and #vs == #ns then
                        vs[k] = value
                        lines[i] = indent .. names:gsub("%s+$", "") .. " = " .. table.concat(vs, ", ") .. rest
                        done = true
                        break
                    end
                end
            end
        end
        if not done then return nil, string.format("no `local %s = ...` line above the marked line", name) end
    end
    return table.concat(lines, "\n")
end

if opt.mode == "variants" then return variants_of(ref) end
if opt.mode == "vary" then return vary(ref, mines) end
tt.trace.off()                      -- the engine's own ops are no part of any trace

-- ===== Tensors as Lua values =====

local function shape_of(t)
    local s = {}
    for d = 1, t:dim() do s[d] = t:size(d) end
    return s
end

-- t's dim names, nil where a dim has none (names() says "_" there: no name)
local function names_of(t)
    local n, s = t:names(), {}
    for d = 1, t:dim() do
        if n[d] ~= "_" then s[d] = n[d] end
    end
    return s
end

local function shape_str(t)
    local n, parts = names_of(t), {}
    for d = 1, t:dim() do
        parts[d] = (n[d] and (n[d] .. "=") or "") .. t:size(d)
    end
    return "[" .. table.concat(parts, ",") .. "]"
end

local function same_shape(a, b)
    if a:dim() ~= b:dim() then return false end
    for d = 1, a:dim() do
        if a:size(d) ~= b:size(d) then return false end
    end
    return true
end

local function values(t)
    local v = t:reshape(t:numel()):totable()
    if t:dtype() == "bool" then
        for i = 1, #v do v[i] = v[i] and 1 or 0 end
    end
    return v
end

-- 1-based indices of flat element i (1-based) in shape s
local function index_of(i, s)
    local idx, rest = {}, i - 1
    for d = #s, 1, -1 do
        idx[d] = rest % s[d] + 1
        rest = rest // s[d]
    end
    return idx
end

local function index_str(idx) return "[" .. table.concat(idx, ",") .. "]" end

-- A mask's fill value: -inf, or a large negative number standing in for it.
local function masked(x) return x <= -1e4 end

local function num_str(x)
    if x ~= x then return "nan" end
    if x == math.huge then return "inf" end
    if x == -math.huge then return "-inf" end
    return string.format("%.4g", x)
end

-- Compares MINE's values m with REF's r (same length): |m - r| <= atol +
-- rtol |r|; NaN matches NaN, an infinity itself, and a masked cell (-inf or
-- a large negative fill such as -1e9) another masked cell. Returns ok, the
-- largest |diff|, its flat index (the worst cell), and the cells that fail.
local function close(m, r, rtol, atol)
    local ok, worst, at, bad = true, -1, nil, 0
    for i = 1, #r do
        local a, b = m[i], r[i]
        local d
        if a == b or (a ~= a and b ~= b) or (masked(a) and masked(b) and (a == -math.huge or b == -math.huge)) then
            d = 0
        elseif a ~= a or b ~= b then
            d = math.huge
        else
            d = math.abs(a - b)
            if d ~= d then d = math.huge end
        end
        local tol = atol + rtol * math.abs(b)
        if tol ~= tol or tol == math.huge then tol = atol end   -- REF's NaN or inf: only itself matches it
        local fails = d > tol
        if fails then
            ok = false
            bad = bad + 1
        end
        if d > worst and (fails or ok) then worst, at = d, i end
    end
    if ok then at = nil end
    return ok, math.max(worst, 0), at, bad
end

-- ===== Replaying REF's ops =====

local binary = {
    add = function(a, b) return a + b end, sub = function(a, b) return a - b end,
    mul = function(a, b) return a * b end, div = function(a, b) return a / b end,
    pow = function(a, b) return a ^ b end,
    maximum = function(a, b) return a:maximum(b) end, minimum = function(a, b) return a:minimum(b) end,
    ["and"] = function(a, b) return a & b end, ["or"] = function(a, b) return a | b end,
    xor = function(a, b) return a ~ b end,
    eq = function(a, b) return a:eq(b) end, ne = function(a, b) return a:ne(b) end,
    lt = function(a, b) return a:lt(b) end, le = function(a, b) return a:le(b) end,
    gt = function(a, b) return a:gt(b) end, ge = function(a, b) return a:ge(b) end,
}
local unary = {
    neg = function(a) return -a end, ["not"] = function(a) return ~a end,
}
for _, name in ipairs { "exp", "log", "sqrt", "abs", "relu", "gelu", "gelu_tanh", "tanh", "sigmoid", "sin", "cos",
                        "float", "bool", "long", "bfloat16", "half", "isnan", "mT", "t" } do
    unary[name] = function(a) return a[name](a) end
end
-- The ops no replay makes, each with why. Every op of the core's table is
-- replayed by apply() or listed here (tests/lua/test_compare_trust.lua
-- reads core/ops/optable.c to hold this true).
local leaf = "a leaf: REF's recorded tensor stands for itself"
local not_replayed = {
    none = "no op", tensor = leaf, empty = leaf, zeros = leaf, ones = leaf, full = leaf, arange = leaf, eye = leaf,
    rand = leaf, randn = leaf, randint = leaf,
    dropout = "random: a replay cannot draw the same cells",
    ["sgd.step"] = "an optimizer step, after the forward pass", ["adamw.step"] = "an optimizer step, after the forward pass",
    clip_grad_norm = "an optimizer step, after the forward pass",
    chunk = "several outputs: each recorded piece is used as it is", split = "several outputs: each recorded piece is used as it is",
    unbind = "several outputs: each recorded piece is used as it is",
}
local reshaping = { view = true, reshape = true, flatten = true }
-- names and copies change no value: a replaced input (another length, say)
-- goes through them as it is
local same_values = { contiguous = true, clone = true }

-- How an op is called from Lua where the default does not say it. The
-- default: the first input's method of the op's name, else tt's function
-- of that name with the inputs first, then the recorded arguments in the
-- order the core records them (node.argkeys), which is the Lua call's. In
-- a call: a, b, c, d, e are the inputs, inputs all of them as a list and
-- inputs... spread; scalar is the op's number; {} is every recorded
-- argument in one options table (an sdpa option added to the core comes
-- with it); any other name is the recorded argument of that key (nil when
-- not given). A function gets (node, ins, argv).
local calls = {
    sum = "a:sum(dim, keepdim)", mean = "a:mean(dim, keepdim)", max = "a:max(dim, keepdim)", min = "a:min(dim, keepdim)",
    std = "a:std(dim, keepdim)", var = "a:var(dim, keepdim)", argmax = "a:argmax(dim, keepdim)",
    argmin = "a:argmin(dim, keepdim)", any = "a:any(dim, keepdim)", all = "a:all(dim, keepdim)",
    masked_fill = "a:masked_fill(b, scalar)",
    cat = "tt.cat(inputs, dim)", stack = "tt.stack(inputs, dim)", einsum = "tt.einsum(pattern, inputs...)",
    sdpa = "tt.sdpa(a, b, c, {})", rope = "tt.rope(a, b, {})", cross_entropy = "tt.cross_entropy(a, b, {})",
    where = function(node, ins) return tt.where(ins[1], ins[2], ins[3] or node.scalar) end,
}

-- node's recorded arguments with its tensor options (sdpa's mask, {input =
-- 4}) as the tensors ins holds in their place
local function arg_values(node, ins)
    local argv = {}
    for k, v in pairs(node.argv or {}) do
        if type(v) == "table" and v.input then v = ins[v.input] end
        argv[k] = v
    end
    return argv
end

-- a call's text as {fn = "sum", method = true, params = {"dim", "keepdim"}}
local call_forms = {}
local function call_form(text)
    if not call_forms[text] then
        local recv, fn, list = text:match("^(%w+)[:.]([%w_]+)%((.*)%)$")
        local params = {}
        for p in list:gmatch("[^,%s]+") do params[#params + 1] = p end
        call_forms[text] = { fn = fn, method = recv == "a", params = params }
    end
    return call_forms[text]
end

-- The default call of node's op: "a:softmax(dim)", "a:matmul(b)" (the
-- inputs no argument names come first), "tt.rearrange(inputs..., pattern, sizes)".
local function default_call(node, a)
    local keys = table.concat(node.argkeys or {}, ", ")
    if a ~= nil and a[node.op] ~= nil then
        local named, params = {}, {}
        for _, v in pairs(node.argv or {}) do
            if type(v) == "table" and v.input then named[v.input] = true end
        end
        for k = 2, #node.inputs do
            if not named[k] then params[#params + 1] = string.char(96 + k) end
        end
        if keys ~= "" then params[#params + 1] = keys end
        return "a:" .. node.op .. "(" .. table.concat(params, ", ") .. ")"
    end
    return "tt." .. node.op .. "(inputs..." .. (keys ~= "" and ", " or "") .. keys .. ")"
end

-- The op of node again on the tensors ins (REF's, or replaced ones).
local function apply(node, ins)
    local op, a = node.op, ins[1]
    if binary[op] then
        if node.scalar then
            if node.scalar_first then return binary[op](node.scalar, a) end
            return binary[op](a, node.scalar)
        end
        return binary[op](a, ins[2])
    elseif unary[op] then
        return unary[op](a)
    elseif same_values[op] then
        return a
    elseif op == "named" then
        if a:dim() ~= node.out:dim() then return a end
        return a:named(table.unpack(node.out:names(), 1, a:dim()))   -- "_" keeps a dim unnamed
    elseif reshaping[op] then
        return a:reshape(shape_of(node.out))
    elseif op == "expand" then
        return a:expand(shape_of(node.out))
    elseif not_replayed[op] then
        error("cannot replay " .. op)
    end
    local argv, call = arg_values(node, ins), calls[op]
    if type(call) == "function" then return (call(node, ins, argv)) end
    local form = call_form(call or default_call(node, a))
    local args, n = {}, 0
    for _, p in ipairs(form.params) do
        if p == "inputs..." then
            for k = 1, #node.inputs do n = n + 1; args[n] = ins[k] end
        else
            n = n + 1
            if #p == 1 and p >= "a" and p <= "e" then args[n] = ins[p:byte() - 96]
            elseif p == "inputs" then args[n] = ins
            elseif p == "scalar" then args[n] = node.scalar
            elseif p == "{}" then args[n] = argv
            else args[n] = argv[p] end
        end
    end
    if form.method then return (a[form.fn](a, table.unpack(args, 1, n))) end
    if type(tt[form.fn]) ~= "function" then error("cannot replay " .. op .. ": no method or tt function of that name") end
    return (tt[form.fn](table.unpack(args, 1, n)))
end

-- Whether apply() replays op: its own rule, a call form, or a method or tt
-- function of its name for the default.
local function replayable(op)
    if not_replayed[op] then return false end
    if binary[op] or unary[op] or same_values[op] or reshaping[op] or op == "named" or op == "expand" or calls[op] then
        return true
    end
    local probe = tt.zeros(1)
    return probe[op] ~= nil or type(tt[op]) == "function"
end

-- For the test of the op table: the ops apply() replays, and the ones it
-- does not, with why.
if opt.mode == "replayable" then
    return setmetatable({}, { __index = function(_, op) return replayable(op) or nil end }), not_replayed
end

-- REF's tensor id again with mods[id'] = function(node, ins, rep) -> tensor
-- replacing the ops it names; unchanged parts are REF's recorded tensors.
local function replayer(nodes, mods)
    local memo, touched = {}, {}
    local function affected(id)
        if touched[id] ~= nil then return touched[id] end
        touched[id] = false
        local node = nodes[id]
        local hit = mods[id] ~= nil
        if node and not hit then
            for _, i in ipairs(node.inputs) do
                if affected(i.id) then hit = true break end
            end
        end
        touched[id] = hit
        return hit
    end
    local function rep(id, fallback)
        if memo[id] then return memo[id] end
        local node = nodes[id]
        if not affected(id) then return node and node.out or fallback end
        local ins = {}
        for k, i in ipairs(node.inputs) do ins[k] = rep(i.id, i.t) end
        local r
        if mods[id] then r = mods[id](node, ins, rep) else r = apply(node, ins) end
        memo[id] = r
        return r
    end
    return rep
end

-- The nodes reachable from id, nearest first.
local function reachable(nodes, id)
    local list, seen, queue = {}, { [id] = true }, { id }
    local qi = 1
    while queue[qi] do
        local node = nodes[queue[qi]]
        qi = qi + 1
        if node then
            list[#list + 1] = node
            for _, i in ipairs(node.inputs) do
                if not seen[i.id] then
                    seen[i.id] = true
                    queue[#queue + 1] = i.id
                end
            end
        end
    end
    return list
end

-- Skips the views between a tensor and the op that computed it.
local passthrough = { named = true, view = true, reshape = true, contiguous = true, clone = true }
local function producer(nodes, id)
    local node = nodes[id]
    while node and passthrough[node.op] and node.inputs[1] do node = nodes[node.inputs[1].id] end
    return node
end

-- ===== Which of REF's scalings is attention's 1/√Dh =====

-- The size a product sums over: matmul's left operand's last dim; an
-- einsum's axes that are absent from its output (their sizes multiplied).
-- node is an entry of a run's graph (its inputs' shapes, no tensors).
local function contraction(node)
    if not node then return nil end
    local shapes = {}
    for k, i in ipairs(node.inputs) do shapes[k] = i.shape end
    if node.op == "matmul" and shapes[1] and #shapes[1] >= 1 then
        return shapes[1][#shapes[1]]
    elseif node.op == "einsum" and #shapes >= 2 then
        local spec = node.argv and node.argv.pattern
        local left, right = (spec or ""):match("^(.-)->(.*)$")
        if not left then return nil end
        local kept = {}
        for name in right:gmatch("[%a_][%w_]*") do kept[name] = true end
        local size, k = 1, 0
        for term in (left .. ","):gmatch("([^,]*),") do
            k = k + 1
            local shape = shapes[k]
            if not shape then return nil end
            local names, ell = {}, nil
            for tok in term:gmatch("%S+") do
                names[#names + 1] = tok
                if tok == "..." then ell = #names end
            end
            for j, name in ipairs(names) do
                local d = (ell and j > ell) and (#shape - (#names - j)) or j   -- after "...": from the right
                if name ~= "..." and not kept[name] and d >= 1 and d <= #shape then
                    size = size * shape[d]
                    kept[name] = true            -- counted once, from the first operand that has it
                end
            end
        end
        return size
    end
    return nil
end

-- What x / sq (or x * (1/sq)) by a positive scalar divides by: sq, else nil.
local function divisor(node)
    local s = node.scalar
    if (node.op ~= "div" and node.op ~= "mul") or not s or node.scalar_first or s <= 0 or s == 1 then return nil end
    return node.op == "div" and s or 1 / s
end

local function is_sqrt_of(sq, n) return n ~= nil and n > 1 and math.abs(sq * sq - n) < 1e-4 * n end

-- The tensor under views and transposes (K under K:mT()).
local function underlying(nodes, id)
    local node = nodes[id]
    while node and (passthrough[node.op] or node.op == "mT" or node.op == "transpose") and node.inputs[1] do
        id = node.inputs[1].id
        node = nodes[id]
    end
    return id
end

-- REF's attention scales, found in the trace and not in the number: a
-- scaling by 1/√n is attention's 1/√Dh (Dh = n) when what it scales is
-- scores, a product summed over n cells that a softmax (or an exp, the
-- softmax by hand) then normalises (Q·Kᵀ), or when its output goes into scores (Q or K scaled first); a scaling by the same 1/√Dh
-- of a product with that Q or K as an operand (the backward's g_S·K) is
-- one too. graph: the reference's every op (run.graph, ids and shapes).
-- Returns {[node id] = Dh}.
local function attention_scales(graph)
    local nodes, users = {}, {}
    for _, node in ipairs(graph) do nodes[node.id] = node end
    for _, node in pairs(nodes) do
        for _, i in ipairs(node.inputs) do
            users[i.id] = users[i.id] or {}
            table.insert(users[i.id], node)
        end
    end
    -- the product a tensor goes into, through views and transposes
    local function product_of_output(id, seen)
        seen = seen or {}
        for _, u in ipairs(users[id] or {}) do
            if not seen[u.id] then
                seen[u.id] = true
                if u.op == "matmul" or u.op == "einsum" then return u end
                if passthrough[u.op] or u.op == "mT" or u.op == "transpose" then
                    local p = product_of_output(u.id, seen)
                    if p then return p end
                end
            end
        end
        return nil
    end
    -- scores are a product that a softmax normalises (tt's, or one by hand:
    -- the exp of the scores less their max), through scalings, masks and
    -- views only
    local on_the_way = { div = true, mul = true, add = true, sub = true, masked_fill = true, where = true }
    local function softmaxed(id, seen)
        seen = seen or {}
        for _, u in ipairs(users[id] or {}) do
            if not seen[u.id] then
                seen[u.id] = true
                if u.op == "softmax" or u.op == "log_softmax" or u.op == "exp" then return true end
                if (passthrough[u.op] or on_the_way[u.op]) and softmaxed(u.id, seen) then return true end
            end
        end
        return false
    end
    local scales, operands = {}, {}
    for id, node in pairs(nodes) do
        local sq = divisor(node)
        if sq and node.inputs[1] then
            local p = producer(nodes, node.inputs[1].id)
            local dh = contraction(p)
            if not is_sqrt_of(sq, dh) then
                p = product_of_output(id)
                dh = contraction(p)
            end
            if is_sqrt_of(sq, dh) and softmaxed(p.id) then
                scales[id] = dh
                for _, i in ipairs(p.inputs) do
                    operands[underlying(nodes, i.id)] = dh
                end
            end
        end
    end
    for id, node in pairs(nodes) do
        local sq = divisor(node)
        local p = sq and node.inputs[1] and producer(nodes, node.inputs[1].id)
        if p and not scales[id] and (p.op == "matmul" or p.op == "einsum") then
            for _, i in ipairs(p.inputs) do
                local dh = operands[underlying(nodes, i.id)]
                if is_sqrt_of(sq, dh) then scales[id] = dh end
            end
        end
    end
    return scales
end

-- ===== Hypotheses =====

local function dim_name(t, d)
    local n = names_of(t)[d]
    return n and string.format("%s (dim %d)", n, d) or string.format("dim %d", d)
end

local function label_or_shape(t)
    local l = t:label()
    return l and ("`" .. l .. "`") or ("the " .. shape_str(t) .. " tensor")
end

local function fmt(x) return (string.format("%.4g", x)) end

-- Each hypothesis: a list of {kind, message, mods} to replay.
local function hypotheses(R, nodes, all_nodes, label)
    local list = {}
    local function add(kind, message, mods) list[#list + 1] = { kind = kind, message = message, mods = mods } end
    local reach = reachable(nodes, R.id)
    -- the sizes of the problem's dims (their names where given)
    local sizes = {}
    for _, node in ipairs(reach) do
        local t = node.out
        local n = names_of(t)
        for d = 1, t:dim() do
            local size = t:size(d)
            if sizes[size] == nil or sizes[size] == false then sizes[size] = n[d] or false end
        end
    end
    for _, node in ipairs(reach) do
        local op, argv = node.op, node.argv or {}
        local id = node.id
        local x = node.inputs[1] and node.inputs[1].t
        if op == "softmax" and x then
            local d = argv.dim
            for d2 = 1, x:dim() do
                if d2 ~= d then
                    add("softmax_dim", string.format(
                        "your softmax normalises over %s; the reference normalises over %s: call softmax(%s)%s",
                        dim_name(x, d2), dim_name(x, d), names_of(x)[d] and ('"' .. names_of(x)[d] .. '"') or tostring(d),
                        d2 == d - 1 and string.format(" (dims count from 1 here: PyTorch's dim=%d is %d)", d2, d) or ""),
                        { [id] = function(_, ins) return ins[1]:softmax(d2) end })
                end
            end
            -- the mask applied after the softmax instead of before
            local f = producer(nodes, node.inputs[1].id)
            if f and f.op == "masked_fill" then
                add("mask_after_softmax", "you zeroed the masked weights after the softmax, so the rows no longer sum to 1: "
                    .. "fill the scores with -inf (masked_fill) before the softmax",
                    { [id] = function(_, _, rep)
                        local s = rep(f.inputs[1].id, f.inputs[1].t)
                        local m = rep(f.inputs[2].id, f.inputs[2].t)
                        return s:softmax(d):masked_fill(m, 0)
                    end })
            end
        elseif op == "masked_fill" then
            add("mask_inverted", "your mask is inverted: the cells the reference hides are the ones you keep, and the other way round; "
                .. "masked_fill hides where the mask is true (use ~mask, or the mask itself, the other way)",
                { [id] = function(_, ins) return ins[1]:masked_fill(~ins[2], node.scalar) end })
        elseif (op == "lt" or op == "le" or op == "gt" or op == "ge") and not node.scalar_first then
            -- the boundary counted on the wrong side (a window's i - j <= W: W + 1 keys)
            local other = ({ lt = "le", le = "lt", gt = "ge", ge = "gt" })[op]
            add("off_by_one", string.format("your comparison puts the boundary on the other side: the reference uses %s where "
                .. "yours acts as %s (< against <=), so one more or one fewer position passes", op, other),
                { [id] = function(_, ins)
                    local y = node.scalar or ins[2]
                    return ins[1][other](ins[1], y)
                end })
        elseif op == "neg" then
            -- a minus sign left out (ALiBi's -slope * (i - j) written slope * (i - j))
            add("sign", string.format("your values are the reference's with one term's sign flipped: the reference negates %s "
                .. "where you did not (or the other way round); check that term's sign", label_or_shape(x)),
                { [id] = function(_, ins) return ins[1] end })
        elseif op == "causal_mask" then
            local nq, nk = argv.nq, argv.nk
            if nq and nk and nq ~= nk then
                local upper = argv.align == "upper_left"
                add("causal_alignment", string.format(
                    "your causal mask is aligned %s; with %d queries and %d keys the queries are the last %d positions, aligned %s: "
                    .. "tt.causal_mask(%d, %d%s)", upper and "lower-right" or "upper-left", nq, nk, nq,
                    upper and "upper-left" or "lower-right", nq, nk, upper and ', "upper_left"' or ""),
                    { [id] = function() return tt.causal_mask(nq, nk, (not upper) and "upper_left" or nil) end })
            end
        elseif op == "div" or op == "mul" then
            local dh = all_nodes.attention_scales[id]
            if dh then
                local sq = divisor(node)                     -- the reference divides by sq = √Dh
                do
                    add("scale_missing", string.format(
                        "you never scaled by 1/√Dh: divide the scores by math.sqrt(Dh) = %s (Dh = %d) before the softmax", fmt(sq), dh),
                        { [id] = function(_, ins) return ins[1] end })
                    add("scale_wrong", string.format(
                        "you scaled by 1/Dh (or by 1/√Dh twice); the reference divides by √Dh = %s once (Dh = %d)", fmt(sq), dh),
                        { [id] = function(_, ins) return ins[1] / dh end })
                    add("scale_wrong", string.format(
                        "you multiplied by √Dh = %s; the reference divides by it (Dh = %d)", fmt(sq), dh),
                        { [id] = function(_, ins) return ins[1] * sq end })
                    -- √ of another size of the problem (√D, the model width, for √Dh)
                    local order = {}
                    for size in pairs(sizes) do order[#order + 1] = size end
                    table.sort(order)
                    for _, size in ipairs(order) do
                        local name = sizes[size]
                        if size ~= dh and size > 1 then
                            add("scale_wrong", string.format(
                                "you divided by √%s = %s; the reference divides by √Dh = %s (Dh = %d)",
                                name or tostring(size), fmt(math.sqrt(size)), fmt(sq), dh),
                                { [id] = function(_, ins) return ins[1] / math.sqrt(size) end })
                        end
                    end
                end
            end
        elseif (op == "cat" or op == "stack") and #node.inputs == 2 then
            -- a cache appended in the other order (the new keys before the past ones)
            add("cat_order", string.format("you joined the two the other way round: the reference's %s puts %s first, then %s "
                .. "(a cache: the past keys, then the new ones)", op, label_or_shape(node.inputs[1].t), label_or_shape(node.inputs[2].t)),
                { [id] = function(n, ins) return apply(n, { ins[2], ins[1] }) end })
        elseif (op == "sum" or op == "mean" or op == "max" or op == "min") and x and argv.dim then
            local d, keep = argv.dim, argv.keepdim == true
            if keep then
                add("keepdim_missing", string.format(
                    "your %s drops the dim it reduces (%s), so what you combine it with broadcasts it along another dim: "
                    .. "keep it with %s(%s, true) (PyTorch's keepdim=True)", op, dim_name(x, d), op,
                    names_of(x)[d] and ('"' .. names_of(x)[d] .. '"') or tostring(d)),
                    { [id] = function(_, ins) return (ins[1][op](ins[1], d, false)) end })
            end
            for d2 = 1, x:dim() do
                if d2 ~= d and x:size(d2) > 1 then
                    add("reduce_dim", string.format("your %s reduces %s; the reference reduces %s%s", op, dim_name(x, d2),
                        dim_name(x, d), d2 == d - 1 and string.format(" (dims count from 1 here: PyTorch's dim=%d is %d)", d2, d) or ""),
                        { [id] = function(_, ins) return (ins[1][op](ins[1], d2, keep)) end })
                end
            end
        elseif op == "repeat_interleave" then
            local r, d = argv.r, argv.dim
            if r and d and r > 1 and x:size(d) > 1 then
                add("gqa_grouping", string.format(
                    "your query head h reads K/V group ((h-1) mod %d)+1, as repeat (tile) makes it; the reference gives each group %d "
                    .. "neighbouring query heads (group ⌈h/%d⌉): use repeat_interleave(%d, %d)", x:size(d), r, r, r, d),
                    { [id] = function(_, ins)
                        local copies = {}
                        for i = 1, r do copies[i] = ins[1] end
                        return tt.cat(copies, d)
                    end })
            end
        elseif op == "sdpa" then
            local q, k = node.inputs[1].t, node.inputs[2].t
            local hd = q:dim() - 2
            if q:dim() >= 3 and k:dim() == q:dim() and q:size(hd) > k:size(hd) and k:size(hd) > 1 then
                local g, r = k:size(hd), q:size(hd) // k:size(hd)
                add("gqa_grouping", string.format(
                    "your query head h reads K/V group ((h-1) mod %d)+1, as repeat (tile) makes it; the reference gives each group %d "
                    .. "neighbouring query heads (group ⌈h/%d⌉): use repeat_interleave(%d, %d)", g, r, r, r, hd),
                    { [id] = function(_, ins)
                        local ks, vs = {}, {}
                        for i = 1, r do ks[i], vs[i] = ins[2], ins[3] end
                        local o = arg_values(node, ins)
                        return (tt.sdpa(ins[1], tt.cat(ks, hd), tt.cat(vs, hd), o))
                    end })
            end
            if argv.mask then
                add("mask_inverted", "your mask is inverted: tt.sdpa's mask says what to keep (true = may attend), masked_fill's what to hide",
                    { [id] = function(_, ins)
                        local o = arg_values(node, ins)
                        o.mask = ~o.mask
                        return (tt.sdpa(ins[1], ins[2], ins[3], o))
                    end })
            end
            local nq, nk = q:size(q:dim() - 1), k:size(k:dim() - 1)
            if argv.causal and nq ~= nk then
                add("causal_alignment", string.format(
                    "your causal mask is aligned upper-left; with %d queries and %d keys the queries are the last %d positions "
                    .. "(lower-right, as tt.sdpa's causal and tt.causal_mask(%d, %d) give)", nq, nk, nq, nq, nk),
                    { [id] = function(_, ins)
                        local o = arg_values(node, ins)
                        o.causal = nil
                        o.mask = tt.causal_mask(nq, nk, "upper_left")
                        return (tt.sdpa(ins[1], ins[2], ins[3], o))
                    end })
            end
            local dh = q:size(q:dim())
            if dh > 1 and (not argv.scale or math.abs(argv.scale - 1 / math.sqrt(dh)) < 1e-3) then
                add("scale_missing", string.format("you never scaled by 1/√Dh = %s (Dh = %d)", fmt(1 / math.sqrt(dh)), dh),
                    { [id] = function(_, ins)
                        local o = arg_values(node, ins)
                        o.scale = 1
                        return (tt.sdpa(ins[1], ins[2], ins[3], o))
                    end })
                add("scale_wrong", string.format("you scaled by 1/Dh (or 1/√Dh twice); the reference scales by 1/√Dh = %s once (Dh = %d)",
                    fmt(1 / math.sqrt(dh)), dh),
                    { [id] = function(_, ins)
                        local o = arg_values(node, ins)
                        o.scale = 1 / dh
                        return (tt.sdpa(ins[1], ins[2], ins[3], o))
                    end })
            end
        end
        -- a key-padding mask ([..., 1, Nk]) applied to the query rows instead
        if op == "masked_fill" or op == "or" or op == "and" or op == "sdpa" then
            local o = node.out
            for k, i in ipairs(node.inputs) do
                local t = i.t
                if t:dtype() == "bool" and t:dim() >= 2 and t:size(t:dim() - 1) == 1 and t:size(t:dim()) > 1
                        and o:dim() >= 2 and o:size(o:dim() - 1) == t:size(t:dim()) then
                    add("padding_on_queries", "you masked the padded positions as query rows; padding hides key columns "
                        .. "(the mask is [..., 1, Nk], broadcast over the queries)",
                        { [id] = function(n, ins)
                            local ins2 = {}
                            for j, v in ipairs(ins) do ins2[j] = v end
                            ins2[k] = ins[k]:mT()
                            return apply(n, ins2)
                        end })
                end
            end
        end
        -- K (or V) taken from another input than the reference's
        if op == "matmul" then
            local b = node.inputs[2].t
            local bn = nodes[node.inputs[2].id]
            -- Q·K instead of Q·Kᵀ (or Pᵀ·G written P·G): an operand's transpose left out
            for side = 1, 2 do
                local operand = node.inputs[side]
                local tn = operand and nodes[operand.id]
                local last_two = tn and tn.op == "transpose" and operand.t:dim() >= 2 and (function()
                    local d = { tn.argv and tn.argv.dim1, tn.argv and tn.argv.dim2 }
                    local n = operand.t:dim()
                    for i = 1, 2 do if d[i] and d[i] < 0 then d[i] = n + 1 + d[i] end end
                    return (d[1] == n and d[2] == n - 1) or (d[1] == n - 1 and d[2] == n)
                end)()
                if tn and (tn.op == "mT" or last_two) and tn.inputs[1] then
                    local tr = tn.inputs[1]
                    add("transpose_missing", string.format(
                        "you multiplied by %s itself, not by its transpose: the reference's %s operand is %s:mT() "
                        .. "(the two differ only in values because the last two sizes are equal here)",
                        label_or_shape(tr.t), side == 1 and "left" or "right", label_or_shape(tr.t)),
                        { [id] = function(_, ins, rep)
                            if side == 1 then return rep(tr.id, tr.t):matmul(ins[2]) end
                            return ins[1]:matmul(rep(tr.id, tr.t))
                        end })
                end
            end
            local w = b
            if bn and bn.op == "mT" and bn.inputs[1] then w = bn.inputs[1].t end
            if w:dim() == 2 and x then
                for _, other in ipairs(all_nodes.projection_inputs) do
                    if other.id ~= node.inputs[1].id and other.t:size(other.t:dim()) == x:size(x:dim()) then
                        add("kv_source", string.format(
                            "you projected %s, the reference projects %s: in cross-attention K and V come from the encoder's output, Q from the decoder",
                            label_or_shape(other.t), label_or_shape(x)),
                            { [id] = function(_, ins) return other.t:matmul(ins[2]) end })
                    end
                end
            end
        end
    end
    return list
end

-- The data inputs of REF's projections (matmul by a 2-D weight): the
-- candidates of kv_source.
local function projection_inputs(nodes)
    local list, seen = {}, {}
    for _, node in pairs(nodes) do
        if node.op == "matmul" and node.inputs[2] then
            local b, bn = node.inputs[2].t, nodes[node.inputs[2].id]
            if bn and bn.op == "mT" and bn.inputs[1] then b = bn.inputs[1].t end
            local x = node.inputs[1]
            if b:dim() == 2 and x.t:dim() >= 2 and not seen[x.id] then
                seen[x.id] = true
                list[#list + 1] = x
            end
        end
    end
    table.sort(list, function(a, b) return a.id < b.id end)
    return list
end

-- A permutation says something only of values that are mostly distinct (a
-- mask's or a one-hot's 0s and 1s are permutations of any other's).
local function mostly_distinct(v)
    local seen, n = {}, 0
    for i = 1, #v do
        local x = v[i] ~= v[i] and "nan" or v[i]      -- NaN is no table key
        if not seen[x] then seen[x] = true n = n + 1 end
    end
    return n > #v / 2
end

-- MINE a permutation of REF's elements (sorted values equal), not equal.
local function permuted(m, r, rtol, atol)
    local a, b = {}, {}
    for i = 1, #m do a[i], b[i] = m[i], r[i] end
    local function key(x) return x ~= x and math.huge or x end
    table.sort(a, function(p, q) return key(p) < key(q) end)
    table.sort(b, function(p, q) return key(p) < key(q) end)
    return (close(a, b, rtol, atol))
end

-- Heads are split or merged on the way to R: a 4-D tensor reshaped,
-- transposed or rearranged among the ops behind it (heads_scrambled's premise).
local function has_heads(R)
    for _, node in ipairs(reachable(ref.nodes, R.id)) do
        local four = node.out:dim() >= 4 or (node.inputs[1] and node.inputs[1].t:dim() >= 4)
        if four and (reshaping[node.op] or node.op == "transpose" or node.op == "permute" or node.op == "rearrange") then
            return true
        end
    end
    return false
end

local function diagnose(R, M, label, names_differ)
    local rtol, atol = math.max(opt.rtol, 1e-3), math.max(opt.atol, 1e-4)
    local found, kinds = {}, {}
    local mv = values(M.t)
    -- within the hypotheses' looser tolerance MINE is REF: rounding, no mistake
    if same_shape(R.t, M.t) and (close(mv, values(R.t), rtol, atol)) then return found end
    ref.all = ref.all or { projection_inputs = projection_inputs(ref.nodes), attention_scales = attention_scales(ref.graph) }
    for _, h in ipairs(hypotheses(R, ref.nodes, ref.all, label)) do
        if not kinds[h.kind] then
            local ok, cand = pcall(function() return replayer(ref.nodes, h.mods)(R.id, R.t) end)
            if ok and cand and cand.dim and same_shape(cand, M.t) and cand:dtype() == M.t:dtype()
                    and (close(mv, values(cand), rtol, atol))
                    and not (same_shape(cand, R.t) and (close(values(cand), values(R.t), rtol, atol))) then
                kinds[h.kind] = true
                found[#found + 1] = { kind = h.kind, message = h.message }
            end
        end
    end
    -- cross-attention's K/V source is the premise of kv_source: another mistake that fits is the one
    if #found > 1 then
        local kept = {}
        for _, f in ipairs(found) do if f.kind ~= "kv_source" then kept[#kept + 1] = f end end
        found = kept
    end
    if #found == 0 and same_shape(R.t, M.t) and M.t:dtype() == "float32"
            and mostly_distinct(mv) and permuted(mv, values(R.t), rtol, atol) then
        found[#found + 1] = { kind = "heads_scrambled", message = has_heads(R) and
            ("your values are the reference's, in other places: heads merged by reshape without the transpose, "
            .. "or split the wrong way; split with view(B, N, H, Dh):transpose(2, 3) and merge with "
            .. "transpose(2, 3):reshape(B, N, H*Dh) (or tt.rearrange)")
            or ("your values are the reference's, in other places: a view or reshape where the reference swaps dims "
            .. "(view keeps the memory order; transpose and permute move the values)") }
    end
    return found
end

-- ===== One script against the reference =====

local function read_lines(path)
    local lines = {}
    local f = io.open(path, "r")
    if not f then return lines end
    for l in f:lines() do lines[#lines + 1] = l end
    f:close()
    return lines
end

-- Each label's checkpoints in the order they were given (a label given in
-- a loop: one a step), each numbered c.k; and the labels in the order they
-- first came.
local function by_label(run)
    local order, by = {}, {}
    for _, c in ipairs(run.checkpoints) do
        if not by[c.label] then
            by[c.label] = {}
            order[#order + 1] = c.label
        end
        local list = by[c.label]
        list[#list + 1] = c
        c.k = #list
    end
    return order, by
end

local function ordinal(k)
    local tail = (k % 100 >= 11 and k % 100 <= 13) and "th" or ({ "st", "nd", "rd" })[k % 10] or "th"
    return k .. tail
end

local function times(n) return n == 1 and "once" or n == 2 and "twice" or (n .. " times") end

-- The script line that made checkpoint c: its op's line, else the label's.
local function made_at(run, c)
    local node = run.nodes[c.id]
    if node and node.line and node.line > 0 and node.file == c.file then return node.file, node.line end
    return c.file, c.line
end

local function trim(s) return (s:gsub("^%s+", ""):gsub("%s+$", "")) end
-- Where MINE's wrong values begin, upstream of checkpoint M: walking back
-- from M through MINE's ops, only into tensors whose values appear nowhere
-- in REF's run (no REF tensor of that shape holds them), the last such op
-- whose inputs all do appear there (or that has none). Ops that only move
-- or rename values (a transpose, say) are taken as their input's values.
-- Nil when M's own op is that op, or no op of MINE's file is found.
local moves_values = { view = true, reshape = true, flatten = true, transpose = true, permute = true, mT = true, t = true,
    named = true, contiguous = true, clone = true, expand = true, unsqueeze = true, squeeze = true }
local function first_wrong(mine, ref, M)
    local by_shape = {}
    local function add(t)
        if t == nil or t:numel() > 65536 then return end
        local key = table.concat(shape_of(t), "x")
        by_shape[key] = by_shape[key] or {}
        table.insert(by_shape[key], { t = t })
    end
    for _, node in pairs(ref.nodes) do
        add(node.out)
        for _, i in ipairs(node.inputs) do add(i.t) end
    end
    for _, c in ipairs(ref.checkpoints) do add(c.t) end
    local seen = {}
    local function in_ref(id, t)
        if seen[id] == nil then
            seen[id] = false
            local node = mine.nodes[id]
            if node and moves_values[node.op] and node.inputs[1] then
                seen[id] = in_ref(node.inputs[1].id, node.inputs[1].t)
            elseif t and t:numel() <= 65536 then
                local v = values(t)
                for _, r in ipairs(by_shape[table.concat(shape_of(t), "x")] or {}) do
                    if r.t:dtype() == t:dtype() then
                        r.v = r.v or values(r.t)
                        if close(v, r.v, opt.rtol, opt.atol) then seen[id] = true break end
                    end
                end
            else
                seen[id] = true     -- too large to look for: no claim about it
            end
        end
        return seen[id]
    end
    local visited = {}
    local function origin(id)
        local node = mine.nodes[id]
        if not node or visited[id] then return nil end
        visited[id] = true
        for _, i in ipairs(node.inputs) do
            if not in_ref(i.id, i.t) then
                local o = origin(i.id)
                if o then return o end
            end
        end
        if moves_values[node.op] then return nil end
        return node
    end
    local o = origin(M.id)
    if o and o.id ~= M.id and o.file == mine.file and o.line and o.line > 0 then return o end
    return nil
end


-- "file:line: message" -> file, line, message
local function error_where(msg)
    local first = msg:match("^[^\n]*")
    local file, line, rest = first:match("^(.-):(%d+): (.*)$")
    line = line and #line <= 9 and math.tointeger(tonumber(line))   -- no script has line 1e20
    if file and line then return file, line, rest end
    return nil, nil, first
end

-- What stopped a script: a limit's message is its own verdict.
local function error_kind(message)
    if message:find("^timeout:") then return "timeout" end
    if message:find("^instruction limit:") then return "instructions" end
    if message:find("not enough memory") or message:find("memory cap") then return "memory" end
    return "error"
end

-- When the ops behind a checkpoint had to go (the script held more tensors
-- at once than the records may keep), no mistake could be replayed: say so.
local function cut_note(mine)
    local who = (ref.cut and mine.cut) and "the reference and your script" or ref.cut and "the reference"
        or mine.cut and "your script"
    if not who then return "" end
    return string.format("; %s held more than %d MB of tensors at once, so the oldest ops behind the checkpoints "
        .. "were let go and could not be replayed (a larger --max-memory keeps more)", who, (ref.kept_mb or mine.kept_mb or 0))
end

-- The names in a line's TODO(a, b) lists, scanned once from left to right
-- (a line of any length costs its length).
local function todo_names(l)
    local names, pos = {}, 1
    while true do
        local s = l:find("TODO(", pos, true)
        if not s then break end
        local e = l:find(")", s + 5, true)
        if not e then break end
        for name in l:sub(s + 5, e - 1):gmatch("[%a_][%w_]*") do names[name] = true end
        pos = e + 1
    end
    return names
end

-- NaN or +inf in MINE where REF has a number: which rows, and the likely
-- cause (a softmax over a row where every key is hidden is 0/0). nil when
-- there is none.
local function nonfinite(R, M, mine)
    local rv, mv, shape = values(R.t), values(M.t), shape_of(M.t)
    if not same_shape(R.t, M.t) then return nil end
    local rows, seen, what = {}, {}, nil
    for i = 1, #mv do
        local m, r = mv[i], rv[i]
        if (m ~= m or m == math.huge) and not (r ~= r or r == m) then
            what = what or (m ~= m and "NaN" or "inf")
            local idx = index_of(i, shape)
            idx[#idx] = nil
            local key = index_str(idx)
            if not seen[key] then
                seen[key] = true
                rows[#rows + 1] = key
            end
        end
    end
    if #rows == 0 then return nil end
    local where = #shape >= 2 and string.format("in %d row%s (%s%s)", #rows, #rows > 1 and "s" or "",
        table.concat(rows, " ", 1, math.min(#rows, 4)), #rows > 4 and " ..." or "") or "in it"
    local cause = "a 0/0, inf - inf, or the log or square root of a negative number makes one"
    -- back to the op whose inputs were all finite: where the first NaN or inf was made
    local function bad(t) return t:dtype() ~= "bool" and (t:ne(t) | t:eq(math.huge)):any():item() end
    local made = producer(mine.nodes, M.id)
    while made do
        local up
        for _, i in ipairs(made.inputs) do
            if bad(i.t) and mine.nodes[i.id] then up = producer(mine.nodes, i.id) break end
        end
        if not up then break end
        made = up
    end
    local x = made and made.inputs[1] and made.inputs[1].t
    if made and made.op == "exp" then
        cause = "exp of a number above 88 is past float32's largest: subtract each row's max before the exp"
    elseif made and made.op == "softmax" and x then
        local full = x:le(-1e4):float():mean(x:dim()):eq(1):any():item()
        if full then
            cause = "every key of such a row is masked, and a softmax over a row of -inf is 0/0: "
                .. "leave each query at least one key it may attend to (its own position, in a causal mask)"
        end
    end
    local line = made and made.file == M.file and made.line or select(2, made_at(mine, M))
    return { kind = "nan", message = string.format("your `%s` has %s %s where the reference has numbers, made on line %s: %s",
        M.label, what, where, line or "?", cause) }
end

-- "3-5, 7" from a sorted list of numbers
local function ranges(list)
    local parts, i = {}, 1
    while list[i] do
        local j = i
        while list[j + 1] == list[j] + 1 do j = j + 1 end
        parts[#parts + 1] = j > i and (list[i] .. "-" .. list[j]) or tostring(list[i])
        i = j + 1
    end
    return table.concat(parts, ", ")
end

-- A mask that differs: the first row where the cells REF hides (-inf or a
-- large negative fill; after a softmax, exact zeros) are not MINE's, in
-- words, with the line of the op that made MINE's mask. nil otherwise.
local function mask_words(R, M, mine)
    if not same_shape(R.t, M.t) or R.t:dim() < 2 then return nil end
    -- softmax's zeros are hidden cells; so are those of a tensor no op of the
    -- graph made (tt.sdpa's weights) where REF's are softmax's
    local function hidden(run, id, t, unknown)
        local made = producer(run.nodes, id)
        local v = values(t)
        local after_softmax = made and made.op == "softmax" or (not made and unknown)
        for i = 1, #v do v[i] = after_softmax and v[i] == 0 or (not after_softmax and masked(v[i])) end
        return v, after_softmax
    end
    local rh, ref_softmax = hidden(ref, R.id, R.t)
    local mh = hidden(mine, M.id, M.t, ref_softmax)
    local shape, cols = shape_of(R.t), R.t:size(R.t:dim())
    for row = 0, #rh // cols - 1 do
        local shown, hid = {}, {}
        for c = 1, cols do
            local i = row * cols + c
            if rh[i] and not mh[i] then shown[#shown + 1] = c end
            if mh[i] and not rh[i] then hid[#hid + 1] = c end
        end
        if #shown + #hid > 0 then
            local idx = index_of(row * cols + 1, shape)
            idx[#idx] = nil
            local line
            for _, node in ipairs(reachable(mine.nodes, M.id)) do
                local op = node.op
                if op == "masked_fill" or op == "causal_mask" or op == "tril" or op == "triu" or op == "where" then
                    line = node.file == M.file and node.line or line
                    break
                end
            end
            local parts = {}
            if #shown > 0 then parts[#parts + 1] = "cells the reference hides are visible in yours (row " .. index_str(idx)
                .. ": keys " .. ranges(shown) .. ")" end
            if #hid > 0 then parts[#parts + 1] = "cells the reference shows are hidden in yours (row " .. index_str(idx)
                .. ": keys " .. ranges(hid) .. ")" end
            return table.concat(parts, "; ") .. (line and string.format("; your mask is made on line %d", line) or "")
        end
    end
    return nil
end

local function check(mine)
    local v = { file = mine.file, checkpoints = {}, match = true, output = mine.output, output_bytes = mine.output_bytes }
    local own = {}                       -- a library's labels are no answer
    for _, c in ipairs(mine.checkpoints) do if c.file == mine.file then own[#own + 1] = c end end
    mine.checkpoints = own
    local order, rby = by_label(ref)
    local _, mby = by_label(mine)
    local src = read_lines(mine.file)
    v.total = #ref.checkpoints
    -- REF's k-th `scores` against MINE's k-th, in REF's order
    for _, R in ipairs(ref.checkpoints) do
        local label, k = R.label, R.k
        local n, mine_list = #rby[label], mby[label] or {}
        local M = mine_list[k]
        local cp = { label = label, ok = false, R = R, of = n, occurrence = n > 1 and k or nil,
                     name = n > 1 and string.format("%s #%d", label, k) or label }
        v.checkpoints[#v.checkpoints + 1] = cp
        if M then
            local file, line = made_at(mine, M)
            -- the very tensor of an earlier label: no op made it here, the label's line is where one is missing
            for _, c in ipairs(mine.checkpoints) do
                if c == M then break end
                if c.id == M.id and c.label ~= M.label then
                    file, line = M.file, M.line
                    cp.same_as = c
                    break
                end
            end
            cp.file, cp.line = file, line
            local reason
            local rv, mv = nil, nil
            if not same_shape(R.t, M.t) then
                reason = "shape"
            else
                local rn, mn, names_bad = names_of(R.t), names_of(M.t), false
                for d = 1, R.t:dim() do
                    if rn[d] and rn[d] ~= mn[d] then names_bad = true end
                end
                rv, mv = values(R.t), values(M.t)
                local ok, worst, at = close(mv, rv, opt.rtol, opt.atol)
                cp.max_abs_diff, cp.at = worst, at
                if names_bad then reason = ok and "names" or "names+values"
                elseif R.t:dtype() ~= M.t:dtype() then reason = "dtype"
                elseif not ok then reason = "values" end
            end
            cp.ok = reason == nil
            cp.reason = reason
            cp.M, cp.rv, cp.mv = M, rv, mv
        else
            cp.missing = true
            cp.count = #mine_list          -- > 0: labelled, but fewer times than REF
        end
        if not cp.ok and v.match then
            v.match = false
            v.first = cp
        end
    end
    -- labelled more times than REF: the first extra one is a mismatch too
    for _, label in ipairs(order) do
        local n, mine_list = #rby[label], mby[label] or {}
        if #mine_list > n then
            local M = mine_list[n + 1]
            local file, line = made_at(mine, M)
            local cp = { label = label, ok = false, R = rby[label][n], M = M, extra = true, of = n, occurrence = n + 1,
                         name = string.format("%s #%d", label, n + 1), file = file, line = line, count = #mine_list }
            v.checkpoints[#v.checkpoints + 1] = cp
            if v.match then
                v.match = false
                v.first = cp
            end
        end
    end
    if mine.error then
        local file, line, msg = error_where(mine.error)
        v.error = { file = file or mine.file, line = line, message = msg, full = mine.error, kind = error_kind(msg) }
        if v.match or (v.first and v.first.missing) then
            v.match = false
            v.first = nil
        end
    end
    -- the diagnosis of the first mismatch
    local f = v.first
    if f and (f.extra or (f.missing and f.count > 0)) then
        -- the counts differ: say so, with where MINE gave it (the extra one) or gave it last
        local last = (mby[f.label] or {})[f.extra and f.occurrence or f.count]
        if not f.extra and last then f.file, f.line = made_at(mine, last) end
        f.diagnosis = { { kind = "count", message = string.format(
            "you labelled `%s` %s, the reference %s: %s", f.label, times(f.count), times(f.of),
            f.extra and string.format("the reference has no %s `%s` (line %s gave it)", ordinal(f.occurrence), f.label, f.line or "?")
                or string.format("your %s is missing (the reference's %s is compared with your %s, in order; your last was at line %s)",
                    ordinal(f.occurrence), ordinal(f.occurrence), ordinal(f.occurrence), f.line or "?")) } }
    elseif f and f.missing then
        local todo
        for i, l in ipairs(src) do
            if todo_names(l)[f.label] then todo = i break end
        end
        f.line = todo
        f.file = mine.file
        if todo then
            f.diagnosis = { { kind = "missing", message = string.format("not yet: `%s` is missing — the TODO at line %d", f.label, todo) } }
        else
            f.diagnosis = { { kind = "missing", message = string.format(
                "not yet: `%s` is missing — you never labelled it: add :label(\"%s\") to the tensor that holds it", f.label, f.label) } }
        end
    elseif f then
        local R, M = f.R, f.M
        local found = {}
        if f.reason ~= "names" and f.reason ~= "dtype" then found = diagnose(R, M, f.label) end
        -- PyTorch's 0-based dims are no likely cause where the line names its dims
        local line = f.line and src[f.line] or ""
        for _, d in ipairs(found) do
            for _, op in ipairs { "softmax", "sum", "mean", "max", "min" } do
                if line:find(op .. '%(%s*"') then d.message = d.message:gsub(" %(dims count from 1 here: [^)]*%)", "") end
            end
        end
        if #found == 0 and f.reason == "values" then found = { nonfinite(R, M, mine) } end
        if #found == 0 then
            if f.reason == "shape" then
                local msg = string.format("your `%s` is %s, the reference's %s", f.label, shape_str(M.t), shape_str(R.t))
                if R.t:dim() == M.t:dim() and R.t:dim() >= 2 then
                    for i = 1, R.t:dim() - 1 do
                        for j = i + 1, R.t:dim() do
                            local ok, sw = pcall(function() return R.t:transpose(i, j) end)
                            if ok and same_shape(sw, M.t) and (close(values(M.t), values(sw), opt.rtol, opt.atol)) then
                                msg = msg .. string.format(": yours is the reference with dims %d and %d swapped; transpose(%d, %d) it", i, j, i, j)
                                goto swapped
                            end
                        end
                    end
                    ::swapped::
                end
                found = { { kind = "shape", message = msg } }
            elseif f.reason == "names" or f.reason == "names+values" then
                local rn, mn, parts = names_of(R.t), names_of(M.t), {}
                for d = 1, R.t:dim() do
                    if rn[d] and rn[d] ~= mn[d] then
                        parts[#parts + 1] = string.format("dim %d is %s, the reference's %s", d, mn[d] or "unnamed", rn[d])
                    end
                end
                found = { { kind = "names", message = string.format("your `%s` has other dim names: %s%s", f.label,
                    table.concat(parts, "; "), f.reason == "names+values" and " (and its values differ)" or "") } }
            elseif f.reason == "dtype" then
                found = { { kind = "dtype", message = string.format("your `%s` is %s, the reference's %s", f.label, M.t:dtype(), R.t:dtype()) } }
            elseif mask_words(R, M, mine) then
                found = { { kind = "values", message = mask_words(R, M, mine) .. cut_note(mine) } }
            else
                local idx = index_str(index_of(f.at, shape_of(R.t)))
                local o = first_wrong(mine, ref, M)
                if o and o.line == f.line then o = nil end
                found = { { kind = "values", message = string.format(
                    "no known mistake explains it: the largest difference is at %s (expected %s, yours %s); %d of %d cells differ",
                    idx, num_str(f.rv[f.at]), num_str(f.mv[f.at]), select(4, close(f.mv, f.rv, opt.rtol, opt.atol)), #f.rv)
                    .. (o and string.format("; your values first differ from every one of the reference's at line %d (%s), "
                        .. "before `%s` (line %s)", o.line, o.op, f.label, f.line or "?") or "")
                    .. cut_note(mine) } }
                if o then f.line = o.line end
            end
        end
        f.diagnosis = found
    end
    if f and f.same_as and f.diagnosis and f.diagnosis[1].kind == "values" then
        f.diagnosis[1].message = string.format("your `%s` is the tensor you labelled `%s` (line %s), unchanged: "
            .. "the op between them is missing; ", f.label, f.same_as.label, f.same_as.line or "?") .. f.diagnosis[1].message
    end
    -- the counts differ behind another mismatch (a shape, say): say that too
    if f and f.diagnosis and f.diagnosis[1].kind ~= "count" then
        local n, m = #rby[f.label], #(mby[f.label] or {})
        if m > 0 and m ~= n then
            f.note = string.format("you labelled `%s` %s, the reference %s; each of yours is compared with the reference's "
                .. "of the same rank, in order", f.label, times(m), times(n))
        end
    end
    v.src = src
    return v
end

-- The checkpoints are the labels the exercise asks for: the ones the
-- reference gives in its own file (not in a library it calls), after its
-- "-- ===== your code below =====" line (when it has one) and before its
-- "-- ===== checks =====" (its own tests of the answer).
local function asked(run, lines)
    local from, to = 1, math.huge
    for i, l in ipairs(lines) do
        if l:find("^%s*%-%-%s*=+%s*your code below") then from = i + 1 end
        if l:find("^%s*%-%-%s*=+%s*checks%s*=+") then to = i - 1 break end
    end
    local kept = {}
    for _, c in ipairs(run.checkpoints) do
        if c.file == run.file and c.line >= from and c.line <= to then kept[#kept + 1] = c end
    end
    run.checkpoints = kept
end
-- ===== Re-checks on other inputs =====

-- Where MINE wrote a size as a number: the default of a varied name (or
-- its square root) as a literal below the marked line, on a line REF does
-- not have as it is (REF's own constants, such as ALiBi's 2^(-8h/H), are
-- no size). A sentence and its line, or nil.
local function hardcoded(file, spec, ref_file)
    local lines, above = read_lines(file), 0
    for i, l in ipairs(lines) do if l:find(MARK) then above = i break end end
    local refs = {}
    for _, l in ipairs(ref_file and read_lines(ref_file) or {}) do refs[l:gsub("%-%-.*$", ""):match("^%s*(.-)%s*$")] = true end
    for _, nv in ipairs(parse_variant(spec) or {}) do
        local name, default = nv[1], nil
        for i = 1, above do
            local names, values = lines[i]:match("^%s*local%s+([%a_][%w_%s,]*)=%s*([^%-]*)")
            local ns, vs = {}, {}
            for n in (names or ""):gmatch("[%a_][%w_]*") do ns[#ns + 1] = n end
            for v in (values or ""):gmatch("[^,]+") do vs[#vs + 1] = v:match("^%s*(.-)%s*$") end
            for k, n in ipairs(ns) do if n == name and tonumber(vs[k]) then default = vs[k] end end
        end
        if default then
            local root = math.sqrt(tonumber(default))
            local shown = { { default, "" } }
            if root == math.floor(root) and root > 1 then shown[2] = { string.format("%d", root), " = √" .. name } end
            for i = above + 1, #lines do
                local code = lines[i]:gsub("%-%-.*$", "")
                for _, lit in ipairs(shown) do
                    if not refs[code:match("^%s*(.-)%s*$")] and code:find("%f[%w_.]" .. lit[1]:gsub("%p", "%%%0") .. "%f[^%w_.]") then
                        return string.format("on line %d you wrote %s%s; %s is %s only for these inputs: write %s",
                            i, lit[1], lit[2], name, default, lit[2] ~= "" and ("math.sqrt(" .. name .. ")") or name), i
                    end
                end
            end
        end
    end
    return nil
end

local function variant_info(spec)
    local sizes, seed = obj({}, {}), nil
    for _, nv in ipairs(parse_variant(spec) or {}) do
        if nv[1] == "seed" then seed = math.tointeger(tonumber(nv[2])) or tonumber(nv[2])
        else
            sizes.__keys[#sizes.__keys + 1] = nv[1]
            sizes[nv[1]] = math.tointeger(tonumber(nv[2])) or tonumber(nv[2])
        end
    end
    return sizes, seed
end

-- After a match, the same check on the inputs REF declares (its
-- `-- recheck:` line): v.rechecks, and at the first that fails v.match =
-- false and v.recheck_failed = {spec, verdict, hint, hint_line}.
local ref_variants = {}
local function recheck(mine, v)
    if opt.variant or not opt.recheck then return end
    local specs = variants_of(table.concat(read_lines(ref.file), "\n"))
    if #specs == 0 then return end
    v.rechecks = {}
    for _, spec in ipairs(specs) do
        local r = ref_variants[spec]
        if r == nil then
            r = opt.recheck(spec, ref.file, true)
            if r.checkpoints then asked(r, read_lines(r.file)) end
            ref_variants[spec] = r
        end
        local sizes, seed = variant_info(spec)
        local entry = { variant = spec, sizes = sizes, seed = seed }
        v.rechecks[#v.rechecks + 1] = entry
        local m = r.checkpoints and not r.error and #r.checkpoints > 0 and opt.recheck(spec, mine.file, false)
        if not m or not m.checkpoints then
            entry.skipped = not m and ("the reference on these inputs: " .. tostring(r.error or "no checkpoint"))
                or m.error
        else
            local saved = ref
            ref = r
            local rv = check(m)
            ref = saved
            entry.match = rv.match
            if not rv.match then
                v.match = false
                local hint, hint_line = hardcoded(mine.file, spec, ref.file)
                v.recheck_failed = { spec = spec, verdict = rv, hint = hint, hint_line = hint_line }
                break
            end
        end
    end
end

-- The failed re-check in a sentence, and the command that replays it.
local function recheck_words(v)
    local rf, rv = v.recheck_failed, v.recheck_failed.verdict
    local what
    if rv.first then
        local d = rv.first.diagnosis[1]
        what = string.format("`%s` (line %s): %s%s", rv.first.name, rv.first.line or "?",
            d.kind == "missing" and "" or (d.kind .. " — "), d.message)
    elseif rv.error then
        what = string.format("%s at line %s: %s", rv.error.kind, rv.error.line or "?", rv.error.message)
    end
    local msg = string.format("matches for the inputs above the marked line, not for %s: %s%s", rf.spec, what or "?",
        rf.hint and ("; " .. rf.hint) or "")
    local replay = opt.exercise and string.format("tensortrace --exercise %s --recheck '%s'", v.file, rf.spec)
        or string.format("tensortrace --compare %s %s --recheck '%s'", ref.file, v.file, rf.spec)
    return msg, replay, rv
end

-- ===== Output =====

-- The verdict's score: REF's checkpoints that match, of all of them.
local function score(v)
    local ok = 0
    for _, c in ipairs(v.checkpoints) do if c.ok and not c.extra then ok = ok + 1 end end
    return ok, #ref.checkpoints
end

-- What a verdict is, in a word: match, fail, or what stopped the script.
local function outcome(v)
    return v.match and "match" or (not v.first and v.error) and v.error.kind or "fail"
end

local function json_str(s)
    s = utf8_clean(s, function() return "\u{FFFD}" end)    -- JSON is UTF-8: a stray byte becomes U+FFFD
    return '"' .. s:gsub('[%c"\\\127]', function(c)
        local e = { ['"'] = '\\"', ['\\'] = '\\\\', ['\n'] = '\\n', ['\t'] = '\\t', ['\r'] = '\\r' }
        return e[c] or string.format("\\u%04x", c:byte())
    end) .. '"'
end

local function json(v)
    local t = type(v)
    if v == nil then return "null"
    elseif t == "boolean" then return tostring(v)
    elseif t == "number" then
        if v ~= v or v == math.huge or v == -math.huge then return "null" end
        if math.type(v) == "integer" then return tostring(v) end
        return string.format("%.9g", v)
    elseif t == "string" then return json_str(v)
    elseif v.__array then
        local parts = {}
        for i = 1, v.n or #v do parts[i] = json(v[i]) end
        return "[" .. table.concat(parts, ",") .. "]"
    else
        local parts = {}
        for _, k in ipairs(v.__keys) do
            parts[#parts + 1] = json_str(k) .. ":" .. json(v[k])
        end
        return "{" .. table.concat(parts, ",") .. "}"
    end
end


local function verdict_json(v)
    local cps = arr {}
    for i, c in ipairs(v.checkpoints) do
        cps[i] = obj({ "label", "occurrence", "ok", "line" }, { label = c.label, occurrence = c.occurrence, ok = c.ok, line = c.line })
    end
    local ok, total = score(v)
    local o = obj({ "file", "match", "verdict", "score", "total", "checkpoints", "first", "diagnosis", "error", "rechecks", "output" },
        { file = v.file, match = v.match, verdict = outcome(v), score = ok, total = total, checkpoints = cps })
    local f = v.first
    if f then
        local first = obj({ "label", "occurrence", "file", "line", "expected_shape", "got_shape", "max_abs_diff", "index", "note" }, {
            label = f.label, occurrence = f.occurrence, file = f.file, line = f.line, note = f.note,
            expected_shape = arr(shape_of(f.R.t)),
            got_shape = f.M and arr(shape_of(f.M.t)) or nil,
            max_abs_diff = f.max_abs_diff, index = f.at and arr(index_of(f.at, shape_of(f.R.t))) or nil })
        o.first = first
        local d = arr {}
        for i, x in ipairs(f.diagnosis) do d[i] = obj({ "kind", "message" }, { kind = x.kind, message = x.message }) end
        o.diagnosis = d
    elseif v.error then
        local stopped
        for _, c in ipairs(v.checkpoints) do if not c.ok then stopped = c.label break end end
        o.first = obj({ "label", "file", "line" }, { label = stopped, file = v.error.file, line = v.error.line })
        o.diagnosis = arr { obj({ "kind", "message" }, { kind = v.error.kind, message = v.error.message }) }
    end
    if v.error then o.error = obj({ "file", "line", "kind", "message" }, v.error) end
    o.output = v.output
    if v.rechecks then
        local list = arr {}
        for k, r in ipairs(v.rechecks) do
            list[k] = obj({ "variant", "seed", "sizes", "match", "skipped" }, r)
        end
        o.rechecks = list
    end
    if v.recheck_failed then
        local msg, replay, rv = recheck_words(v)
        local rf = rv.first
        o.first = obj({ "label", "file", "line" }, { label = rf and rf.label, file = v.file,
            line = v.recheck_failed.hint_line or (rf and rf.line) })
        o.diagnosis = arr { obj({ "kind", "message", "replay" }, { kind = "other_inputs", message = msg, replay = replay }) }
    end
    local keys = {}   -- "first", "diagnosis" and "error" only when there is one
    for _, k in ipairs(o.__keys) do
        if o[k] ~= nil or k == "match" then keys[#keys + 1] = k end
    end
    o.__keys = keys
    return json(o)
end

local function source_line(v, line)
    local s = line and v.src[line]
    return s and trim(s) or ""
end

-- expected | yours | difference at the 2-D slice of the worst cell
local function figure(v, path)
    local f = v.first
    if not (f and f.R and f.M and f.at and same_shape(f.R.t, f.M.t)) then return false end
    local r, m = f.R.t:float(), f.M.t:float()
    local idx = index_of(f.at, shape_of(r))
    local where = {}
    while r:dim() > 2 do
        where[#where + 1] = tostring(idx[#where + 1])
        r, m = r:select(1, idx[#where]), m:select(1, idx[#where])
    end
    if r:dim() == 1 then r, m = r:unsqueeze(1), m:unsqueeze(1) end
    if r:dim() == 0 then r, m = r:reshape(1, 1), m:reshape(1, 1) end
    local rm, mm = r:le(-1e4), m:le(-1e4)
    -- weights: a softmax's exact 0 is a masked key (-inf before it)
    local made = producer(ref.nodes, f.R.id)
    if made and made.op == "softmax" then rm, mm = rm | r:eq(0), mm | m:eq(0) end
    -- the difference is hatched where both sides are masked, and for scores
    -- where either is (-inf against a number has no difference to draw;
    -- the two panels show which side hid it)
    local both = (made and made.op == "softmax") and (rm & mm) or (rm | mm)
    local diff = (m - r):masked_fill(both, 0)
    local hide = tt.stack({ rm, mm, both }, 1)
    local slice = #where > 0 and ("[" .. table.concat(where, ",") .. ",:,:]") or ""
    -- the PNG's Source chunk records the calling line: called from a chunk
    -- named after your file, with the call on your line of the mismatch
    local heatmap = tt.heatmap
    if f.file and f.line then
        heatmap = load(string.rep("\n", f.line - 1) .. "return tt.heatmap(...)", "@" .. f.file, "t", { tt = tt })
    end
    heatmap(tt.stack({ r:masked_fill(rm, 0), m:masked_fill(mm, 0), diff }, 1), path, {
        title = string.format("%s%s: expected | yours | difference (yours - expected)", f.label, slice),
        panel_titles = { "expected (reference)", "yours", "difference" },
        mask = hide,
        cmap = "diverging",
    })
    return true
end

-- What the script printed, quoted line by line under its verdict: its
-- output, never a line of the verdict.
local function print_output(v)
    if not v.output then return end
    local lines = {}
    for l in (v.output .. "\n"):gmatch("([^\n]*)\n") do lines[#lines + 1] = l end
    if lines[#lines] == "" then lines[#lines] = nil end
    out(string.format("\n  your script printed%s:\n", v.output_bytes > #v.output
        and string.format(" (the first %d of %d bytes)", #v.output, v.output_bytes) or ""))
    for i = 1, math.min(#lines, 20) do out("  | " .. lines[i] .. "\n") end
    if #lines > 20 then out(string.format("  | ... (%d more lines)\n", #lines - 20)) end
end

local function print_verdict(v)
    print_output(v)
    local w = 0
    for _, c in ipairs(v.checkpoints) do w = math.max(w, #c.name) end
    for _, c in ipairs(v.checkpoints) do
        local mark = c.ok and "✓" or (c.missing and "·" or "✗")
        local note = c.missing and (c.count and c.count > 0 and string.format("(you labelled it %s)", times(c.count)) or "(not labelled yet)")
            or c.extra and string.format("line %s (the reference labels it %s)", c.line or "?", times(c.of))
            or (c.line and ("line " .. c.line) or "")
        if c == v.first then note = note .. "   <- first mismatch" end
        out(string.format("  %s %-" .. w .. "s  %s\n", mark, c.name, note))
    end
    local f = v.first
    if v.match then
        out(string.format("✓ all %d checkpoints match\n", #v.checkpoints))
        if v.rechecks then
            local tried = {}
            for k, r in ipairs(v.rechecks) do tried[k] = r.variant .. (r.skipped and " (skipped)" or "") end
            out(string.format("✓ and on other inputs: %s\n", table.concat(tried, "; ")))
        end
        return
    end
    if v.recheck_failed then
        local msg, replay, rv = recheck_words(v)
        out(string.format("\n✗ %s\n", msg))
        local line = rv.first and rv.first.line or (rv.error and rv.error.line)
        if v.recheck_failed.hint then line = v.recheck_failed.hint_line end
        if line then out(string.format("  %4d | %s\n", line, source_line(v, line))) end
        out("  replay it: " .. replay .. "\n")
        return
    end
    if v.error and not f then
        out(string.format("\n✗ your script stopped with an error at %s:%s\n", v.error.file, v.error.line or "?"))
        if v.error.line then out(string.format("  %4d | %s\n", v.error.line, source_line(v, v.error.line))) end
        out("  " .. v.error.message .. "\n")
        local reached = 0
        for _, c in ipairs(v.checkpoints) do if c.ok then reached = reached + 1 end end
        out(string.format("  (%d of %d checkpoints matched before it)\n", reached, #v.checkpoints))
        return
    end
    if f.missing or f.extra then
        out("\n" .. ((f.extra or f.count > 0) and "✗ " or "") .. f.diagnosis[1].message .. "\n")
        if f.line then out(string.format("  %4d | %s\n", f.line, source_line(v, f.line))) end
        return
    end
    out(string.format("\n✗ `%s` does not match (%s:%d)\n", f.name, f.file or v.file, f.line or 0))
    if f.line then out(string.format("  %4d | %s\n", f.line, source_line(v, f.line))) end
    out(string.format("  expected %s %s   yours %s %s\n", shape_str(f.R.t), f.R.t:dtype(), shape_str(f.M.t), f.M.t:dtype()))
    if f.at then
        out(string.format("  max |diff| %s at %s (expected %s, yours %s)\n", num_str(f.max_abs_diff),
            index_str(index_of(f.at, shape_of(f.R.t))), num_str(f.rv[f.at]), num_str(f.mv[f.at])))
    end
    if #f.diagnosis > 1 then out(string.format("  %d explanations fit; either may be it:\n", #f.diagnosis)) end
    for _, d in ipairs(f.diagnosis) do out(string.format("  %s: %s\n", d.kind, d.message)) end
    if f.note then out("  note: " .. f.note .. "\n") end
    if v.error then out(string.format("  (then the script stopped with an error at line %s: %s)\n", v.error.line or "?", v.error.message)) end
end

-- one line per file, for a teacher's folder of submissions, its score last
local function print_line(v)
    local ok, total = score(v)
    local tail = string.format(" [%d/%d]\n", ok, total)
    if v.match then
        out(string.format("%s: ✓ all %d checkpoints match%s%s", v.file, #v.checkpoints,
            v.rechecks and string.format(" (and on %d other inputs)", #v.rechecks) or "", tail))
    elseif v.recheck_failed then
        local msg, replay = recheck_words(v)
        out(string.format("%s: ✗ %s (replay: %s)%s", v.file, msg, replay, tail))
    elseif v.first then
        local d = v.first.diagnosis[1]
        out(string.format("%s: ✗ %s (line %s): %s%s%s", v.file, v.first.name, v.first.line or "?",
            d.kind == "missing" and "" or (d.kind .. " — "), d.message .. (v.first.note and ("; " .. v.first.note) or ""), tail))
    else
        out(string.format("%s: ✗ %s at line %s: %s%s", v.file, v.error.kind, v.error.line or "?",
            (v.error.message:gsub("^timeout: ", "")), tail))
    end
end

-- A CSV field: quoted, quotes doubled, one line, valid UTF-8.
local function csv_field(x)
    if x == nil then return "" end
    if math.type(x) == "integer" then return tostring(x) end
    local s = utf8_clean(tostring(x), function() return "\u{FFFD}" end):gsub("[%c]", " ")
    return '"' .. s:gsub('"', '""') .. '"'
end

local CSV_HEADER = "file,verdict,score,total,label,line,kind,message\n"

local function csv_row(v)
    local ok, total = score(v)
    local f, d = v.first, nil
    if f then d = f.diagnosis[1] elseif v.error then d = { kind = v.error.kind, message = v.error.message } end
    local fields = { v.file, outcome(v), ok, total, f and f.label, f and f.line or (v.error and v.error.line),
                     d and d.kind, d and d.message }
    for i = 1, 8 do fields[i] = csv_field(fields[i]) end
    return table.concat(fields, ",") .. "\n"
end

-- ===== Main =====

if ref.error then
    out(string.format("the reference %s failed: %s\n", ref.file, ref.error))
    return 2, {}
end
if #ref.checkpoints == 0 then
    out(string.format("the reference %s labels no tensor: nothing to compare (x:label(\"name\") makes a checkpoint)\n", ref.file))
    return 2, {}
end

asked(ref, read_lines(ref.file))
if #ref.checkpoints == 0 then
    out(string.format("the reference %s labels no tensor where the exercise's answer goes: nothing to compare\n", ref.file))
    return 2, {}
end

local verdicts, results, code = {}, {}, 0
for i, mine in ipairs(mines) do
    if mine.missing then
        out(string.format("%s: cannot read it: %s\n", mine.file, mine.error))
        verdicts[i] = { file = mine.file, match = false, checkpoints = {}, error = { file = mine.file, message = mine.error, kind = "error" } }
        code = math.max(code, 1)
    else
        verdicts[i] = check(mine)
        if verdicts[i].match then recheck(mine, verdicts[i]) end
        if #mines == 1 and not opt.one_line then print_verdict(verdicts[i]) else print_line(verdicts[i]) end
    end
    results[i] = verdicts[i].match
    if not verdicts[i].match then code = math.max(code, 1) end
end
-- each verdict in a word and its score, for the batch's summary line
local scores = {}
for i, v in ipairs(verdicts) do
    local ok, total = score(v)
    scores[i] = { outcome = outcome(v), ok = ok, total = total }
end

-- Each verdict as a line of path (appended by a batch's children): its
-- header first in a new file. false when path cannot be written.
local function write_lines(path, header, line_of)
    local f, err = io.open(path, opt.json_append and "a" or "w")
    if not f then
        io.stderr:write("tensortrace: cannot write '" .. path .. "': " .. tostring(err) .. "\n")
        return false
    end
    if header and f:seek("end") == 0 then f:write(header) end
    for _, v in ipairs(verdicts) do f:write(line_of(v)) end
    f:close()
    return true
end
if opt.csv and not write_lines(opt.csv, CSV_HEADER, csv_row) then return 2, results end
if opt.json and not write_lines(opt.json, nil, function(v) return verdict_json(v) .. "\n" end) then return 2, results end
local fig = opt.figure
if not fig and opt.report and #verdicts == 1 and verdicts[1].first then
    local tmp = os.tmpname()
    os.remove(tmp)
    fig = tmp .. ".png"
end
if fig and #verdicts >= 1 then
    local ok, drawn = pcall(figure, verdicts[1], fig)
    if not ok then
        -- the message without the position the figure's call was given
        io.stderr:write("tensortrace: --compare-figure: " .. tostring(drawn):gsub("^[^\n]-:%d+: ", "") .. "\n")
        return 2, results
    elseif drawn and opt.figure then
        out(string.format("  figure: %s\n", fig))
    elseif not drawn and opt.figure and not verdicts[1].match then
        out("  (no figure: the shapes differ or the tensor is missing)\n")
    end
    if fig ~= opt.figure then os.remove(fig) end
end
-- the verdict in one line (for the report's header)
local summary
if #verdicts == 1 and not verdicts[1].match then
    local v = verdicts[1]
    if v.first then
        summary = string.format("the check failed at `%s` (line %s): %s", v.first.label, v.first.line or "?", v.first.diagnosis[1].kind)
    elseif v.error then
        summary = string.format("the check stopped: an error at line %s: %s", v.error.line or "?", v.error.message)
    end
end
return code, results, summary, scores
