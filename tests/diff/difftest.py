#!/usr/bin/python3
"""difftest.py: tensortrace against PyTorch on random programs (a dev tool).

Each program is a chain of differentiable tt ops on small random inputs
(size-1 dims, broadcasting, awkward sizes; transposed, narrowed, permuted
and expanded views of the leaves), ending in the scalar loss
sum over the values left unused of sum(v * w) with fixed weights w. It is
written twice from one description: as a tt Lua function (many per
tensortrace process) and as a torch program run here in float64 on the
same float32 values. The loss, every aux output (indices, sdpa weights) and
every leaf's gradient are compared with float32 tolerances; a case outside
them counts as a failure only if tt is also outside them from torch in
float32 and further from float64 than torch float32 is (ill-conditioned
programs are not tt's fault). Programs where float64 torch itself gives
NaN or inf in the loss are skipped. Some ops run in bfloat16 or float16
(creation, einsum's reductions, promotion with 0-d tensors: op_half),
against float64 with the 16-bit rounding modelled, their result's dtype
compared through its finfo eps.

    /usr/bin/python3 tests/diff/difftest.py --n 100000 --seed 1 --batch 400
    (make difftest N=...)

Failing programs are written to build/difftest/ as runnable Lua and torch
scripts; the summary groups them by the ops they use and by tt's error
message (what torch accepts and tt refuses).
"""
import argparse
import collections
import math
import os
import random
import struct
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

VERBOSE = False
# Set by ref_sdpa when some attention row is saturated: there dq and dk are
# exactly 0 in torch and float32 rounding in tt (about 1e-7 of |dO| |v|),
# which a steep op upstream (exp of exp, a power with a huge exponent) may
# amplify past any tolerance. Such a mismatch counts apart, as
# "saturated sdpa", not as a failure.
SATURATED = [False]
# Set when torch's gelu sees an infinite input: its derivative there is NaN
# (inf * 0 in x * pdf(x)), tt's is the limit (0 at -inf, 1 at +inf). A NaN
# gradient that comes from it counts apart, as "gelu at +-inf".
GELU_INF = [False]


def gelu_ref(t, approximate="none"):
    if bool(torch.isinf(t).any()):
        GELU_INF[0] = True
    return F.gelu(t, approximate=approximate)
SIZES = [1, 1, 1, 2, 2, 3, 3, 4, 5, 7, 8, 13, 17]
MAX_NUMEL = 1500


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def numel(s):
    n = 1
    for d in s:
        n *= d
    return n


def bcast(a, b):
    n = max(len(a), len(b))
    a = [1] * (n - len(a)) + list(a)
    b = [1] * (n - len(b)) + list(b)
    out = []
    for x, y in zip(a, b):
        if x != y and x != 1 and y != 1:
            return None
        out.append(max(x, y))
    return out


def lua_list(vals):
    return "{" + ",".join(vals) + "}"


def num(x):
    """a float as Lua and Python both read it back exactly"""
    if x != x:
        return "(0/0)"
    if x in (math.inf, -math.inf):
        return "math.huge" if x > 0 else "(-math.huge)"
    return repr(float(x))


class Prog:
    """One program: its inputs, statements and what to compare."""

    def __init__(self, rng, pid):
        self.rng = rng
        self.pid = pid
        self.lua = []          # Lua statements
        self.py = []           # (name, fn(env) -> tensor) in the same order
        self.leaves = []       # names of the leaves that require grad
        self.consts = {}       # name -> (kind, shape, flat values)
        self.live = {}         # var name -> shape, not yet consumed
        self.shapes = {}
        self.aux = []          # names compared by value only
        self.ops = []          # op tags, for grouping failures
        self.n = 0

    def name(self, prefix="v"):
        self.n += 1
        return "%s%d" % (prefix, self.n)

    # ----- inputs
    def values(self, count, kind="normal"):
        r = self.rng
        if kind == "pos":
            return [f32(r.uniform(0.3, 2.0)) for _ in range(count)]
        vals = []
        for _ in range(count):
            u = r.random()
            if u < 0.03:
                vals.append(0.0)
            elif u < 0.06:
                vals.append(f32(r.choice([1.0, -1.0, 0.5])))
            else:
                vals.append(f32(r.gauss(0, 1)))
        return vals

    def const_float(self, shape, kind="normal"):
        nm = self.name("c")
        self.consts[nm] = ("float32", list(shape), self.values(numel(shape), kind))
        self.shapes[nm] = list(shape)
        return nm

    def const_int(self, shape, lo, hi, values=None):
        nm = self.name("i")
        """int64 values as tt reads them (indices from 1): lo..hi-1 plus 1"""
        vals = values if values is not None else [self.rng.randrange(lo, hi) + 1 for _ in range(numel(shape))]
        self.consts[nm] = ("int64", list(shape), vals)
        self.shapes[nm] = list(shape)
        return nm

    def const_bool(self, shape, p=0.5):
        nm = self.name("m")
        self.consts[nm] = ("bool", list(shape), [self.rng.random() < p for _ in range(numel(shape))])
        self.shapes[nm] = list(shape)
        return nm

    def new_input(self, shape, kind="normal", grad=None):
        """a leaf, or a view of one: transposed, narrowed, permuted or expanded"""
        r = self.rng
        shape = list(shape)
        nd = len(shape)
        how = r.choice(["plain", "plain", "transpose", "narrow", "permute", "expand"]) if nd else "plain"
        leaf_shape, lua_v, py_v = list(shape), "", None
        if how == "transpose" and nd >= 2:
            i, j = r.sample(range(nd), 2)
            leaf_shape[i], leaf_shape[j] = shape[j], shape[i]
            lua_v = ":transpose(%d, %d)" % (i + 1, j + 1)
            py_v = lambda t, i=i, j=j: t.transpose(i, j)
        elif how == "narrow":
            d = r.randrange(nd)
            extra = r.choice([1, 2, 3])
            start = r.randrange(extra + 1)
            leaf_shape[d] = shape[d] + extra
            lua_v = ":narrow(%d, %d, %d)" % (d + 1, start + 1, shape[d])
            py_v = lambda t, d=d, s=start, n=shape[d]: t.narrow(d, s, n)
        elif how == "permute" and nd >= 3:
            p = list(range(nd))
            r.shuffle(p)
            leaf_shape = [0] * nd
            for k in range(nd):      # leaf.permute(p) has dim k = leaf's dim p[k]
                leaf_shape[p[k]] = shape[k]
            lua_v = ":permute(%s)" % ", ".join(str(k + 1) for k in p)
            py_v = lambda t, p=p: t.permute(*p)
        elif how == "expand" and any(s > 1 for s in shape):
            leaf_shape = [1 if (s > 1 and r.random() < 0.5) else s for s in shape]
            if leaf_shape == shape:
                leaf_shape[max(range(nd), key=lambda k: shape[k])] = 1
            lua_v = ":expand(%s)" % ", ".join(str(s) for s in shape)
            py_v = lambda t, s=tuple(shape): t.expand(*s)
        leaf = self.const_float(leaf_shape, kind)
        want = grad if grad is not None else r.random() < 0.85
        if want:
            self.leaves.append(leaf)
        if not lua_v:
            return leaf
        nm = self.name()
        self.stmt(nm, leaf + lua_v, lambda e, leaf=leaf, f=py_v: f(e[leaf]), shape, consume=())
        return nm

    # ----- statements
    def stmt(self, nm, lua, fn, shape, consume, live=True):
        self.lua.append("local %s = %s" % (nm, lua))
        self.py.append((nm, fn))
        self.shapes[nm] = list(shape)
        for c in consume:
            self.live.pop(c, None)
        if live:
            self.live[nm] = list(shape)
        return nm

    def pick(self, cond=lambda s: True):
        cands = [v for v, s in self.live.items() if cond(s)]
        return self.rng.choice(cands) if cands else None


def rand_shape(r, nd=None, cap=MAX_NUMEL):
    nd = r.choice([0, 1, 1, 2, 2, 2, 3, 3, 4]) if nd is None else nd
    while True:
        s = [r.choice(SIZES) for _ in range(nd)]
        if numel(s) <= cap:
            return s


def partner(r, s):
    """a shape that broadcasts with s"""
    u = r.random()
    if u < 0.3:
        return list(s)
    if u < 0.8:
        p = [1 if r.random() < 0.4 else d for d in s]
        drop = r.randrange(len(p) + 1) if p and r.random() < 0.3 else 0
        return p[drop:]
    extra = [r.choice([1, 2, 3])]
    return extra + [1 if r.random() < 0.3 else d for d in s]


def ldim(r, d, nd):
    """dim d (0-based) for Lua: 1-based or negative"""
    return str(d + 1) if r.random() < 0.7 else str(d - nd)


# ===== the ops: each takes the program and a live value, adds statements
# and returns True, or returns False when it does not apply to that shape.

UNARY = {
    "neg": ("-%s", lambda t: -t),
    "exp": ("%s:exp()", torch.exp),
    "abs": ("%s:abs()", torch.abs),
    "relu": ("%s:relu()", torch.relu),
    "gelu": ("%s:gelu()", gelu_ref),
    "gelu_tanh": ('%s:gelu("tanh")', lambda t: gelu_ref(t, approximate="tanh")),
    "tanh": ("%s:tanh()", torch.tanh),
    "sigmoid": ("%s:sigmoid()", torch.sigmoid),
    "log": ("(%s * %s + 0.5):log()", lambda t: (t * t + 0.5).log()),
    "sqrt": ("(%s * %s + 0.25):sqrt()", lambda t: (t * t + 0.25).sqrt()),
    "pow2": ("%s ^ 2", lambda t: t ** 2),
    "pow3": ("%s ^ 3", lambda t: t ** 3),
    "powf": ("(%s * %s + 0.5) ^ 0.7", lambda t: (t * t + 0.5) ** 0.7),
    "rpow": ("1.5 ^ %s", lambda t: 1.5 ** t),
    "rsub": ("1 - %s", lambda t: 1 - t),
    "rdiv": ("2 / (%s * %s + 1)", lambda t: 2 / (t * t + 1)),
    "smul": ("%s * 0.75", lambda t: t * 0.75),
    "sdiv": ("%s / 3", lambda t: t / 3),
    "contiguous": ("%s:contiguous()", lambda t: t.contiguous()),
    "clone": ("%s:clone()", lambda t: t.clone()),
    "float": ("%s:float()", lambda t: t),
}


def op_unary(p, x):
    tag = p.rng.choice(list(UNARY))
    tmpl, fn = UNARY[tag]
    lua = tmpl % ((x,) * tmpl.count("%s"))
    p.ops.append(tag)
    p.stmt(p.name(), lua, lambda e, x=x, fn=fn: fn(e[x]), p.shapes[x], (x,))
    return True


BINARY = {
    "add": ("%s + %s", lambda a, b: a + b),
    "sub": ("%s - %s", lambda a, b: a - b),
    "mul": ("%s * %s", lambda a, b: a * b),
    "div": ("%s / (%s * %s + 0.5)", lambda a, b: a / (b * b + 0.5)),
    "pow": ("(%s * %s + 0.5) ^ %s", None),
    "maximum": ("%s:maximum(%s)", torch.maximum),
    "minimum": ("%s:minimum(%s)", torch.minimum),
}


def op_binary(p, x):
    r = p.rng
    tag = r.choice(list(BINARY))
    sx = p.shapes[x]
    other = p.pick(lambda s: s is not sx and bcast(s, sx) is not None and numel(bcast(s, sx)) <= MAX_NUMEL)
    if other == x or other is None or r.random() < 0.5:
        ps = partner(r, sx)
        if numel(bcast(ps, sx)) > MAX_NUMEL:
            ps = list(sx)
        other = p.new_input(ps)
    a, b = (x, other) if r.random() < 0.5 else (other, x)
    out = bcast(p.shapes[a], p.shapes[b])
    tmpl, fn = BINARY[tag]
    if tag == "div":
        lua, f = tmpl % (a, b, b), lambda e, a=a, b=b: e[a] / (e[b] * e[b] + 0.5)
    elif tag == "pow":
        lua, f = tmpl % (a, a, b), lambda e, a=a, b=b: (e[a] * e[a] + 0.5) ** e[b]
    else:
        lua, f = tmpl % (a, b), lambda e, a=a, b=b, fn=fn: fn(e[a], e[b])
    p.ops.append(tag)
    p.stmt(p.name(), lua, f, out, (a, b))
    return True


def op_reduce(p, x):
    r = p.rng
    s = p.shapes[x]
    nd = len(s)
    tag = r.choice(["sum", "mean", "std", "var", "max", "min", "amax", "softmax", "log_softmax", "argmax"])
    nm = p.name()
    if tag in ("softmax", "log_softmax"):
        if nd == 0:
            return False
        d = r.randrange(nd)
        tf = torch.softmax if tag == "softmax" else torch.log_softmax
        p.stmt(nm, "%s:%s(%s)" % (x, tag, ldim(r, d, nd)), lambda e, x=x, d=d, tf=tf: tf(e[x], d), s, (x,))
    elif tag == "argmax":
        if nd == 0:
            return False
        d = r.randrange(nd)
        which = r.choice(["argmax", "argmin"])
        p.stmt(nm, "%s:%s(%s)" % (x, which, ldim(r, d, nd)),
               lambda e, x=x, d=d, w=which: getattr(e[x], w)(d) + 1, s[:d] + s[d + 1:], (), live=False)
        p.aux.append(nm)
    elif tag == "amax" or (tag in ("max", "min") and (nd == 0 or r.random() < 0.4)):
        which = r.choice(["max", "min"])
        p.stmt(nm, "%s:%s()" % (x, which), lambda e, x=x, w=which: getattr(e[x], w)(), [], (x,))
    elif tag in ("max", "min"):
        d = r.randrange(nd)
        keep = r.random() < 0.3
        out = s[:d] + ([1] if keep else []) + s[d + 1:]
        ix = p.name("ix")
        p.lua.append("local %s, %s = %s:%s(%s%s)" % (nm, ix, x, tag, ldim(r, d, nd), ", true" if keep else ""))
        p.py.append((nm, lambda e, x=x, d=d, k=keep, w=tag: getattr(e[x], w)(d, keepdim=k).values))
        p.py.append((ix, lambda e, x=x, d=d, k=keep, w=tag: getattr(e[x], w)(d, keepdim=k).indices + 1))
        p.shapes[nm] = out
        p.shapes[ix] = out
        p.live.pop(x, None)
        p.live[nm] = out
        p.aux.append(ix)
    else:
        unb = tag in ("std", "var")
        if nd == 0 or r.random() < 0.35:
            if unb and numel(s) < 2:
                return False
            p.stmt(nm, "%s:%s()" % (x, tag), lambda e, x=x, t=tag: getattr(e[x], t)(), [], (x,))
        else:
            d = r.randrange(nd)
            if unb and s[d] < 2:
                return False
            keep = r.random() < 0.4
            out = s[:d] + ([1] if keep else []) + s[d + 1:]
            p.stmt(nm, "%s:%s(%s%s)" % (x, tag, ldim(r, d, nd), ", true" if keep else ""),
                   lambda e, x=x, d=d, k=keep, t=tag: getattr(e[x], t)(d, keepdim=k), out, (x,))
    p.ops.append(tag)
    return True


def op_view(p, x):
    r = p.rng
    s = p.shapes[x]
    nd = len(s)
    tag = r.choice(["reshape", "view", "transpose", "mT", "permute", "unsqueeze", "squeeze", "expand",
                    "narrow", "select", "chunk", "split", "index"])
    nm = p.name()
    if tag in ("reshape", "view"):
        n = numel(s)
        out = []
        rest = n
        while rest > 1 and len(out) < 3:
            divs = [k for k in range(2, rest + 1) if rest % k == 0]
            k = r.choice(divs)
            out.append(k)
            rest //= k
        if rest > 1 or r.random() < 0.3:
            out.append(rest)
        r.shuffle(out)
        if tag == "view" and not p_contig_guess(p, x):
            tag = "reshape"
        lua_shape = [str(k) for k in out]
        if out and r.random() < 0.3:
            lua_shape[r.randrange(len(out))] = "-1"
        p.stmt(nm, "%s:%s(%s)" % (x, tag, lua_list(lua_shape)), lambda e, x=x, o=tuple(out): e[x].reshape(o), out, (x,))
    elif tag == "transpose" and nd >= 2:
        i, j = r.sample(range(nd), 2)
        out = list(s)
        out[i], out[j] = s[j], s[i]
        p.stmt(nm, "%s:transpose(%s, %s)" % (x, ldim(r, i, nd), ldim(r, j, nd)),
               lambda e, x=x, i=i, j=j: e[x].transpose(i, j), out, (x,))
    elif tag == "mT" and nd >= 2:
        out = s[:-2] + [s[-1], s[-2]]
        p.stmt(nm, "%s:mT()" % x, lambda e, x=x: e[x].transpose(-2, -1), out, (x,))
    elif tag == "permute" and nd >= 2:
        perm = list(range(nd))
        r.shuffle(perm)
        p.stmt(nm, "%s:permute(%s)" % (x, ", ".join(str(k + 1) for k in perm)),
               lambda e, x=x, q=perm: e[x].permute(*q), [s[k] for k in perm], (x,))
    elif tag == "unsqueeze" and nd < 5:
        d = r.randrange(nd + 1)
        p.stmt(nm, "%s:unsqueeze(%d)" % (x, d + 1), lambda e, x=x, d=d: e[x].unsqueeze(d), s[:d] + [1] + s[d:], (x,))
    elif tag == "squeeze" and 1 in s:
        if r.random() < 0.5:
            p.stmt(nm, "%s:squeeze()" % x, lambda e, x=x: e[x].squeeze(), [k for k in s if k != 1], (x,))
        else:
            d = r.randrange(nd)
            out = s[:d] + s[d + 1:] if s[d] == 1 else list(s)
            p.stmt(nm, "%s:squeeze(%s)" % (x, ldim(r, d, nd)), lambda e, x=x, d=d: e[x].squeeze(d), out, (x,))
    elif tag == "expand" and 1 in s:
        out = [r.choice([2, 3, 5]) if k == 1 else k for k in s]
        lead = [r.choice([2, 3])] if r.random() < 0.3 else []
        out = lead + out
        if numel(out) > MAX_NUMEL:
            return False
        p.stmt(nm, "%s:expand(%s)" % (x, ", ".join(str(k) for k in out)),
               lambda e, x=x, o=tuple(out): e[x].expand(*o), out, (x,))
    elif tag == "narrow" and nd >= 1:
        d = r.randrange(nd)
        ln = r.randrange(1, s[d] + 1)
        st = r.randrange(s[d] - ln + 1)
        out = list(s)
        out[d] = ln
        p.stmt(nm, "%s:narrow(%s, %d, %d)" % (x, ldim(r, d, nd), st + 1, ln),
               lambda e, x=x, d=d, st=st, ln=ln: e[x].narrow(d, st, ln), out, (x,))
    elif tag == "select" and nd >= 1:
        d = r.randrange(nd)
        i = r.randrange(s[d])
        if d == 0 and r.random() < 0.5:
            lua = "%s[%d]" % (x, i + 1)
        else:
            lua = "%s:select(%s, %d)" % (x, ldim(r, d, nd), i + 1)
        p.stmt(nm, lua, lambda e, x=x, d=d, i=i: e[x].select(d, i), s[:d] + s[d + 1:], (x,))
    elif tag in ("chunk", "split") and nd >= 1:
        d = r.randrange(nd)
        if tag == "chunk":
            k = r.randrange(1, 4)
            size = -(-s[d] // k)
            lua = "%s:chunk(%d, %s)" % (x, k, ldim(r, d, nd))
            pieces = torch.arange(s[d]).split(size)
        else:
            size = r.randrange(1, s[d] + 1)
            lua = "%s:split(%d, %s)" % (x, size, ldim(r, d, nd))
            pieces = torch.arange(s[d]).split(size)
        lst = p.name("l")
        p.lua.append("local %s = %s" % (lst, lua))
        p.live.pop(x, None)
        for j, pc in enumerate(pieces):
            if j > 0 and r.random() < 0.3:
                continue       # a piece never used: its part of the gradient is 0
            out = list(s)
            out[d] = len(pc)
            v = p.name()
            p.stmt(v, "%s[%d]" % (lst, j + 1), lambda e, x=x, d=d, sz=size, j=j: e[x].split(sz, d)[j], out, ())
    elif tag == "index" and nd >= 1:
        d = r.randrange(nd)
        if r.random() < 0.5:
            k = r.randrange(1, 6)
            idx = p.const_int([k], 0, s[d])
            out = list(s)
            out[d] = k
            p.stmt(nm, "%s:index_select(%s, %s)" % (x, ldim(r, d, nd), idx),
                   lambda e, x=x, d=d, i=idx: e[x].index_select(d, e[i] - 1), out, (x,))
            tag = "index_select"
        else:
            out = [r.randrange(1, k + 1) for k in s]
            out[d] = r.randrange(1, 6)
            idx = p.const_int(out, 0, s[d])
            p.stmt(nm, "%s:gather(%s, %s)" % (x, ldim(r, d, nd), idx),
                   lambda e, x=x, d=d, i=idx: e[x].gather(d, e[i] - 1), out, (x,))
            tag = "gather"
    else:
        return False
    p.ops.append(tag)
    return True


def p_contig_guess(p, x):
    return False   # view() only where tt and torch agree a view exists: keep reshape


def op_matmul(p, x):
    r = p.rng
    s = p.shapes[x]
    nd = len(s)
    if nd == 0:
        return False
    m = r.choice([1, 2, 3, 5, 8])
    if nd == 1:
        os_ = [s[0]] if r.random() < 0.4 else [s[0], m]
    else:
        batch = [1 if r.random() < 0.3 else k for k in s[:-2]]
        if r.random() < 0.5:
            batch = batch[r.randrange(len(batch) + 1):] if batch else batch
        os_ = batch + [s[-1], m] if r.random() < 0.85 else [s[-1]]
    y = p.new_input(os_)
    a, b = x, y
    swap = r.random() < 0.3 and nd >= 2 and len(os_) >= 2
    if swap:
        # y^T @ x: y is [..., k, m] so its mT is [..., m, k] and x must start with k... keep x first
        swap = False
    ref = torch.matmul(torch.zeros(p.shapes[a]), torch.zeros(p.shapes[b])).shape
    out = list(ref)
    if numel(out) > MAX_NUMEL * 4:
        return False
    nm = p.name()
    lua = "%s:matmul(%s)" % (a, b) if r.random() < 0.5 else "tt.matmul(%s, %s)" % (a, b)
    p.stmt(nm, lua, lambda e, a=a, b=b: torch.matmul(e[a], e[b]), out, (a, b))
    p.ops.append("matmul")
    return True


LETTERS = "abcdefgh"


def op_einsum(p, x):
    r = p.rng
    s = p.shapes[x]
    nd = len(s)
    if nd == 0 or nd > 4:
        return False
    ax = list(LETTERS[:nd])
    sizes = dict(zip(ax, s))
    # a repeated letter (a diagonal) where two dims have the same size
    if nd >= 2 and r.random() < 0.15:
        i, j = r.sample(range(nd), 2)
        if s[i] == s[j]:
            ax[j] = ax[i]
    sizes = {}
    for a, k in zip(ax, s):
        sizes[a] = k
    spec_x = "".join(ax)
    two = r.random() < 0.7
    if two:
        keep = [a for a in dict.fromkeys(ax) if r.random() < 0.6]
        new = [LETTERS[nd + k] for k in range(r.randrange(0, 2))]
        for a in new:
            sizes[a] = r.choice([1, 2, 3, 4])
        yax = keep + new
        r.shuffle(yax)
        ys = [sizes[a] for a in yax]
        y = p.new_input(ys)
        spec_y = "".join(yax)
        allax = list(dict.fromkeys(ax + yax))
    else:
        y = None
        allax = list(dict.fromkeys(ax))
    outax = [a for a in allax if r.random() < 0.6]
    r.shuffle(outax)
    out = [sizes[a] for a in outax]
    if numel(out) > MAX_NUMEL:
        return False
    spec = spec_x + ("," + spec_y if two else "") + "->" + "".join(outax)
    if r.random() < 0.5:
        lua_spec = " ".join(spec_x) + ((", " + " ".join(spec_y)) if two else "") + " -> " + " ".join(outax)
    else:
        lua_spec = spec
    nm = p.name()
    args = [x] + ([y] if two else [])
    p.stmt(nm, 'tt.einsum("%s", %s)' % (lua_spec, ", ".join(args)),
           lambda e, spec=spec, args=tuple(args): torch.einsum(spec, *[e[a] for a in args]), out, args)
    p.ops.append("einsum")
    return True


def op_rearrange(p, x):
    r = p.rng
    s = p.shapes[x]
    nd = len(s)
    if nd == 0 or nd > 4:
        return False
    names = ["a", "b", "c", "d", "e", "f", "g", "h"]
    # the input side: each dim one axis, or a group (u v) of two
    elem, sizes, lhs, known = [], {}, [], {}
    k = 0
    for dsz in s:
        divs = [q for q in range(2, dsz) if dsz % q == 0]
        if divs and r.random() < 0.4:
            u, v = names[k], names[k + 1]
            k += 2
            sizes[u] = r.choice(divs)
            sizes[v] = dsz // sizes[u]
            elem += [u, v]
            lhs.append("(%s %s)" % (u, v))
            known[u] = sizes[u]
        else:
            u = names[k]
            k += 1
            sizes[u] = dsz
            elem.append(u)
            lhs.append(u)
    order = list(elem)
    r.shuffle(order)
    rhs, groups, i = [], [], 0
    while i < len(order):
        if i + 1 < len(order) and r.random() < 0.3:
            rhs.append("(%s %s)" % (order[i], order[i + 1]))
            groups.append(sizes[order[i]] * sizes[order[i + 1]])
            i += 2
        else:
            rhs.append(order[i])
            groups.append(sizes[order[i]])
            i += 1
    pattern = "%s -> %s" % (" ".join(lhs), " ".join(rhs))
    sz = "{" + ", ".join("%s = %d" % kv for kv in known.items()) + "}"
    perm = [elem.index(a) for a in order]
    es = [sizes[a] for a in elem]
    nm = p.name()
    p.stmt(nm, 'tt.rearrange(%s, "%s", %s)' % (x, pattern, sz),
           lambda e, x=x, es=tuple(es), perm=perm, g=tuple(groups): e[x].reshape(es).permute(*perm).reshape(g),
           groups, (x,))
    p.ops.append("rearrange")
    return True


def op_mask(p, x):
    r = p.rng
    s = p.shapes[x]
    nd = len(s)
    tag = r.choice(["masked_fill", "masked_fill", "tril", "triu", "masked_softmax"])
    nm = p.name()
    if tag in ("tril", "triu"):
        if nd < 2:
            return False
        k = r.randrange(-2, 3)
        p.stmt(nm, "%s:%s(%d)" % (x, tag, k), lambda e, x=x, k=k, t=tag: getattr(torch, t)(e[x], k), s, (x,))
    elif tag == "masked_fill":
        ms = partner(r, s)
        if numel(bcast(ms, s)) > MAX_NUMEL:
            ms = list(s)
        if r.random() < 0.5:
            c = p.const_float(ms)
            m = p.name("m")
            p.stmt(m, "%s:gt(0.3)" % c, lambda e, c=c: e[c] > f32(0.3), ms, (), live=False)
        else:
            m = p.const_bool(ms)
        val = r.choice([0.0, -1.5, 2.0, 1e4])
        out = bcast(ms, s)
        if out != s:
            return False
        p.stmt(nm, "%s:masked_fill(%s, %s)" % (x, m, num(val)),
               lambda e, x=x, m=m, v=val: e[x].masked_fill(e[m], v), s, (x,))
    else:
        # attention's pattern: -inf where hidden, then softmax over the last dim,
        # every row keeping its last entry so no row is all -inf
        if nd == 0:
            return False
        vals = [r.random() < 0.4 for _ in range(numel(s))]
        for i in range(s[-1] - 1, len(vals), s[-1]):
            vals[i] = False
        m = p.const_bool(s)
        p.consts[m] = ("bool", list(s), vals)
        fn = r.choice(["softmax", "log_softmax"])
        p.stmt(nm, "%s:masked_fill(%s, -math.huge):%s(-1)" % (x, m, fn),
               lambda e, x=x, m=m, f=fn: getattr(e[x].masked_fill(e[m], -math.inf), f)(-1), s, (x,))
    p.ops.append(tag)
    return True


def op_join(p, x):
    r = p.rng
    s = p.shapes[x]
    nd = len(s)
    tag = r.choice(["cat", "stack", "repeat_interleave"])
    nm = p.name()
    if tag == "repeat_interleave":
        rep = r.randrange(1, 4)
        if nd == 0 or r.random() < 0.2:
            out = [numel(s) * rep]
            p.stmt(nm, "%s:repeat_interleave(%d)" % (x, rep), lambda e, x=x, k=rep: e[x].repeat_interleave(k), out, (x,))
        else:
            d = r.randrange(nd)
            out = list(s)
            out[d] *= rep
            if numel(out) > MAX_NUMEL:
                return False
            p.stmt(nm, "%s:repeat_interleave(%d, %s)" % (x, rep, ldim(r, d, nd)),
                   lambda e, x=x, k=rep, d=d: e[x].repeat_interleave(k, d), out, (x,))
    else:
        if tag == "cat" and nd == 0:
            return False
        d = r.randrange(nd + (1 if tag == "stack" else 0))
        parts = [x]
        total = s[d] if tag == "cat" else 0
        for _ in range(r.randrange(1, 3)):
            ps = list(s)
            if tag == "cat":
                ps[d] = r.choice([1, 2, 3])
                total += ps[d]
            parts.append(p.new_input(ps))
        r.shuffle(parts)
        if tag == "cat":
            out = list(s)
            out[d] = total
            ld = ldim(r, d, nd)
        else:
            out = s[:d] + [len(parts)] + s[d:]
            ld = ldim(r, d, nd + 1)
        if numel(out) > MAX_NUMEL:
            return False
        p.stmt(nm, "tt.%s({%s}, %s)" % (tag, ", ".join(parts), ld),
               lambda e, ps=tuple(parts), d=d, t=tag: getattr(torch, t)([e[q] for q in ps], d), out, parts)
    p.ops.append(tag)
    return True


def op_cross_entropy(p, x):
    r = p.rng
    s = p.shapes[x]
    if len(s) != 2 and not (len(s) == 1 and r.random() < 0.3):
        return False
    nm = p.name()
    red = r.choice(["mean", "sum", "none"])
    ign = r.random() < 0.3
    if len(s) == 2:
        n, c = s
        vals = [r.randrange(c) for _ in range(n)]
        if ign:
            vals = [v if r.random() < 0.7 else -100 - 1 for v in vals]   # -100 after the Lua +1
        t = p.const_int([n], 0, c, [v + 1 for v in vals])
        out = [n] if red == "none" else []
    else:
        t = p.const_int([], 0, s[0], [r.randrange(s[0]) + 1])
        ign = False
        out = [] if red != "none" else []
    opts = '{reduction = "%s"}' % red
    p.stmt(nm, "tt.cross_entropy(%s, %s, %s)" % (x, t, opts),
           lambda e, x=x, t=t, red=red: F.cross_entropy(e[x], torch.where(e[t] == -100, e[t], e[t] - 1),
                                                           reduction=red, ignore_index=-100), out, (x,))
    if red == "mean" and ign and all(v == -101 for v in vals):
        return False
    p.ops.append("cross_entropy")
    return True


def ref_sdpa(q, k, v, causal, mask, scale, with_w, bias=None, window=0, sinks=0):
    """scaled dot-product attention as the formula, GQA by repeating K/V;
    a row with no key to attend gives zeros (tt and PyTorch >= 2.5); bias
    added after the scale (PyTorch's float attn_mask); window W: query i
    (at key position i + nk - nq) sees keys (pos - W, pos] and the first
    `sinks` keys up to pos"""
    hq, hkv = q.shape[-3], k.shape[-3]
    if hq != hkv:
        k = k.repeat_interleave(hq // hkv, -3)
        v = v.repeat_interleave(hq // hkv, -3)
    nq, nk = q.shape[-2], k.shape[-2]
    s = torch.matmul(q, k.transpose(-2, -1)) * scale
    if bias is not None:
        s = s + bias
    keep = torch.ones(nq, nk, dtype=torch.bool)
    if causal or window:
        keep = torch.ones(nq, nk, dtype=torch.bool).tril(nk - nq)
    if window:
        pos = torch.arange(nq).view(nq, 1) + (nk - nq)
        j = torch.arange(nk).view(1, nk)
        keep = keep & ((pos - j < window) | (j < sinks))
    if mask is not None:
        keep = keep & mask
    keep = keep.expand(s.shape)
    s = s.masked_fill(~keep, -math.inf)
    anyk = keep.any(-1, keepdim=True)
    s = torch.where(anyk, s, torch.zeros_like(s))
    w = torch.softmax(s, -1) * anyk
    # a row whose softmax is one-hot to float32 though it sees several keys:
    # torch's formula then gives exact zeros that the fused backward's
    # rowsum(dO * O) only approaches by rounding (see SATURATED)
    if ((w.detach() >= 1 - 2.0 ** -24) & (keep.sum(-1, keepdim=True) > 1)).any():
        SATURATED[0] = True
    o = torch.matmul(w, v)
    return (o, w.detach()) if with_w else o


def op_sdpa(p, x):
    r = p.rng
    s = p.shapes[x]
    batch = [r.choice([1, 2, 3]) for _ in range(r.choice([0, 1, 1, 2]))]
    hkv = r.choice([1, 1, 2, 3])
    hq = hkv * r.choice([1, 1, 2, 4])
    nq, nk = r.choice([1, 2, 3, 5, 8, 17]), r.choice([1, 2, 3, 5, 8, 17])
    dh, dv = r.choice([1, 2, 4, 8, 16]), r.choice([1, 2, 4, 8, 16])
    qs = batch + [hq, nq, dh]
    if numel(qs) > MAX_NUMEL or numel(batch + [hkv, nk, max(dh, dv)]) > MAX_NUMEL:
        return False
    # x feeds q where it can (x + q broadcasting to q's shape), else the chain goes on beside it
    q = p.new_input(qs)
    if bcast(s, qs) == qs and r.random() < 0.7:
        q2 = p.name()
        p.stmt(q2, "%s + %s" % (q, x), lambda e, a=q, b=x: e[a] + e[b], qs, (q, x))
        q = q2
    k = p.new_input(batch + [hkv, nk, dh])
    v = p.new_input(batch + [hkv, nk, dv])
    causal = r.random() < 0.4
    scale = r.choice([None, None, 0.3, 1.0, 2.5])
    mask = None
    opts = []
    if causal:
        opts.append("causal = true")
    if r.random() < 0.4:
        ms = r.choice([[nq, nk], [1, nk], [nq, 1], [hq, nq, nk]][: 4 if hq else 3])
        mask = p.const_bool(ms, 0.7)
        opts.append("mask = %s" % mask)
    if scale is not None:
        opts.append("scale = %s" % num(scale))
    bias, window, sinks = None, 0, 0
    if r.random() < 0.3:   # a bias with its gradient, broadcast as a relative-position bias would be
        bs = r.choice([[nq, nk], [1, nk], [nq, 1]] + ([[hq, nq, nk]] if hq else []))
        bias = p.new_input(bs)
        opts.append("bias = %s" % bias)
    if r.random() < 0.25:
        window = r.choice([1, 2, 3, 5, 20])
        opts.append("window = %d" % window)
        if r.random() < 0.5:
            sinks = r.choice([1, 2, 4])
            opts.append("sinks = %d" % sinks)
    with_w = r.random() < 0.3
    if with_w:
        opts.append("weights = true")
    nm = p.name()
    ot = "{" + ", ".join(opts) + "}"
    sc = scale if scale is not None else 1 / math.sqrt(dh)
    out = batch + [hq, nq, dv]
    if with_w:
        wn = p.name("w")
        p.lua.append("local %s, %s = tt.sdpa(%s, %s, %s, %s)" % (nm, wn, q, k, v, ot))
        p.py.append((nm, lambda e, a=(q, k, v), c=causal, m=mask, sc=sc, b=bias, w=window, sk=sinks:
                     ref_sdpa(e[a[0]], e[a[1]], e[a[2]], c, e[m].bool() if m else None, sc, False,
                              e[b] if b else None, w, sk)))
        p.py.append((wn, lambda e, a=(q, k, v), c=causal, m=mask, sc=sc, b=bias, w=window, sk=sinks:
                     ref_sdpa(e[a[0]], e[a[1]], e[a[2]], c, e[m].bool() if m else None, sc, True,
                              e[b] if b else None, w, sk)[1]))
        p.shapes[nm] = out
        p.shapes[wn] = batch + [hq, nq, nk]
        for c in (q, k, v) + ((bias,) if bias else ()):
            p.live.pop(c, None)
        p.live[nm] = out
        p.aux.append(wn)
    else:
        p.stmt(nm, "tt.sdpa(%s, %s, %s%s)" % (q, k, v, ", " + ot if opts or r.random() < 0.5 else ""),
               lambda e, a=(q, k, v), c=causal, m=mask, sc=sc, b=bias, w=window, sk=sinks:
               ref_sdpa(e[a[0]], e[a[1]], e[a[2]], c, e[m].bool() if m else None, sc, False,
                        e[b] if b else None, w, sk), out, (q, k, v) + ((bias,) if bias else ()))
    p.ops.append("sdpa" + ("_causal" if causal else "") + ("_mask" if mask else "") + ("_gqa" if hq != hkv else "")
                 + ("_bias" if bias else "") + ("_window" if window else ""))
    return True


# ===== 16 bits: creation, einsum's reductions, promotion with 0-d tensors.
# The reference is float64 with the 16-bit rounding modelled: values
# computed exactly (in float64) from the 16-bit operands, rounded once to
# the result's dtype, which torch.result_type gives (PyTorch's promotion).
# torch's own bfloat16 sum over several dims rounds partial sums, so it is
# not the reference for einsum. Each op reads a fresh input (exact float32
# values on both sides), and its result goes back to float32 for the loss.

HALF = {"bfloat16": torch.bfloat16, "float16": torch.float16}
RUN_DTYPE = [torch.float64]     # run_torch's float dtype: what a 16-bit result goes back to


def back(t):
    return t.to(RUN_DTYPE[0])


def half_eps(p, r16):
    """an aux value that tells the result's dtype: its finfo eps"""
    nm = p.name()
    p.stmt(nm, "tt.tensor(tt.finfo(%s:dtype()).eps)" % r16,
           lambda e, r=r16: torch.tensor(torch.finfo(e[r].dtype).eps, dtype=torch.float64), [], (), live=False)
    p.aux.append(nm)


def half_einsum(p, dt):
    r = p.rng
    s = rand_shape(r, r.choice([1, 2, 3]))
    ax = list(LETTERS[:len(s)])
    outax = [a for a in ax if r.random() < 0.4]
    r.shuffle(outax)
    spec = "".join(ax) + "->" + "".join(outax)
    x = p.new_input(s)
    h, nm = p.name(), p.name()
    p.stmt(h, 'tt.einsum("%s", %s:to("%s"))' % (spec, x, dt),
           lambda e, x=x, spec=spec, t=HALF[dt]: torch.einsum(spec, e[x].to(t).double()).to(t), [], (x,), live=False)
    p.stmt(nm, h + ":float()", lambda e, h=h: back(e[h]), [s[ax.index(a)] for a in outax], ())
    half_eps(p, h)
    p.ops.append("einsum16")


def half_zero_d(p, dt):
    """a 16-bit tensor with a 0-d tensor (float32, 16-bit or int64), either side"""
    r = p.rng
    op = r.choice(["+", "-", "*"])
    fn = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}[op]
    sx = [] if r.random() < 0.2 else rand_shape(r, r.choice([1, 2]))
    x = p.new_input(sx)
    kind = r.choice(["float32", "float32", "bfloat16", "float16", "int64"])
    if kind == "int64":
        c = p.const_int([], -4, 4)
        lua_c, py_c = c, lambda e, c=c: e[c]
    else:
        c = p.const_float([])
        conv = "" if kind == "float32" else ':to("%s")' % kind
        lua_c = c + conv
        py_c = (lambda e, c=c: e[c].float()) if kind == "float32" else (lambda e, c=c, t=HALF[kind]: e[c].to(t))
    first = r.random() < 0.5
    lx = '%s:to("%s")' % (x, dt)
    lua = "(%s %s %s)" % ((lx, op, lua_c) if first else (lua_c, op, lx))

    def ref(e, x=x, t=HALF[dt], first=first, py_c=py_c, fn=fn):
        a, b = e[x].to(t), py_c(e)
        if not first:
            a, b = b, a
        return fn(a.double(), b.double()).to(torch.result_type(a, b))
    h, nm = p.name(), p.name()
    p.stmt(h, lua, ref, sx, (x,), live=False)
    p.stmt(nm, h + ":float()", lambda e, h=h: back(e[h]), sx, ())
    half_eps(p, h)
    p.ops.append("promote0d")


def half_create(p, dt):
    """arange, full, tensor (with NaN and inf: isnan too) and rand's range, sizes 0 and 1 included"""
    r = p.rng
    t = HALF[dt]
    what = r.choice(["arange", "arange3", "full", "tensor", "rand"])
    nm = p.name()
    if what == "arange":
        n = r.choice([0, 1, 2, 5, 300, 2100])
        p.stmt(nm, 'tt.arange(%d, "%s"):float()' % (n, dt), lambda e, n=n: back(torch.arange(n, dtype=t)), [n], (),
               live=n > 0)
    elif what == "arange3":
        a, step = r.randrange(-3000, 3000), r.choice([-7, -3, -1, 1, 2, 5])
        b = a + step * r.randrange(0, 40)
        n = len(range(a, b, step))
        # each value a + i*step rounded once (torch rounds a and step to the
        # dtype first, which differs from about 256 on in bfloat16)
        p.stmt(nm, 'tt.arange(%d, %d, %d, "%s"):float()' % (a, b, step, dt),
               lambda e, a=a, b=b, st=step: back(torch.arange(a, b, st, dtype=torch.float64).to(t)), [n], (),
               live=n > 0)
    elif what == "full":
        s = [r.choice([0, 1, 1, 2, 3]) for _ in range(r.choice([0, 1, 2]))]
        v = p.values(1)[0]
        shape = lua_list([str(k) for k in s])
        p.stmt(nm, 'tt.full(%s, %s, "%s"):float()' % (shape, num(v), dt),
               lambda e, s=tuple(s), v=v: back(torch.full(s, v, dtype=t)), s, (), live=numel(s) > 0)
    elif what == "tensor":
        n = r.choice([1, 2, 5, 9])
        vals = [r.choice([math.nan, math.inf, -math.inf, 65520.0, 1e-8]) if r.random() < 0.2 else v
                for v in p.values(n)]
        h = p.name()
        p.stmt(h, 'tt.tensor(%s, "%s")' % (lua_list([num(v) for v in vals]), dt),
               lambda e, vals=vals: torch.tensor(vals, dtype=torch.float32).to(t), [n], (), live=False)
        p.stmt(nm, "%s:isnan():float()" % h, lambda e, h=h: back(torch.isnan(e[h])), [n], (), live=False)
        p.aux.append(nm)
        fin = p.name()           # the finite values (inf and NaN would make the loss NaN)
        p.stmt(fin, "%s:masked_fill(%s:isnan() | %s:abs():eq(math.huge), 0):float()" % (h, h, h),
               lambda e, h=h: back(e[h].masked_fill(torch.isnan(e[h]) | torch.isinf(e[h]), 0)), [n], ())
    else:                        # rand: the count outside [0, 1), 0 in torch
        n = r.choice([0, 1, 7, 5000])
        h = p.name()
        p.stmt(h, 'tt.rand(%d, "%s")' % (n, dt), lambda e, n=n: torch.rand(n, dtype=t), [n], (), live=False)
        p.stmt(nm, "(%s:lt(0) | %s:ge(1)):float():sum()" % (h, h),
               lambda e, h=h: back(((e[h] < 0) | (e[h] >= 1)).sum()), [], (), live=False)
        p.aux.append(nm)
    if nm not in p.live and nm not in p.aux:     # empty: compared as an aux value (its size), fed to no op
        p.aux.append(nm)
    p.ops.append(what + "16")


def op_half(p, x):
    dt = p.rng.choice(list(HALF))
    p.rng.choice([half_einsum, half_zero_d, half_zero_d, half_create])(p, dt)
    return True


OPS = [(op_unary, 6), (op_binary, 6), (op_reduce, 4), (op_view, 5), (op_matmul, 2), (op_einsum, 2),
       (op_rearrange, 1), (op_mask, 2), (op_join, 2), (op_cross_entropy, 1), (op_sdpa, 1.5), (op_half, 2)]


def generate(rng, pid):
    p = Prog(rng, pid)
    for _ in range(rng.choice([1, 1, 2])):
        v = p.new_input(rand_shape(rng))
        p.live[v] = p.shapes[v]
    if not p.leaves:
        p.leaves.append(next(c for c, k in p.consts.items() if k[0] == "float32"))
    steps = rng.randrange(2, 7)
    done = tries = 0
    while done < steps and tries < 40:
        tries += 1
        if not p.live:
            v = p.new_input(rand_shape(rng))
            p.live[v] = p.shapes[v]
        x = rng.choice(list(p.live))
        op = rng.choices([o for o, _ in OPS], [w for _, w in OPS])[0]
        lua_n, py_n, n, live = len(p.lua), len(p.py), p.n, dict(p.live)
        if op(p, x):
            done += 1
        else:
            del p.lua[lua_n:]
            del p.py[py_n:]
            p.live = live
    # the loss: every value left unused, weighted
    terms_lua, terms = [], []
    for v, s in p.live.items():
        w = p.const_float(s)
        terms_lua.append("(%s * %s):sum()" % (v, w))
        terms.append((v, w))
    p.loss_lua = " + ".join(terms_lua)
    p.loss_terms = terms
    return p


# ===== emitting and running

def lua_const(kind, shape, vals):
    if kind == "float32":
        body = lua_list([num(v) for v in vals])
        t = "tt.tensor(%s)" % (num(vals[0]) if not shape else body)
    elif kind == "int64":
        body = lua_list([str(v) for v in vals])
        t = 'tt.tensor(%s, "int64")' % (str(vals[0]) if not shape else body)
    else:
        body = lua_list(["true" if v else "false" for v in vals])
        t = 'tt.tensor(%s, "bool")' % (("true" if vals[0] else "false") if not shape else body)
    if len(shape) != 1 and shape:
        t += ":reshape(%s)" % lua_list([str(k) for k in shape])
    return t


def emit_lua(p):
    out = ["P[%d] = function()" % p.pid]
    for nm, (kind, shape, vals) in p.consts.items():
        rg = ":requires_grad_()" if nm in p.leaves else ""
        out.append("  local %s = %s%s" % (nm, lua_const(kind, shape, vals), rg))
    for s in p.lua:
        out.append("  " + s)
    out.append("  local loss = " + p.loss_lua)
    out.append("  loss:backward()")
    out.append("  return loss, {%s}, {%s}" % (", ".join("%s.grad or false" % l for l in p.leaves),
                                              ", ".join(p.aux)))
    out.append("end")
    return "\n".join(out)


LUA_RUNNER = r'''
local function emit(t)
  if not t then return "none" end
  if t:dtype() == "bool" then t = t:float() end
  local v = t:contiguous():reshape(-1):totable()
  for i = 1, #v do v[i] = string.format("%.9g", v[i]) end
  return table.concat(v, " ")
end
tt.trace.off()
local out = io.stdout
for id = FIRST, LAST do
  local ok, loss, grads, aux = pcall(P[id])
  if ok then
    out:write("P ", id, " ok\nL ", emit(loss), "\n")
    for i = 1, #grads do out:write("G ", emit(grads[i] or nil), "\n") end
    for i = 1, #aux do out:write("A ", emit(aux[i]), "\n") end
  else
    out:write("P ", id, " err ", (tostring(loss):gsub("\n", " | ")), "\n")
  end
end
out:write("END\n")
'''


def parse_tt(text):
    res, cur = {}, None
    for line in text.split("\n"):
        if line.startswith("P "):
            parts = line.split(" ", 3)
            pid = int(parts[1])
            cur = {"ok": parts[2] == "ok", "err": parts[3] if len(parts) > 3 else "", "G": [], "A": []}
            res[pid] = cur
        elif cur is not None and line[:2] in ("L ", "G ", "A "):
            body = line[2:]
            vals = None if body == "none" else [float(v) for v in body.split()] if body else []
            if line[0] == "L":
                cur["L"] = vals
            else:
                cur[line[0]].append(vals)
    return res


def run_torch(p, dtype, jitter=0):
    """the program in torch; jitter: each float input moved by up to that
    many float32 ulps (seeded), to measure how much rounding moves the result"""
    env = {}
    RUN_DTYPE[0] = dtype
    gen = torch.Generator().manual_seed(jitter)
    for nm, (kind, shape, vals) in p.consts.items():
        if kind == "float32":
            t = torch.tensor(vals, dtype=torch.float32).to(dtype).reshape(shape)
            if jitter:
                t = t * (1 + (torch.rand(t.shape, generator=gen, dtype=dtype) * 2 - 1) * 2.0 ** -23)
            if nm in p.leaves:
                t.requires_grad_()
        elif kind == "int64":
            t = torch.tensor(vals, dtype=torch.int64).reshape(shape)
        else:
            t = torch.tensor(vals, dtype=torch.bool).reshape(shape)
        env[nm] = t
    for nm, fn in p.py:
        env[nm] = fn(env)
    loss = sum((env[v] * env[w]).sum() for v, w in p.loss_terms)
    loss.backward()
    grads = [env[l].grad for l in p.leaves]
    aux = [env[a].detach() for a in p.aux]
    return loss.detach(), grads, aux


def flat(t):
    return None if t is None else t.detach().double().reshape(-1)


def close(got, want, rtol=2e-3, atol_rel=2e-4):
    """float32 tolerances: |got - want| <= atol + rtol |want|, atol from the tensor's scale"""
    if want is None:
        return got is None or all(v == 0 for v in got), 0.0
    if got is None:
        got = [0.0] * want.numel()
    if len(got) != want.numel():
        return False, math.inf
    g = torch.tensor(got, dtype=torch.float64)
    fin = torch.isfinite(want)
    if not torch.equal(torch.isnan(g), torch.isnan(want)) or not torch.equal(g[torch.isinf(want)], want[torch.isinf(want)]):
        return False, math.inf
    if not torch.isfinite(g[fin]).all():
        return False, math.inf
    w = want[fin]
    if w.numel() == 0:
        return True, 0.0
    scale = max(float(w.abs().max()), 1.0)
    err = (g[fin] - w).abs()
    ok = bool((err <= atol_rel * scale + rtol * w.abs()).all())
    return ok, float(err.max()) / scale


def compare(p, res):
    """None if tt agrees; else a reason"""
    pairs = [("loss", res["L"])] + [("grad %s" % l, g) for l, g in zip(p.leaves, res["G"])] + \
            [("aux %s" % a, v) for a, v in zip(p.aux, res["A"])]
    if len(res["G"]) != len(p.leaves) or len(res["A"]) != len(p.aux):
        return "tt returned %d grads, %d aux; want %d, %d" % (len(res["G"]), len(res["A"]), len(p.leaves), len(p.aux))
    SATURATED[0] = GELU_INF[0] = False
    l64, g64, a64 = run_torch(p, torch.float64)
    saturated, gelu_inf = SATURATED[0], GELU_INF[0]
    if not math.isfinite(float(l64)):
        return "skip"
    want = [l64.reshape(-1)] + [flat(g) for g in g64] + [flat(a) for a in a64]
    bad = []
    for (what, got), w in zip(pairs, want):
        ok, _ = close(got, w)
        if not ok:
            bad.append(what)
            if VERBOSE:
                print("%s\n  tt    %s\n  torch %s" % (what, got, w.tolist() if w is not None else None))
    if not bad:
        return None
    # the re-check: torch in float32 on the same values
    # the re-check: torch in float32 on the same values, and float64 on
    # values moved by an ulp (what float32 rounding of any step may do)
    runs = [run_torch(p, torch.float32)] + [run_torch(p, torch.float64, j) for j in (1, 2, 3)]
    others = [[l.reshape(-1)] + [flat(g) for g in gs] + [flat(a) for a in aux] for l, gs, aux in runs]
    real = []
    for k, ((what, got), w) in enumerate(zip(pairs, want)):
        if what not in bad:
            continue
        ok32, _ = close(got, others[0][k])
        _, e_tt = close(got, w, 0, 0)
        noise = max(close(o[k].tolist() if o[k] is not None else None, w, 0, 0)[1] for o in others)
        if ok32 or (math.isfinite(e_tt) and e_tt <= 8 * noise):
            continue
        if VERBOSE:
            print("  %s: tt off by %.3g (of the scale), rounding moves torch by %.3g" % (what, e_tt, noise))
        real.append(what)
    # the same rounding where torch's gradient is exactly 0 for another
    # reason (values equal along the keys, an expanded v): sdpa's cancellation
    zero_ref = all(w_ is not None and float(w_.abs().max()) < 1e-9
                   for (what, _), w_ in zip(pairs, want) if what in real)
    if real and (saturated or (zero_ref and any(o.startswith("sdpa") for o in p.ops))):
        return "saturated"
    torch_nan = all(w_ is not None and bool(torch.isnan(w_).any())
                    for (what, _), w_ in zip(pairs, want) if what in real)
    if real and gelu_inf and torch_nan:
        return "gelu_inf"
    return ("mismatch: " + ", ".join(real)) if real else None


def torch_script(p):
    return "# ops: %s\n# replay: difftest.py --replay SEED:ID\n" % " ".join(p.ops)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--batch", type=int, default=400)
    ap.add_argument("--tt", default="./tensortrace")
    ap.add_argument("--out", default="build/difftest")
    ap.add_argument("--show", type=int, default=-1, help="print program ID's Lua and stop")
    ap.add_argument("--only", type=int, default=0, help="run program ID alone and print each disagreement")
    a = ap.parse_args()
    torch.set_num_threads(1)
    os.makedirs(a.out, exist_ok=True)
    counts = collections.Counter()
    fails = collections.defaultdict(list)
    gaps = collections.defaultdict(list)
    opcount = collections.Counter()
    t0 = time.time()
    pid = 0
    global VERBOSE
    if a.only:
        pid, a.n, a.batch, VERBOSE = a.only - 1, a.only, 1, True
    while pid < a.n:
        nb = min(a.batch, a.n - pid)
        progs = []
        for i in range(nb):
            rng = random.Random("%d:%d" % (a.seed, pid + i))
            progs.append(generate(rng, pid + i + 1))
        if a.show >= 0:
            for p in progs:
                if p.pid == a.show:
                    print(emit_lua(p))
                    return 0
            pid += nb
            continue
        path = os.path.join(a.out, "batch.lua")
        with open(path, "w") as f:
            f.write("local P = {}\n")
            for p in progs:
                f.write(emit_lua(p) + "\n")
            f.write(LUA_RUNNER.replace("FIRST", str(progs[0].pid)).replace("LAST", str(progs[-1].pid)))
        run = subprocess.run([a.tt, "-q", "--threads", "1", path], capture_output=True, text=True)
        res = parse_tt(run.stdout)
        if "END" not in run.stdout:
            print("tensortrace stopped in a batch (exit %d): %s" % (run.returncode, run.stderr[-2000:]))
        for p in progs:
            counts["programs"] += 1
            for o in p.ops:
                opcount[o] += 1
            r = res.get(p.pid)
            why = None
            if r is None:
                why = "no result (tensortrace crashed)"
            elif not r["ok"]:
                try:
                    run_torch(p, torch.float64)
                    why = "gap: " + r["err"]
                except Exception as ex:      # torch refuses too: the generator's mistake
                    counts["both refuse"] += 1
                    fails["both refuse: " + str(ex).split("\n")[0][:100]].append(p)
                    continue
            else:
                try:
                    why = compare(p, r)
                except Exception as ex:
                    why = "torch refuses what tt ran: " + str(ex).split("\n")[0][:120]
            if why == "saturated":
                counts["saturated sdpa (rounding amplified)"] += 1
                fails["sdpa where torch's dq/dk is exactly 0 (a saturated row, or equal values): tt's "
                      "float32 rounding, amplified upstream; not counted as a failure"].append(p)
            elif why == "gelu_inf":
                counts["gelu at +-inf (torch NaN, tt the limit)"] += 1
                fails["gelu at +-inf: torch's derivative is NaN (inf * 0), tt's the limit (0 at -inf, 1 at "
                      "+inf); not counted as a failure"].append(p)
            elif why == "skip":
                counts["skipped (float64 loss not finite)"] += 1
            elif why is None:
                counts["agree"] += 1
            elif why.startswith("gap: "):
                counts["tt refuses"] += 1
                key = why[5:]
                key = key[key.find(": ") + 2:] if ".lua:" in key[:80] else key
                gaps[key[:110]].append(p)
            else:
                counts["fail"] += 1
                fails[why + " | " + " ".join(sorted(set(p.ops)))].append(p)
        pid += nb
        el = time.time() - t0
        print("%d programs, %.0f s: %s" % (pid, el, dict(counts)), flush=True)
    for title, groups in (("failures", fails), ("tt refuses (contract gaps)", gaps)):
        print("== %s: %d classes" % (title, len(groups)))
        for k, ps in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            ex = ps[0]
            fn = os.path.join(a.out, "case-%d-%d.lua" % (a.seed, ex.pid))
            with open(fn, "w") as f:
                f.write("-- %s\n-- ops: %s\nlocal P = {}\n%s\nlocal loss, g, aux = P[%d]()\nprint(loss)\n"
                        "for i, t in ipairs(g) do print('grad', i, t) end\nfor i, t in ipairs(aux) do print('aux', i, t) end\n"
                        % (k.replace("\n", " "), " ".join(ex.ops), emit_lua(ex), ex.pid))
            print("  %6d  %s  (e.g. %s)" % (len(ps), k, fn))
    print("ops used: " + ", ".join("%s %d" % kv for kv in sorted(opcount.items())))
    print("%d programs: %d agree, %d fail, %d tt refuses, %d skipped (loss not finite), %d saturated sdpa, "
          "%d gelu at +-inf, %d both refuse" % (counts["programs"], counts["agree"], counts["fail"],
                                                counts["tt refuses"], counts["skipped (float64 loss not finite)"],
                                                counts["saturated sdpa (rounding amplified)"],
                                                counts["gelu at +-inf (torch NaN, tt the limit)"],
                                                counts["both refuse"]))
    return 1 if counts["fail"] or counts["tt refuses"] or counts["both refuse"] else 0


if __name__ == "__main__":
    sys.exit(main())
