#!/usr/bin/env python3
# bench_torch.py — PyTorch yardstick for `make bench` (called by bench.c).
# Prints one line per measurement: "<name> <median_ms> <min_ms> <max_ms> <peak_extra_mib>".
# Usage: bench_torch.py THREADS softmax | ew | sdpa N HKV [N HKV ...]
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


def main():
    threads = int(sys.argv[1])
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    print("info torch %s threads %d sdpa_fn %s" % (torch.__version__, torch.get_num_threads(),
          hasattr(torch.nn.functional, "scaled_dot_product_attention")))
    what = sys.argv[2]
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
