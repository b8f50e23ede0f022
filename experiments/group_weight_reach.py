"""Does weighting each workload equally help the first measurements count? Offline, on a dataset.

A warm-started tuning session (``pretrain_family: related``) refits its LightGBM ranker on
the pretraining rows (thousands, of other workloads) and the tuned workload's measurements
so far (32 after the first batch). Each row weighs 1, so the tuned workload is a few
percent of the training signal. ``group_weight: equal`` gives every workload group the same
total weight instead.

For each suite workload, each probe size (the records measured so far) and each seed (which
records): LightGBM trained on the related families' rows plus that many random records of
the held-out workload, with ``group_weight`` "rows" and "equal", and on the probe records
alone; scored on the workload's other records with TenSet's metrics, averaged over seeds.

    python experiments/group_weight_reach.py --dataset datasets/cpu-v2 \\
        --out experiments/results/offline/group_weight_reach.md
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

METRICS = ("peak_score@1", "peak_score@5", "pairwise_accuracy", "kendall_tau")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", required=True, help="a dataset holding the suite's databases")
    parser.add_argument("--config", default="experiments/cpu-suite.yaml", help="the suite (its workloads)")
    parser.add_argument("--pretrained", default="experiments/pretrained/lgbm-cpu-v1",
                        help="the LightGBM hyper-parameters and features to use (those of this saved model)")
    parser.add_argument("--probes", default="32,96", help="records of the held-out workload seen, comma-separated")
    parser.add_argument("--seeds", type=int, default=3, help="probe draws per size")
    parser.add_argument("--out", help="write the markdown table here too")
    args = parser.parse_args(argv)

    from costlab.config import load_config
    from costlab.data.dataset import extract_features, load_dataset
    from costlab.data.offline import evaluate_model, train_model
    from costlab.data.pretraining_set import select_pretraining_rows
    from costlab.models._common import load_model
    from costlab.workloads import workload_key

    probes = [int(p) for p in args.probes.split(",")]
    cfg = load_config(args.config)
    suite = [workload_key(w.name, w.params) for w in cfg.workloads]
    pretrained = load_model(args.pretrained)
    features = pretrained.schema_.extractor
    params = {k: v for k, v in pretrained.get_params().items() if k != "seed"}
    df = load_dataset(args.dataset)
    extract_features(args.dataset, [features])
    start = time.perf_counter()

    labels = ["probe-only", "related+probe, rows", "related+probe, equal"]
    scores = {}  # (workload, probe, label) -> list of metric dicts over seeds
    for w in suite:
        held_out = df.loc[df["workload_key"] == w, "row"].to_numpy()
        related = select_pretraining_rows(df, w, family="related", seed=0).rows
        for n_probe in probes:
            for seed in range(args.seeds):
                probe = np.random.default_rng(seed).choice(held_out, size=n_probe, replace=False)
                rest = np.setdiff1d(held_out, probe)
                trained = {
                    "probe-only": (probe, "rows"),
                    "related+probe, rows": (np.concatenate([related, probe]), "rows"),
                    "related+probe, equal": (np.concatenate([related, probe]), "equal"),
                }
                for label, (rows, weight) in trained.items():
                    model = train_model(args.dataset, "lgbm", features, params={**params, "group_weight": weight},
                                        rows=rows, seed=seed).model
                    per_task = evaluate_model(model, args.dataset, features, rows=rest).metrics.per_task
                    scores.setdefault((w, n_probe, label), []).extend(per_task.values())
            print(f"  [{time.strftime('%H:%M:%S')}] {w.split('(')[0]}, {n_probe} probe records: done",
                  file=sys.stderr, flush=True)
    took = time.perf_counter() - start

    def mean(w, n_probe, label, metric):
        return float(np.mean([m[metric] for m in scores[(w, n_probe, label)]]))

    lines = [
        "# Weighting each workload equally: the tuned workload's first records against the pretraining rows", "",
        f"Produced by `python experiments/group_weight_reach.py --dataset {args.dataset} --probes {args.probes} "
        f"--seeds {args.seeds}{' --out ' + args.out if args.out else ''}` on {datetime.date.today().isoformat()} "
        f"({took:.0f} s). LightGBM with `{args.pretrained}`'s features ({features}) and hyper-parameters, trained "
        f"on `pretrain_family: related`'s rows of the other workloads plus `probe` random records of the held-out "
        "workload (a tuning session after its first batches), each row weighing 1 (`rows`) or each workload group "
        "the same in total (`equal`), or on the probe records alone; scored on the held-out workload's other "
        f"records; TenSet's metrics, the mean over {args.seeds} draws of the probe records.", "",
        "| workload | probe | model | peak@1 | peak@5 | pairwise | Kendall τ |",
        "|---|---|---|---|---|---|---|",
    ]
    for w in suite:
        for n_probe in probes:
            for label in labels:
                cells = " | ".join(f"{mean(w, n_probe, label, m):.3f}" for m in METRICS)
                lines.append(f"| {w} | {n_probe} | {label} | {cells} |")
    lines += ["", "Mean over the suite:", "", "| probe | model | peak@1 | peak@5 | pairwise | Kendall τ |",
              "|---|---|---|---|---|---|"]
    for n_probe in probes:
        for label in labels:
            cells = " | ".join(f"{np.mean([mean(w, n_probe, label, m) for w in suite]):.3f}" for m in METRICS)
            lines.append(f"| {n_probe} | {label} | {cells} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
