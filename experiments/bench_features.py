"""Benchmark: candidates per second of each feature extractor.

For ``--n`` candidates (default 512) of a ``--size``³ float32 GEMM (default 512),
sampled like the evolutionary search (``costlab.features.sampling``), on the host
CPU target and on CUDA (``h100`` preset; no GPU needed), print how many candidates
each extractor turns into features per second (best of ``--repeat`` runs, one
thread). Goals: trace >= 2000/s, analysis and graph >= 500/s.

Two rates are printed: by wall-clock time and by this process's CPU time. On a
shared machine the wall-clock rate also measures the other processes; the CPU-time
rate is what the code costs, and what a dedicated core would see.

    python experiments/bench_features.py [--n 512] [--size 512] [--targets cpu,h100]
        [--extractors per_store,trace,analysis,graph] [--repeat 3] [--json out.json]

The script also prints the time of a fixed pure-Python loop before and after (about
0.17 s on an idle core of the development machine) as a reference for the load.
"""

from __future__ import annotations

import argparse
import json
import time


def _python_reference_s() -> float:
    t = time.perf_counter()
    sum(range(10_000_000))
    return time.perf_counter() - t


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=512, help="candidates per target")
    parser.add_argument("--size", type=int, default=512, help="GEMM M = N = K")
    parser.add_argument("--targets", default="cpu,h100")
    parser.add_argument("--extractors", default="per_store,trace,analysis,graph")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None, help="also write the results to this file")
    args = parser.parse_args(argv)

    import costlab.features as F
    from costlab.features.sampling import sample_candidates
    from costlab.workloads import build_workload

    mod = build_workload("gemm", {"M": args.size, "N": args.size, "K": args.size})
    names = [n.strip() for n in args.extractors.split(",") if n.strip()]
    results: dict = {"n": args.n, "size": args.size, "targets": {}}
    print(f"gemm {args.size}^3, {args.n} candidates per target; python reference loop "
          f"{_python_reference_s():.2f} s (about 0.17 s when idle)")
    for target in [t.strip() for t in args.targets.split(",") if t.strip()]:
        t0 = time.perf_counter()
        context, candidates = sample_candidates(mod, target, args.n, seed=args.seed)
        sample_s = time.perf_counter() - t0
        print(f"\n[{target}] sampled {len(candidates)} candidates in {sample_s:.1f} s; "
              f"python reference loop {_python_reference_s():.2f} s")
        rows = {}
        for name in names:
            ex = F.get(name)
            ex.extract(context, candidates[:8])  # warm-up (imports, caches)
            best = best_cpu = float("inf")
            for _ in range(args.repeat):
                t0, c0 = time.perf_counter(), time.process_time()
                ex.extract(context, candidates)
                best = min(best, time.perf_counter() - t0)
                best_cpu = min(best_cpu, time.process_time() - c0)
            rate, rate_cpu = len(candidates) / best, len(candidates) / max(best_cpu, 1e-9)
            rows[name] = {"cand_per_s": rate, "cand_per_cpu_s": rate_cpu, "seconds": best,
                          "cpu_seconds": best_cpu, "dims": len(ex.feature_names)}
            print(f"  {name:<10} {rate:7.0f} cand/s wall  {rate_cpu:7.0f} cand/s cpu   ({len(ex.feature_names)} "
                  f"{'node features' if ex.kind == 'graph' else 'features'})")
        results["targets"][target] = {"sample_s": sample_s, "extractors": rows}
    results["python_reference_s"] = _python_reference_s()
    print(f"\npython reference loop after the runs: {results['python_reference_s']:.2f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return results


if __name__ == "__main__":
    main()
