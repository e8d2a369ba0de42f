#!/usr/bin/python3
"""difftest_half.py: tensortrace's 16-bit results against float64 (a dev tool).

Random cases in bfloat16 and float16, sizes 0 and 1 included:
log_softmax, std and var with their gradients; tt.rope forward and
backward; tt.dropout (its mask is tt's own generator's, so the check is
the kept fraction against p, and every value given the mask); and every
tt.nn module (Linear, Embedding, LayerNorm, RMSNorm, Dropout, FeedForward,
Attention, Block, with rope and dropout) under tt.autocast, forward and
gradients. The reference is float64 torch on the same values, with the
16-bit rounding modelled where tt rounds: an op's result is rounded once
(so tt must be within half a unit in the last place of the float64 value,
plus float32's own error); the modules, whose matmuls take 16-bit operands,
must be within 8 units (of the dtype, relative to the output's scale).
PyTorch's own 16-bit results are measured against the same reference and
shown beside tt's.

    /usr/bin/python3 tests/diff/difftest_half.py --n 300 --seed 1
    (make difftest runs it after difftest.py)
"""
import argparse
import collections
import math
import os
import random
import struct
import subprocess
import sys

import torch
import torch.nn.functional as F

FMT = {"bfloat16": (8, -126, torch.bfloat16), "float16": (11, -14, torch.float16)}
F32_EPS = 2.0 ** -21          # float32's own error inside an op, relative to the values' scale


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def quantum(dt, a):
    """the spacing of dtype dt's values at |a|"""
    p, emin, _ = FMT[dt]
    a = abs(a)
    e = math.frexp(a)[1] - 1 if a > 0 else emin
    return 2.0 ** (max(e, emin) - (p - 1))


def round16(dt, x):
    """x rounded to dt from float64 directly: nearest, ties to even"""
    if not math.isfinite(x):
        return x
    q = quantum(dt, x)
    m = abs(x) / q
    r = math.floor(m)
    if m - r > 0.5 or (m - r == 0.5 and r % 2 == 1):
        r += 1
    v = math.copysign(r * q, x)
    top = {"bfloat16": float.fromhex("0x1.ffp127"), "float16": 65520.0}[dt]   # max + half an ulp
    return math.copysign(math.inf, x) if abs(v) >= top else v


def round_t(dt, t):
    """a float64 tensor's values rounded to dt (float64 out)"""
    return torch.tensor([round16(dt, float(v)) for v in t.reshape(-1)], dtype=torch.float64).reshape(t.shape)


def exact16(dt, vals):
    return [round16(dt, v) for v in vals]


def num(x):
    if x != x:
        return "(0/0)"
    if math.isinf(x):
        return "math.huge" if x > 0 else "(-math.huge)"
    return repr(float(x))


def lua_tensor(vals, shape, dtype="float32"):
    body = "{" + ",".join(num(v) for v in vals) + "}"
    t = 'tt.tensor(%s, "%s")' % (body, dtype) if vals else 'tt.zeros(0, "%s")' % dtype
    return t + ":reshape({%s})" % ",".join(str(s) for s in shape)


def numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


class Case:
    def __init__(self, cid, group, dt):
        self.cid, self.group, self.dt = cid, group, dt
        self.lua = []
        self.outs = []        # names emitted, in order

    def emit(self, name, expr):
        self.lua.append("E(%d, %r, %s)" % (self.cid, name, expr))
        self.outs.append(name)

    def run_op(self, op, before=()):
        """x (self.x as self.dt, shaped self.shape) -> y = op (Lua, of x),
        the loss sum(y * w) (w: self.w, y flattened) and its backward; y and
        x's gradient emitted"""
        self.lua += ["local x = %s:to(%r):requires_grad_()" % (lua_tensor(self.x, self.shape), self.dt)]
        self.lua += list(before) + ["local y = " + op,
                                    "local l = (y:float():reshape(-1) * %s):sum()" % lua_tensor(self.w, [len(self.w)]),
                                    "l:backward()"]
        self.emit("y", "y")
        self.emit("grad", "x.grad")

    def tensors(self):
        """x and w as float64 torch tensors (w flat)"""
        return torch.tensor(self.x, dtype=torch.float64).reshape(self.shape), torch.tensor(self.w, dtype=torch.float64)


# ===== the cases: each writes Lua and keeps what its check needs

def case_log_softmax(rng, c):
    shape = [rng.choice([0, 1, 1, 3]), rng.choice([0, 1, 2, 5, 37])]
    d = rng.choice([1, 2])
    c.x = exact16(c.dt, [rng.gauss(0, 3) for _ in range(numel(shape))])
    c.w = [rng.randrange(-8, 9) / 8 for _ in range(numel(shape))]
    c.shape, c.d = shape, d
    c.run_op("x:log_softmax(%d)" % d)


def check_log_softmax(c, got):
    x, w = c.tensors()
    w = w.reshape(c.shape)
    y = torch.log_softmax(x, c.d - 1)
    g = w - torch.exp(round_t(c.dt, y)) * w.sum(c.d - 1, keepdim=True)
    y16, g16 = torch16(lambda t: torch.log_softmax(t, c.d - 1), x, w, c.dt)
    return [("y", got["y"], y, y16, 0.5), ("grad", got["grad"], g, g16, 0.5)]


def case_std_var(rng, c):
    shape = [rng.choice([1, 2, 4]), rng.choice([0, 1, 2, 7, 30])]
    c.op = rng.choice(["std", "var"])
    c.d = rng.choice([None, 1, 2])
    base = rng.choice([0.0, 1.0, 100.0])    # values near a large mean: the mean's rounding matters
    c.x = exact16(c.dt, [base + rng.gauss(0, 1) for _ in range(numel(shape))])
    c.shape = shape
    outn = 1 if c.d is None else numel(shape) // shape[c.d - 1] if shape[c.d - 1] else shape[2 - c.d]
    c.w = [rng.randrange(-8, 9) / 8 for _ in range(outn)]
    c.run_op("x:%s(%s)" % (c.op, "" if c.d is None else str(c.d)))


def check_std_var(c, got):
    x, w = c.tensors()
    dims = None if c.d is None else c.d - 1
    fn = torch.std if c.op == "std" else torch.var
    y = fn(x) if dims is None else fn(x, dims)
    n = x.numel() if dims is None else x.shape[dims]
    mean = x.mean() if dims is None else x.mean(dims, keepdim=True)
    wk = w.reshape(()) if dims is None else w.reshape(y.shape).unsqueeze(dims)
    if c.op == "var":
        g = wk * 2 * (x - mean) / (n - 1) if n > 1 else x * math.nan
    else:
        yr = round_t(c.dt, y)
        yk = yr if dims is None else yr.unsqueeze(dims)
        g = wk * (x - mean) / ((n - 1) * yk) if n > 1 else x * math.nan
        g = torch.where(yk == 0, torch.zeros_like(g), g) if n > 1 else g
    y16, g16 = torch16(lambda t: fn(t) if dims is None else fn(t, dims), x, w, c.dt)
    # float32's error in x - mean is relative to |x|, not to x - mean: the
    # gradient's float32 error is up to about 2^-21 |x| times g / (x - mean)
    per = (g / (x - mean)).abs()
    per = per[torch.isfinite(per)]
    slack = float(x.abs().max()) * float(per.max()) if per.numel() else 0.0
    return [("y", got["y"], y, y16, 0.5), ("grad", got["grad"], g, g16, ("once", slack))]


def torch16(fn, x, w, dt):
    """PyTorch's own 16-bit result and gradient (loss sum(fn(x) * w)), or
    Nones where this torch has no 16-bit CPU kernel for it"""
    try:
        x16 = x.to(FMT[dt][2]).requires_grad_()
        y16 = fn(x16)
        (y16.double().reshape(-1) * w.reshape(-1)).sum().backward()
        return y16, x16.grad
    except RuntimeError:
        return None, None


def rope_ref(x, pos, base, interleaved):
    """x [..., N, D] float64 turned by pos [N]"""
    d = x.shape[-1]
    h = d // 2
    out = x.clone()
    for i in range(h):
        ang = pos * base ** (-2 * i / d)
        ia, ib = (2 * i, 2 * i + 1) if interleaved else (i, i + h)
        a, b = x[..., ia], x[..., ib]
        out[..., ia] = a * torch.cos(ang) - b * torch.sin(ang)
        out[..., ib] = b * torch.cos(ang) + a * torch.sin(ang)
    return out


def case_rope(rng, c):
    shape = [rng.choice([1, 2]), rng.choice([0, 1, 5]), rng.choice([2, 8])]
    c.il = rng.random() < 0.5
    c.pos = [float(rng.choice([i, rng.randrange(-50, 500)])) for i in range(shape[1])]
    c.x = exact16(c.dt, [rng.gauss(0, 2) for _ in range(numel(shape))])
    c.w = [rng.randrange(-8, 9) / 8 for _ in range(numel(shape))]
    c.shape = shape
    c.run_op("tt.rope(x, %s, {interleaved = %s})" % (lua_tensor(c.pos, [shape[1]]), "true" if c.il else "false"))


def check_rope(c, got):
    x, w = c.tensors()
    w = w.reshape(c.shape)
    pos = torch.tensor(c.pos, dtype=torch.float64).reshape(-1, 1)[:, 0]
    y = rope_ref(x, pos, 10000.0, c.il)
    g = rope_ref(w, -pos, 10000.0, c.il)       # the gradient turns back
    return [("y", got["y"], y, None, 0.5), ("grad", got["grad"], g, None, 0.5)]


def case_dropout(rng, c):
    c.n = rng.choice([0, 1, 2000])
    c.p = rng.choice([0.0, 0.1, 0.5, 1.0])
    c.x = exact16(c.dt, [rng.gauss(0, 4) for _ in range(c.n)])
    c.w = [rng.randrange(-8, 9) / 8 for _ in range(c.n)]
    seed = rng.randrange(1, 10 ** 6)
    c.shape = [c.n]
    # the same draws on float32 ones: which elements stay
    c.run_op("tt.dropout(x, %r)" % c.p, ["tt.manual_seed(%d)" % seed,
                                          "local kept = tt.dropout(tt.ones(%d), %r):ne(0)" % (c.n, c.p),
                                          "tt.manual_seed(%d)" % seed])
    c.emit("kept", "kept")


def check_dropout(c, got):
    """the mask's statistics, then the values given the mask (x * f32(1/(1-p)) in float32, rounded once)"""
    kept = got["kept"]
    keep = f32(1 / (1 - c.p)) if c.p < 1 else 0.0
    if kept is None or len(kept) != c.n:
        return [("kept", None, torch.zeros(c.n), None, 0)]
    zeros = sum(1 for k in kept if k == 0)
    sd = math.sqrt(c.n * c.p * (1 - c.p))
    stat_ok = abs(zeros - c.n * c.p) <= 4 * sd + 1e-9
    y = [round16(c.dt, f32(v * keep)) if k else 0.0 for v, k in zip(c.x, kept)]
    g = [round16(c.dt, f32(v * keep)) if k else 0.0 for v, k in zip(c.w, kept)]
    try:
        t16 = F.dropout(torch.tensor(c.x).to(FMT[c.dt][2]), c.p)
        tz = "%d" % (int((t16 == 0).sum()) - sum(1 for v in c.x if v == 0))
    except RuntimeError:
        tz = "-"
    out = [("y", got["y"], torch.tensor(y, dtype=torch.float64), None, 0),
           ("grad", got["grad"], torch.tensor(g, dtype=torch.float64), None, 0)]
    c.note = "tt zeroes %d of %d, torch %s (p = %g)" % (zeros, c.n, tz, c.p)
    if not stat_ok:
        out.append(("kept fraction", [1.0], torch.tensor([0.0], dtype=torch.float64), None, 0))
    return out


# ----- the tt.nn modules under autocast: float64 functional twins

def t_rmsnorm(x, P, pre, eps=2.0 ** -23):
    return x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps) * P[pre + "weight"]


def t_layernorm(x, P, pre, eps=1e-5):
    m = x.mean(-1, keepdim=True)
    v = ((x - m) ** 2).mean(-1, keepdim=True)
    return (x - m) / torch.sqrt(v + eps) * P[pre + "weight"] + P[pre + "bias"]


def t_linear(x, P, pre):
    y = x @ P[pre + "weight"].T
    return y + P[pre + "bias"] if pre + "bias" in P else y


def t_ffn(x, P, pre, act):
    if act == "swiglu":
        g = t_linear(x, P, pre + "gate_proj.")
        return t_linear(g * torch.sigmoid(g) * t_linear(x, P, pre + "up_proj."), P, pre + "down_proj.")
    return t_linear(F.gelu(t_linear(x, P, pre + "up_proj.")), P, pre + "down_proj.")


def t_attention(x, P, pre, heads, kv, rope):
    b, n, dim = x.shape
    hd = dim // heads

    def split(t, h):
        return t.reshape(b, n, h, hd).transpose(1, 2)
    q = split(t_linear(x, P, pre + "q_proj."), heads)
    k = split(t_linear(x, P, pre + "k_proj."), kv)
    v = split(t_linear(x, P, pre + "v_proj."), kv)
    if rope:
        pos = torch.arange(n, dtype=x.dtype)
        q, k = rope_ref(q, pos, 10000.0, False), rope_ref(k, pos, 10000.0, False)
    k, v = k.repeat_interleave(heads // kv, 1), v.repeat_interleave(heads // kv, 1)
    s = q @ k.transpose(-1, -2) / math.sqrt(hd)
    s = s.masked_fill(~torch.ones(n, n, dtype=torch.bool).tril(), -math.inf)
    o = (torch.softmax(s, -1) if n else s) @ v
    return t_linear(o.transpose(1, 2).reshape(b, n, dim), P, pre + "o_proj.")


def t_block(x, P, heads, kv, rope, norm, act):
    nf = t_rmsnorm if norm == "rmsnorm" else t_layernorm
    h = x + t_attention(nf(x, P, "attn_norm."), P, "attn.", heads, kv, rope)
    return h + t_ffn(nf(h, P, "ffn_norm."), P, "ffn.", act)


MODULES = {
    "Linear": ("tt.nn.Linear(16, 12)", lambda x, P: t_linear(x, P, "")),
    "Embedding": ("tt.nn.Embedding(10, 16)", None),
    "LayerNorm": ("tt.nn.LayerNorm(16)", lambda x, P: t_layernorm(x, P, "")),
    "RMSNorm": ("tt.nn.RMSNorm(16)", lambda x, P: t_rmsnorm(x, P, "")),
    "Dropout": ("tt.nn.Dropout(0.25):eval()", lambda x, P: x),
    "FeedForward": ("tt.nn.FeedForward(16)", lambda x, P: t_ffn(x, P, "", "gelu")),
    "FeedForward swiglu": ('tt.nn.FeedForward(16, {activation = "swiglu"})', lambda x, P: t_ffn(x, P, "", "swiglu")),
    "Attention GQA": ("tt.nn.Attention(16, 4, {kv_heads = 2})", lambda x, P: t_attention(x, P, "", 4, 2, False)),
    "Attention rope": ("tt.nn.Attention(16, 4, {rope = true})", lambda x, P: t_attention(x, P, "", 4, 4, True)),
    "Block": ("tt.nn.Block(16, 4)", lambda x, P: t_block(x, P, 4, 4, False, "rmsnorm", "swiglu")),
    "Block rope dropout (eval)": ("tt.nn.Block(16, 4, {rope = true, dropout = 0.1}):eval()",
                                  lambda x, P: t_block(x, P, 4, 4, True, "rmsnorm", "swiglu")),
    "Block layernorm gelu rope": ('tt.nn.Block(16, 4, {norm = "layernorm", activation = "gelu", rope = true})',
                                  lambda x, P: t_block(x, P, 4, 4, True, "layernorm", "gelu")),
}


def case_module(rng, c):
    c.mod = rng.choice(sorted(MODULES))
    n = rng.choice([0, 1, 5])
    c.shape = [2, n, 16]
    ctor = MODULES[c.mod][0]
    c.lua += ["tt.manual_seed(%d)" % rng.randrange(1, 10 ** 6), "local m = %s" % ctor]
    if c.mod == "Embedding":
        c.ids = [rng.randrange(1, 11) for _ in range(2 * n)]
        c.lua.append("local x = %s" % lua_tensor(c.ids, [2, n], "int64"))
        outshape = [2, n, 16]
    else:
        c.x = [rng.gauss(0, 1) for _ in range(numel(c.shape))]
        c.lua.append("local x = %s:requires_grad_()" % lua_tensor(c.x, c.shape))
        outshape = [2, n, 12] if c.mod == "Linear" else c.shape
    c.w = [rng.gauss(0, 1) for _ in range(numel(outshape))]
    c.lua += ["local y = tt.autocast(%r, m, x)" % c.dt,
              "local l = (y:float() * %s):sum()" % lua_tensor(c.w, outshape), "l:backward()",
              "local names = {}"]
    c.lua.append("for _, kv in ipairs(m:named_parameters()) do names[#names + 1] = kv[1]; "
                 "E(%d, 'P ' .. kv[1], kv[2]); E(%d, 'G ' .. kv[1], kv[2].grad) end" % (c.cid, c.cid))
    c.emit("y", "y")
    if c.mod != "Embedding":
        c.emit("xgrad", "x.grad")


def check_module(c, got):
    P = {k[2:]: torch.tensor(v, dtype=torch.float64) for k, v in got.items() if k.startswith("P ") and v is not None}
    shapes = {k[2:]: s for k, s in got["shapes"].items() if k.startswith("P ")}
    P = {k: t.reshape(shapes[k]) for k, t in P.items()}
    for t in P.values():
        t.requires_grad_()
    if c.mod == "Embedding":
        ids = torch.tensor(c.ids, dtype=torch.int64).reshape(2, -1) - 1
        y = P["weight"][ids]
    else:
        x = torch.tensor(c.x, dtype=torch.float64).reshape(c.shape).requires_grad_()
        y = MODULES[c.mod][1](x, P)
    w = torch.tensor(c.w, dtype=torch.float64).reshape(y.shape)
    (y * w).sum().backward()
    out = [("y", got["y"], y.detach(), None, ("module", None))]
    if c.mod != "Embedding":
        out.append(("xgrad", got["xgrad"], x.grad, None, ("module", None)))
    # the parameters' against the module's largest gradient: with one token
    # q's and k's are 0 but for rounding
    grads = {k: t.grad if t.grad is not None else torch.zeros_like(t) for k, t in P.items()}
    scale = max([float(g.abs().max()) for g in grads.values() if g.numel()] + [1e-30])
    for k, g in grads.items():
        out.append(("grad " + k, got["G " + k], g, None, ("module", scale)))
    return out


GROUPS = {"log_softmax": (case_log_softmax, check_log_softmax), "std/var": (case_std_var, check_std_var),
          "rope": (case_rope, check_rope), "dropout": (case_dropout, check_dropout),
          "autocast nn": (case_module, check_module)}


LUA_HEAD = r'''
tt.trace.off()
local function E(id, name, t)
  if not t then io.write("R ", id, " ", name, " none\n"); return end
  if t:dtype() == "bool" then t = t:float() end
  local v = t:float():contiguous():reshape(-1):totable()
  for i = 1, #v do v[i] = string.format("%.17g", v[i]) end
  io.write("S ", id, " ", name, " ", table.concat(t:shape(), ","), "\n")
  io.write("R ", id, " ", name, " ", table.concat(v, " "), "\n")
end
'''


def run_tt(cases, tt, path):
    with open(path, "w") as f:
        f.write(LUA_HEAD)
        for c in cases:
            f.write("do local ok, err = pcall(function()\n  %s\nend)\nif not ok then io.write('X %d ', "
                    "(tostring(err):gsub('\\n', ' ')), '\\n') end end\n" % ("\n  ".join(c.lua), c.cid))
    run = subprocess.run([tt, "-q", "--threads", "1", path], capture_output=True, text=True)
    res = collections.defaultdict(lambda: {"shapes": {}})
    for line in run.stdout.split("\n"):
        if line.startswith("X "):
            _, cid, msg = line.split(" ", 2)
            res[int(cid)]["error"] = msg
        elif line.startswith("S ") or line.startswith("R "):
            head, _, body = line[2:].partition(" ")
            cid = int(head)
            name, _, vals = body.rpartition(" ") if line.startswith("S ") else _split_name(body)
            if line.startswith("S "):
                res[cid]["shapes"][name] = [int(s) for s in vals.split(",") if s]
            else:
                res[cid][name] = None if vals == "none" else [float(v) for v in vals.split()]
    if run.returncode != 0:
        print("tensortrace exited %d: %s" % (run.returncode, run.stderr[-2000:]))
    return res


def _split_name(body):
    """'P attn.q_proj.weight 1 2 3' or 'y 1 2': the name is everything before the numbers"""
    if body.endswith(" none"):
        return body[:-5], " ", "none"
    parts = body.split(" ")
    k = 1
    while k < len(parts) and parts[k] and not _is_num(parts[k]):
        k += 1
    return " ".join(parts[:k]), " ", " ".join(parts[k:])


def _is_num(s):
    try:
        float(s)
        return True
    except ValueError:
        return False


def compare(dt, got, want, ulps):
    """(ok, worst error in ulps): got within ulps of dt's spacing at want (float64) plus float32's
    error; "module": within 8 ulps of the output's scale; NaN where want is NaN"""
    if got is None:
        got = [0.0] * want.numel()
    w = want.detach().double().reshape(-1)
    if len(got) != w.numel():
        return False, math.inf
    g = torch.tensor(got, dtype=torch.float64)
    if not torch.equal(torch.isnan(g), torch.isnan(w)):
        return False, math.inf
    fin = torch.isfinite(w)
    if not torch.equal(g[~fin & ~torch.isnan(w)], w[~fin & ~torch.isnan(w)]):
        return False, math.inf
    if not bool(fin.any()):
        return True, 0.0
    gf, wf = g[fin], w[fin]
    scale = float(wf.abs().max())
    if isinstance(ulps, tuple) and ulps[0] == "module":   # 8 units of the dtype at the output's (or given) scale
        u = 2.0 ** (1 - FMT[dt][0])
        err = float((gf - wf).abs().max()) / max(ulps[1] or scale, 1e-30) / u
        return err <= 8, err
    if isinstance(ulps, tuple):      # one rounding, float32's error at the given scale
        ulps, scale = 0.5, max(scale, ulps[1])
    q = torch.tensor([quantum(dt, round16(dt, float(v))) for v in wf], dtype=torch.float64)
    err = (gf - wf).abs()
    return bool((err <= ulps * q + F32_EPS * scale).all()), float((err / q).max())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--tt", default="./tensortrace")
    ap.add_argument("--out", default="build/difftest")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(1)
    os.makedirs(a.out, exist_ok=True)
    rng = random.Random("half:%d" % a.seed)
    cases = []
    names = sorted(GROUPS)
    for i in range(a.n):
        group = names[i % len(names)]
        c = Case(i + 1, group, rng.choice(sorted(FMT)))
        GROUPS[group][0](rng, c)
        cases.append(c)
    res = run_tt(cases, a.tt, os.path.join(a.out, "half.lua"))
    counts = collections.Counter()
    worst = collections.defaultdict(float)
    torch_worst = collections.defaultdict(float)
    failed = []
    for c in cases:
        got = res.get(c.cid)
        key = "%s %s" % (c.group, c.dt)
        counts[key + " cases"] += 1
        if got is None or "error" in got:
            failed.append((c, "tt raised: %s" % (got or {}).get("error", "no output")))
            counts[key + " fail"] += 1
            continue
        try:
            checks = GROUPS[c.group][1](c, got)
        except Exception as ex:            # torch (or the reference) refuses
            failed.append((c, "reference raised: %s" % str(ex).split("\n")[0][:150]))
            counts[key + " fail"] += 1
            continue
        bad = []
        for what, g, want, t16, ulps in checks:
            ok, err = compare(c.dt, g, want, ulps)
            if math.isfinite(err):
                worst[key] = max(worst[key], err)
            if t16 is not None:
                t = t16.detach().double().reshape(-1).tolist()
                _, terr = compare(c.dt, t, want, ulps)
                if math.isfinite(terr) and t16.numel():
                    torch_worst[key] = max(torch_worst[key], terr)
            if not ok:
                bad.append("%s (%.3g ulp)" % (what, err))
        if bad:
            failed.append((c, ", ".join(bad)))
            counts[key + " fail"] += 1
        elif a.verbose and hasattr(c, "note"):
            print("  %s: %s" % (key, c.note))
    for c, why in failed[:30]:
        fn = os.path.join(a.out, "half-case-%d-%d.lua" % (a.seed, c.cid))
        with open(fn, "w") as f:
            f.write(LUA_HEAD + "\n".join(c.lua) + "\n")
        print("FAIL %s %s%s: %s (%s)" % (c.group, c.dt, " " + c.mod if hasattr(c, "mod") else "", why, fn))
    print("%-24s %6s %6s %12s %14s" % ("group", "cases", "fail", "tt worst", "torch16 worst"))
    for key in sorted({k.rsplit(" ", 1)[0] for k in counts}):
        tw = ("%.3g ulp" % torch_worst[key]) if key in torch_worst else "-"
        unit = "u (scale)" if key.startswith("autocast") else "ulp"
        print("%-24s %6d %6d %8.3g %s %14s" % (key, counts[key + " cases"], counts[key + " fail"], worst[key], unit, tw))
    total, nfail = len(cases), len({c.cid for c, _ in failed})
    print("%d 16-bit cases: %d agree, %d fail" % (total, total - nfail, nfail))
    return 1 if nfail else 0


if __name__ == "__main__":
    sys.exit(main())
