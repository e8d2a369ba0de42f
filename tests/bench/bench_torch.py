#!/usr/bin/env python3
# bench_torch.py — PyTorch yardstick for `make bench` (called by bench.c).
# Prints one line per measurement: "<name> <median_ms> <min_ms> <max_ms> <peak_extra_mib>".
# Usage: bench_torch.py THREADS softmax | ew | sdpa N HKV [N HKV ...] | sdpabwd N [N ...] | train [BUDGET_S]
# sdpabwd prints a sixth field, the backward's median ms; train prints "train <ms> <ms> <ms> <mib> <loss>".
import math
import sys
import time

try:
    import torch
except ImportError:
    print("absent torch (install Debian's python3-torch: apt-get install python3-torch)")
    sys.exit(0)


def rss_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def reset_peak():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")          # resets VmHWM to the current RSS
    except OSError:
        pass


def measure(fn, budget=1.0):
    """median/min/max ms after a warm-up, and the warm-up's extra peak RSS."""
    base = rss_kib("VmRSS")
    reset_peak()
    t = time.perf_counter()
    fn()
    first = time.perf_counter() - t
    peak = (rss_kib("VmHWM") - base) / 1024.0
    reps = max(3, min(9, int(budget / max(first, 1e-6))))
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    ts.sort()
    return ts[len(ts) // 2] * 1e3, ts[0] * 1e3, ts[-1] * 1e3, peak


def fwd_bwd(forward, budget):
    """forward then .backward(): medians of both together and of the backward
    alone (ms), and the first call's extra peak RSS (MiB)."""
    base = rss_kib("VmRSS")
    reset_peak()
    t = time.perf_counter()
    forward().backward(forward.grad)
    first = time.perf_counter() - t
    peak = (rss_kib("VmHWM") - base) / 1024.0
    reps = max(3, min(9, int(budget / max(first, 1e-6))))
    both, bwd = [], []
    for _ in range(reps):
        t = time.perf_counter()
        y = forward()
        t1 = time.perf_counter()
        y.backward(forward.grad)
        t2 = time.perf_counter()
        both.append(t2 - t)
        bwd.append(t2 - t1)
        del y
    both.sort()
    bwd.sort()
    return both[len(both) // 2] * 1e3, both[0] * 1e3, both[-1] * 1e3, peak, bwd[len(bwd) // 2] * 1e3


def sdpa_backward(n):
    """autograd through the explicit formula, as bench.c's sdpabwd section does ours"""
    H, Dh = 8, 64
    q, k, v = (torch.randn(1, H, n, Dh, requires_grad=True) for _ in range(3))
    hide = torch.ones(n, n, dtype=torch.bool).triu(1)

    def forward():
        s = q @ k.transpose(-2, -1) * (1.0 / math.sqrt(Dh))
        return torch.softmax(s.masked_fill(hide, float("-inf")), -1) @ v

    forward.grad = torch.randn(1, H, n, Dh)
    print("sdpabwd_%d %.3f %.3f %.3f %.1f %.3f" % ((n,) + fwd_bwd(forward, 4.0)))


class Attention(torch.nn.Module):
    """causal multi-head attention with a residual, as tests/bench/train.lua"""

    def __init__(self, d, heads):
        super().__init__()
        self.h = heads
        self.q, self.k, self.v, self.o = (torch.nn.Linear(d, d, bias=False) for _ in range(4))

    def forward(self, x, hide):
        B, N, D = x.shape
        split = lambda t: t.view(B, N, self.h, D // self.h).transpose(1, 2)
        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        s = (q @ k.transpose(-2, -1) * (1.0 / math.sqrt(D // self.h))).masked_fill(hide, float("-inf"))
        y = (torch.softmax(s, -1) @ v).transpose(1, 2).reshape(B, N, D)
        return x + self.o(y)


WARMUP = 30                         # untimed steps before train_step's timing, as in train.lua


def train_step(budget):
    """one AdamW step of the lesson-sized model: the same sizes and ops as train.lua"""
    V, D, L, H, B, N = 64, 64, 2, 4, 32, 64
    tok, pos = torch.nn.Embedding(V, D), torch.nn.Embedding(N, D)
    layers = torch.nn.ModuleList(Attention(D, H) for _ in range(L))
    unembed = torch.nn.Linear(D, V, bias=False)
    params = list(tok.parameters()) + list(pos.parameters()) + list(layers.parameters()) + list(unembed.parameters())
    opt = torch.optim.AdamW(params, lr=1e-3)
    ids = torch.randint(0, V, (B, N + 1))
    x_ids, targets = ids[:, :N], ids[:, 1:]
    hide = torch.ones(N, N, dtype=torch.bool).triu(1)
    positions = torch.arange(N)
    loss = None

    def step():
        nonlocal loss
        opt.zero_grad()
        x = tok(x_ids) + pos(positions)
        for layer in layers:
            x = layer(x, hide)
        loss = torch.nn.functional.cross_entropy(unembed(x).reshape(B * N, V), targets.reshape(B * N))
        loss.backward()
        opt.step()

    for _ in range(WARMUP - 1):     # as train.lua: the steady state of a long run
        step()
    r = measure(step, budget)
    print("train %.3f %.3f %.3f %.1f %.4f" % (r + (loss.item(),)))


def main():
    threads = int(sys.argv[1])
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    print("info torch %s threads %d sdpa_fn %s" % (torch.__version__, torch.get_num_threads(),
          hasattr(torch.nn.functional, "scaled_dot_product_attention")))
    what = sys.argv[2]
    if what == "sdpabwd":
        for n in sys.argv[3:]:
            sdpa_backward(int(n))
        return
    if what == "train":
        train_step(float(sys.argv[3]) if len(sys.argv) > 3 else 2.0)
        return
    with torch.no_grad():
        if what == "softmax":
            x = torch.randn(8, 2048, 2048)
            r = measure(lambda: torch.softmax(x, -1))
            print("softmax %.3f %.3f %.3f %.1f" % r)
            return
        if what == "ew":          # same order as bench.c's bench_ew
            x = torch.rand(8, 2048, 256) + 1.5
            y = torch.rand(8, 2048, 256)
            m = torch.rand(8, 2048, 256) < 0.5
            for name, fn in (("add", lambda: x + y), ("div_scalar", lambda: x / 2),
                             ("maximum", lambda: torch.maximum(x, y)), ("gt", lambda: x > y),
                             ("exp", lambda: torch.exp(x)), ("log", lambda: torch.log(x)),
                             ("sqrt", lambda: torch.sqrt(x)),
                             ("masked_fill", lambda: x.masked_fill(m, float("-inf")))):
                print("%s %.3f %.3f %.3f %.1f" % ((name,) + measure(fn, 0.5)))
            return
        args = sys.argv[3:]
        for i in range(0, len(args), 2):
            n, hkv = int(args[i]), int(args[i + 1])
            H, Dh = 8, 64
            q = torch.randn(1, H, n, Dh)
            k = torch.randn(1, hkv, n, Dh)
            v = torch.randn(1, hkv, n, Dh)
            mask = torch.ones(n, n, dtype=torch.bool).tril()

            def explicit():
                kk, vv = k, v
                if hkv != H:          # the formula needs K/V per query head
                    kk = k.repeat_interleave(H // hkv, dim=1)
                    vv = v.repeat_interleave(H // hkv, dim=1)
                s = q @ kk.transpose(-2, -1) / math.sqrt(Dh)
                s = s.masked_fill(~mask, float("-inf"))
                return torch.softmax(s, -1) @ vv

            print("explicit_%d_%d %.3f %.3f %.3f %.1f" % ((n, hkv) + measure(explicit, 2.0)))
            if hasattr(torch.nn.functional, "scaled_dot_product_attention"):
                F = torch.nn.functional

                def fused():
                    kk, vv = k, v
                    if hkv != H:
                        kk = k.repeat_interleave(H // hkv, dim=1)
                        vv = v.repeat_interleave(H // hkv, dim=1)
                    return F.scaled_dot_product_attention(q, kk, vv, is_causal=True)

                print("fused_%d_%d %.3f %.3f %.3f %.1f" % ((n, hkv) + measure(fused, 2.0)))


if __name__ == "__main__":
    main()
