#!/usr/bin/env python3
"""How long does a memory-bound kernel take, as a function of the bytes it moves, when it runs back to
back in a CUDA graph? Fits t = fixed + bytes / rate for PyTorch's device-to-device copy and a
read-only reduction, over sizes of the GEMM layers (9.4 .. 132 MB), buffers rotated past 2x L2.

The fixed term is what a streaming kernel of that size pays for its ramp-up and tail, whatever its
own code: the floor of the per-call fixed cost that fp4kit's small-M GEMMs show (docs/PERF.md,
session 19). Run on the GPU machine: python3 bench/probes/hbm_ramp.py (PyTorch; about 20 s).
"""
import statistics
import torch

SIZES_MB = [9.4, 18.9, 37.7, 75.5, 132.1]
CALLS = 20


def graph_time_us(fn_list, reps=30):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for f in fn_list:
            f()  # warm-up outside the capture
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for f in fn_list:
            f()
    g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e3 / len(fn_list))
    return statistics.median(times)


def fit(points):
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return my - slope * mx, 1.0 / slope  # fixed us, bytes per us (= MB/s * 1e-6 ... TB/s when MB)


def main():
    dev = torch.cuda.get_device_properties(0)
    l2 = getattr(dev, "L2_cache_size", 50 << 20)
    print(f"# {dev.name}, {dev.multi_processor_count} SMs, L2 {l2 >> 20} MB; graph of {CALLS} calls, median per call")
    results = {"copy": [], "sum": []}
    for mb in SIZES_MB:
        n = int(mb * 1e6) // 4
        rot = max(2, int(2 * l2 / (mb * 1e6)) + 1)
        src = [torch.randn(n, device="cuda") for _ in range(rot)]
        dst = [torch.empty_like(src[0]) for _ in range(rot)]
        out = torch.empty((), device="cuda")
        copies = [(lambda i=i: dst[i % rot].copy_(src[i % rot])) for i in range(CALLS)]
        sums = [(lambda i=i: torch.sum(src[i % rot], dim=0, out=out)) for i in range(CALLS)]
        tc = graph_time_us(copies)
        ts = graph_time_us(sums)
        results["copy"].append((2 * mb, tc))  # read + write
        results["sum"].append((mb, ts))
        print(f"{mb:7.1f} MB  copy {tc:8.2f} us ({2 * mb / tc:.3f} TB/s r+w)   sum {ts:8.2f} us ({mb / ts:.3f} TB/s read)")
        del src, dst
        torch.cuda.empty_cache()
    for k, pts in results.items():
        f, rate = fit(pts)
        print(f"fit {k}: fixed {f:.2f} us per call, marginal rate {rate:.3f} TB/s")


if __name__ == "__main__":
    main()
