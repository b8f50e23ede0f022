"""Offline: do scale-free ratios of the analysis features rank a held-out workload better?

The held-out models of ``experiments/cpu-min5.yaml`` train on other workloads' raw ``analysis``
counts (bytes, FLOPs, footprints), whose ranges differ with each workload's size; a tree's
thresholds learned on one size need not carry to another. This adds, beside the raw columns,
each byte count and footprint over the workload's whole footprint (``footprint_bytes_L0``: how
often the data is moved, and what share of it one iteration of the outer loops touches) and
each operation count over all operations, and trains the model of
``lgbm-loto-intel-related-ucb-ordered`` (its rows, ``pretrain_family: related``, per seed) on
each pretraining dataset with and without them. It scores each held-out workload's records in
``datasets/cpu-intel-v1`` (this Intel VM's; failed records left out) with TenSet's per-task
metrics, averaged over the seeds::

    python experiments/scale_free_features.py --out experiments/results/scale-free-features.md
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


def with_ratios(features):
    """FEATURES with the scale-free ratio columns appended (named ``ratio.*``)."""
    from costlab.features._base import Features, FeatureSchema

    names = features.schema.names
    x = features.dense.astype(np.float64)
    col = {n: i for i, n in enumerate(names)}
    whole = np.maximum(x[:, col["analysis.footprint_bytes_L0"]], 1.0)
    ops = np.maximum(x[:, col["analysis.flops_total"]] + x[:, col["analysis.int_arith_ops"]], 1.0)
    extra, extra_names = [], []
    for name in names:
        if not name.startswith("analysis."):
            continue
        short = name.removeprefix("analysis.")
        if short.startswith("bytes_") or (short.startswith("footprint_") and short != "footprint_bytes_L0"):
            extra.append(x[:, col[name]] / whole)
            extra_names.append(f"ratio.{short}_per_footprint_L0")
        elif short.startswith("flop_") or short in ("int_arith_ops", "int_index_ops", "other_ops"):
            extra.append(x[:, col[name]] / ops)
            extra_names.append(f"ratio.{short}_per_op")
    dense = np.concatenate([x, np.stack(extra, axis=1)], axis=1).astype(np.float32)
    schema = FeatureSchema(features.schema.extractor + "+ratio", features.schema.version, names + extra_names, "dense")
    return Features(schema, dense=dense)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", default="experiments/cpu-min5.yaml")
    parser.add_argument("--model", default="lgbm-loto-intel-related-ucb-ordered")
    parser.add_argument("--sources", nargs="+", default=["datasets/cpu-intel-v1", "datasets/cpu-v2"])
    parser.add_argument("--evaluate-on", default="datasets/cpu-intel-v1")
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
    from costlab.models import make_model
    from costlab.workloads import workload_key

    cfg = load_config(args.config)
    spec = {m.display_name: m for m in cfg.cost_models}.get(args.model)
    if spec is None:
        print(f"error: {args.config}: no cost model labelled {args.model}", file=sys.stderr)
        return 2
    evaluation = load_dataset(args.evaluate_on)
    start = time.perf_counter()
    table = []  # (source, workload, variant, mean metrics)
    for source_path in args.sources:
        source = load_dataset(source_path)
        for w in cfg.workloads:
            key = workload_key(w.name, w.params)
            held = evaluation.loc[evaluation["workload_key"] == key, "row"].to_numpy()
            held_x, held_latency, held_groups, _, _ = load_rows(args.evaluate_on, FEATURES, held)
            for variant, transform in (("raw", lambda f: f), ("raw + ratios", with_ratios)):
                per_seed = []
                for seed in args.seeds:
                    chosen = select_pretraining_rows(source, key, family=spec.pretrain_family, seed=seed)
                    x, latency, groups, _, _ = load_rows(source_path, FEATURES, chosen.rows)
                    model, _ = make_model(spec.name, spec.params, seed)
                    model.fit(transform(x), latency, groups)
                    scores = np.asarray(model.predict(transform(held_x)), dtype=np.float64)
                    row = next(iter(ranking_metrics(held_latency, scores, held_groups).per_task.values()))
                    per_seed.append([row[k] for k in METRICS])
                table.append((source_path, w.name, variant, np.mean(per_seed, axis=0)))
                print(f"[{time.strftime('%H:%M:%S')}] {source_path} · {w.name} · {variant}: τ {table[-1][3][0]:.3f}",
                      file=sys.stderr, flush=True)
    took = time.perf_counter() - start

    lines = ["# Scale-free analysis features for a held-out workload", "",
             f"Produced by `python experiments/scale_free_features.py{' --out ' + args.out if args.out else ''}` on "
             f"{datetime.date.today().isoformat()} ({took:.0f} s). `{args.model}` of `{args.config}` (its model, "
             f"features `{FEATURES}` and pretraining rows), trained per seed ({', '.join(map(str, args.seeds))}) on "
             f"each source without the held-out workload, scores that workload's records in `{args.evaluate_on}`; "
             "TenSet's per-task metrics, failed records left out, means over the seeds. `raw + ratios` adds each "
             "byte count and footprint over the workload's whole footprint and each operation count over all "
             "operations.", "",
             "| pretrained on | workload | features | Kendall τ | peak@1 | peak@5 |", "|---|---|---|---|---|---|"]
    for source_path, workload, variant, means in table:
        lines.append(f"| {source_path} | {workload} | {variant} | " + " | ".join(f"{v:.3f}" for v in means) + " |")
    for source_path in args.sources:
        for variant in ("raw", "raw + ratios"):
            rows = [m for s, _, v, m in table if s == source_path and v == variant]
            lines.append(f"| {source_path} | mean | {variant} | " + " | ".join(f"{v:.3f}" for v in np.mean(rows, axis=0))
                         + " |")
    write_report(lines, Path(args.out) if args.out else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
