"""Offline: does pretraining on two machines' records rank a held-out workload better than on either?

``datasets/cpu-intel-v1`` (this Intel VM's records) ranks held-out GEMM, RMSNorm and softmax
better, ``datasets/cpu-v2`` (a Zen 3 VM's, with more workloads per family) the batch matmul and
the conv2d (``same-machine-pretraining.md``). This trains the model of
``lgbm-loto-intel-related-ucb-ordered`` (its model, features and ``pretrain_family`` rule, applied
to each dataset without the held-out workload) on the rows each source chooses, and on both sets
of rows together, per seed, and scores the held-out workload's records in ``datasets/cpu-intel-v1``
with TenSet's per-task metrics (failed records left out), averaged over the seeds::

    python experiments/two_sources_pretraining.py --out experiments/results/two-sources-pretraining.md
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
FEATURES = "analysis+trace"
METRICS = ("kendall_tau", "peak_score@1", "peak_score@5")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", default="experiments/cpu-min5.yaml")
    parser.add_argument("--model", default="lgbm-loto-intel-related-ucb-ordered")
    parser.add_argument("--sources", nargs=2, default=["datasets/cpu-intel-v1", "datasets/cpu-v2"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--out", help="write the markdown table here too")
    args = parser.parse_args(argv)

    sys.path.insert(0, str(ROOT / "experiments"))
    from retiming import write_report

    from costlab.config import load_config
    from costlab.data.dataset import load_dataset
    from costlab.data.metrics import ranking_metrics
    from costlab.data.offline import load_rows
    from costlab.data.pretraining_set import select_pretraining_rows
    from costlab.features._base import Features
    from costlab.models import make_model
    from costlab.workloads import workload_key

    cfg = load_config(args.config)
    spec = {m.display_name: m for m in cfg.cost_models}.get(args.model)
    if spec is None:
        print(f"error: {args.config}: no cost model labelled {args.model}", file=sys.stderr)
        return 2
    evaluate_on = args.sources[0]
    loaded = {path: load_dataset(path) for path in args.sources}
    variants = {path: [path] for path in args.sources} | {"both": list(args.sources)}
    start = time.perf_counter()
    table = []  # (workload, variant, mean metrics)
    for w in cfg.workloads:
        key = workload_key(w.name, w.params)
        held = loaded[evaluate_on].loc[loaded[evaluate_on]["workload_key"] == key, "row"].to_numpy()
        held_x, held_latency, held_groups, _, _ = load_rows(evaluate_on, FEATURES, held)
        for variant, paths in variants.items():
            per_seed = []
            for seed in args.seeds:
                parts = [load_rows(path, FEATURES, select_pretraining_rows(
                    loaded[path], key, family=spec.pretrain_family, seed=seed).rows) for path in paths]
                x = Features(parts[0][0].schema, dense=np.concatenate([p[0].dense for p in parts]))
                model, _ = make_model(spec.name, spec.params, seed)
                model.fit(x, np.concatenate([p[1] for p in parts]), np.concatenate([p[2] for p in parts]))
                scores = np.asarray(model.predict(held_x), dtype=np.float64)
                row = next(iter(ranking_metrics(held_latency, scores, held_groups).per_task.values()))
                per_seed.append([row[k] for k in METRICS])
            table.append((w.name, variant, np.mean(per_seed, axis=0)))
            print(f"[{time.strftime('%H:%M:%S')}] {w.name} · {variant}: τ {table[-1][2][0]:.3f}", file=sys.stderr,
                  flush=True)
    took = time.perf_counter() - start

    lines = ["# Pretraining on two machines' records", "",
             f"Produced by `python experiments/two_sources_pretraining.py{' --out ' + args.out if args.out else ''}` "
             f"on {datetime.date.today().isoformat()} ({took:.0f} s). `{args.model}` of `{args.config}` (its model, "
             f"features `{FEATURES}` and `pretrain_family: {spec.pretrain_family}` rows), trained per seed "
             f"({', '.join(map(str, args.seeds))}) on each source without the held-out workload, and on both sources' "
             f"rows together, scores that workload's records in `{evaluate_on}`; TenSet's per-task metrics, failed "
             "records left out, means over the seeds.", "",
             "| workload | pretrained on | Kendall τ | peak@1 | peak@5 |", "|---|---|---|---|---|"]
    for workload, variant, means in table:
        lines.append(f"| {workload} | {variant} | " + " | ".join(f"{v:.3f}" for v in means) + " |")
    for variant in variants:
        means = np.mean([m for _, v, m in table if v == variant], axis=0)
        lines.append(f"| mean | {variant} | " + " | ".join(f"{v:.3f}" for v in means) + " |")
    write_report(lines, Path(args.out) if args.out else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
