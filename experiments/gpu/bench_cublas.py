"""fp16 GEMM throughput of torch.matmul (cuBLAS) on this GPU, for the ratio to tuned kernels.

    python experiments/gpu/bench_cublas.py --m 4096 --n 4096 --k 4096
Prints one JSON line: shape, median milliseconds over timed repeats, TFLOP/s.
"""

from __future__ import annotations

import argparse
import json


def main() -> None:
    import torch

    ap = argparse.ArgumentParser()
    ap.add_argument("--m", type=int, default=4096)
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--k", type=int, default=4096)
    ap.add_argument("--repeats", type=int, default=50)
    args = ap.parse_args()
    a = torch.randn(args.m, args.k, dtype=torch.float16, device="cuda")
    b = torch.randn(args.k, args.n, dtype=torch.float16, device="cuda")
    for _ in range(10):
        torch.matmul(a, b)
    torch.cuda.synchronize()
    times = []
    for _ in range(args.repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.matmul(a, b)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    ms = times[len(times) // 2]
    flops = 2.0 * args.m * args.n * args.k
    print(json.dumps({"m": args.m, "n": args.n, "k": args.k, "dtype": "float16", "median_ms": ms,
                      "tflops": flops / (ms * 1e-3) / 1e12, "device": torch.cuda.get_device_name()}))


if __name__ == "__main__":
    main()
