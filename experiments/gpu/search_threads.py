"""Seconds of MetaSchedule's evolutionary search for one CUDA batch, by search threads.

No GPU is needed: this times only the search that picks a batch of candidates
(initial population, genetic iterations, the postprocessors' checks), with TVM's
random cost model, for the workloads of experiments/llm-ops-cuda.yaml. On the H200
machine (2026-12-04) the 4096³ tensor-core GEMM spent about 170 s of its 221 s there
with one thread (costlab's default search.num_tuning_cores), so this says what the
GPU script's RUN_S must cover with more.

    python experiments/gpu/search_threads.py --threads 1 2 --workloads gemm-tc swiglu swiglu-merged
Prints one line per (workload, threads): seconds and candidates returned.
"""

from __future__ import annotations

import argparse
import os
import time

WORKLOADS = {  # experiments/llm-ops-cuda.yaml's, and the two-matmul swiglu it no longer tunes
    "gemm-tc": ("gemm", {"M": 4096, "N": 4096, "K": 4096, "dtype": "float16", "out_dtype": "float32"},
                "cuda-tensorcore"),
    "gemm-decode": ("gemm", {"M": 1, "N": 4096, "K": 4096, "dtype": "float16", "out_dtype": "float32"}, "default"),
    "rmsnorm": ("rmsnorm", {"M": 4096, "N": 4096, "dtype": "float16"}, "default"),
    "softmax": ("softmax", {"M": 4096, "N": 4096, "dtype": "float16"}, "default"),
    "swiglu": ("swiglu", {"M": 128, "N": 11008, "K": 4096, "dtype": "float16"}, "default"),
    "swiglu-merged": ("swiglu_merged", {"M": 128, "N": 11008, "K": 4096, "dtype": "float16"}, "default"),
    "attention": ("attention", {"B": 1, "H": 32, "S": 128, "D": 128, "dtype": "float16"}, "default"),
}


def search_seconds(name: str, threads: int, batch: int, population: int, seed: int) -> tuple[float, int]:
    from tvm.s_tir import meta_schedule as ms

    from costlab._tvm import import_tensor_intrinsics
    from costlab.search.session import space_generator
    from costlab.targets import make_target
    from costlab.workloads import build_workload

    import_tensor_intrinsics()
    op, params, space = WORKLOADS[name]
    context = ms.TuneContext(mod=build_workload(op, params), target=make_target("h200"),
                             space_generator=space_generator(space),
                             search_strategy=ms.search_strategy.EvolutionarySearch(population_size=population),
                             rand_state=seed, num_threads=threads)
    start = time.perf_counter()
    context.pre_tuning(max_trials=batch, num_trials_per_iter=batch, design_spaces=context.generate_design_space(),
                       database=ms.database.MemoryDatabase(), cost_model=ms.cost_model.RandomModel())
    candidates = context.generate_measure_candidates() or []
    return time.perf_counter() - start, len(candidates)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, len(os.sched_getaffinity(0))])
    ap.add_argument("--workloads", nargs="+", default=list(WORKLOADS), choices=list(WORKLOADS))
    ap.add_argument("--batch", type=int, default=32, help="candidates per batch (trials_per_iter)")
    ap.add_argument("--population", type=int, default=512)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    print(f"{len(os.sched_getaffinity(0))} cores; batch {args.batch}, population {args.population}", flush=True)
    for name in args.workloads:
        for threads in args.threads:
            seconds, n = search_seconds(name, threads, args.batch, args.population, args.seed)
            print(f"{name:12s} threads {threads:2d}: {seconds:7.1f} s, {n} candidates", flush=True)


if __name__ == "__main__":
    main()
