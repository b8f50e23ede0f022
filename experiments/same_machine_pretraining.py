"""Offline: does pretraining on this machine's records rank a held-out workload better than another machine's?

`lgbm-loto-related-ucb-ordered` in `experiments/cpu-min5.yaml` pretrains at session start on
`datasets/cpu-v2` (measured on a Zen 3 VM, `znver3`) without the tuned workload;
`lgbm-loto-intel-related-ucb-ordered` does the same on `datasets/cpu-intel-v1` (measured on the
Intel VM that tunes cpu-min5, `rocketlake`); `lgbm-loto-intel2-related-ucb-ordered` on
`datasets/cpu-intel-v2` (the same plus two more shapes of each operator family, so that
`related` finds the tuned workload's own family). Per workload of CONFIG, this trains each one's
pretraining model (the rows `pretrain_family: related` chooses, the model and features of the
config's entry, the session's seed) and scores the held-out workload's records in the
evaluation dataset (this machine's) with TenSet's per-task metrics, beside the mean of 20
random rankings (a single random pick's peak@1 varies from draw to draw). The held-out records were
chosen by the searches of `tvm-xgb` and the Zen 3-pretrained model (biased pools); failed
records are left out. ::

    python experiments/same_machine_pretraining.py --out experiments/results/same-machine-pretraining.md
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

METRICS = ("peak_score@1", "peak_score@5", "pairwise_accuracy", "kendall_tau")
RANDOM_DRAWS = 20  # random rankings (seeds SEED, SEED+1, ...) whose metrics are averaged


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", default="experiments/cpu-min5.yaml")
    parser.add_argument("--models", nargs="+",
                        default=["lgbm-loto-related-ucb-ordered", "lgbm-loto-intel-related-ucb-ordered",
                                 "lgbm-loto-intel2-related-ucb-ordered", "lgbm-loto-intel2-group-ucb-ordered"],
                        help="labels of CONFIG's cost models that pretrain_on a dataset")
    parser.add_argument("--evaluate-on", default="datasets/cpu-intel-v1",
                        help="the dataset holding this machine's records")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="write the markdown table here too")
    args = parser.parse_args(argv)

    import numpy as np
    from retiming import write_report

    from costlab.config import load_config
    from costlab.data.dataset import load_dataset
    from costlab.data.offline import cross_validate, default_features, evaluate_model, train_model
    from costlab.data.pretraining_set import select_pretraining_rows
    from costlab.workloads import workload_key

    cfg = load_config(args.config)
    specs = {m.display_name: m for m in cfg.cost_models}
    missing = [label for label in args.models if label not in specs or not specs[label].pretrain_on]
    if missing:
        print(f"error: {args.config}: no cost model labelled {', '.join(missing)} with pretrain_on", file=sys.stderr)
        return 2
    evaluation = load_dataset(args.evaluate_on)
    start = time.perf_counter()
    draws = [cross_validate(args.evaluate_on, "random", "none", seed=args.seed + i).metrics.per_task
             for i in range(RANDOM_DRAWS)]  # one pick per task is a lottery: its mean over draws
    per_model: dict[str, dict] = {"random": {task: {k: (float(np.mean([d[task][k] for d in draws]))
                                                        if k in METRICS else v) for k, v in row.items()}
                                             for task, row in draws[0].items()}}
    chosen_by: dict[str, list[str]] = {}
    for label in args.models:
        spec = specs[label]
        features = spec.features or default_features(spec.name, spec.params)
        source = load_dataset(spec.pretrain_on)
        per_model[label], chosen_by[label] = {}, []
        for w in cfg.workloads:
            key = workload_key(w.name, w.params)
            chosen = select_pretraining_rows(source, key, family=spec.pretrain_family, seed=args.seed)
            chosen_by[label].append(f"{w.name}: {chosen.describe()}")
            print(f"[{time.strftime('%H:%M:%S')}] {label} · {w.name}: {chosen.describe()}",
                  file=sys.stderr, flush=True)
            model = train_model(spec.pretrain_on, spec.name, features, params=spec.params, rows=chosen.rows,
                                seed=args.seed).model
            held_out = evaluation.loc[evaluation["workload_key"] == key, "row"].to_numpy()
            per_model[label].update(evaluate_model(model, args.evaluate_on, features, rows=held_out).metrics.per_task)
    took = time.perf_counter() - start

    lines = [
        "# Pretraining on this machine's records or on another machine's", "",
        f"Produced by `python experiments/same_machine_pretraining.py{' --out ' + args.out if args.out else ''}` "
        f"on {datetime.date.today().isoformat()} ({took:.0f} s). Each model is trained as its tuning session "
        f"pretrains it (`{args.config}`, seed {args.seed}) and scores the held-out workload's records in "
        f"`{args.evaluate_on}`; `random` is the mean of {RANDOM_DRAWS} random rankings. TenSet's per-task "
        "metrics, failed records left out.", "",
        "| workload | records | model | pretrained on | peak@1 | peak@5 | pairwise | Kendall τ |",
        "|---|---|---|---|---|---|---|---|",
    ]
    means = {m: {k: [] for k in METRICS} for m in per_model}
    for task in sorted(per_model["random"]):
        for m, rows in per_model.items():
            row = rows[task]
            for k in METRICS:
                means[m][k].append(row[k])
            source = _relative(specs[m].pretrain_on) if m in specs else "-"
            lines.append(f"| {task} | {row['n_records']} | {m} | {source} | "
                         + " | ".join(f"{row[k]:.3f}" for k in METRICS) + " |")
    for m in per_model:
        lines.append(f"| mean | | {m} | | " + " | ".join(f"{np.mean(v):.3f}" for v in means[m].values()) + " |")
    for label, words in chosen_by.items():
        lines += ["", f"`{label}` trained on:", *(f"- {c}" for c in words)]
    write_report(lines, Path(args.out) if args.out else None)
    return 0


def _relative(path) -> str:
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


if __name__ == "__main__":
    sys.exit(main())
