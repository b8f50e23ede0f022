"""How far pretraining reaches: would the suite's other workloads rank a held-out one better?

`lgbm-warm` and `lgbm-warm-ucb` in `experiments/cpu-suite.yaml` start from a LightGBM
pretrained without any of the suite's six workloads (small sizes only, 2,262 records).
This script asks, offline, whether a model that also saw the suite's *other* workloads
at their real sizes (leave-one-task-out over every committed CPU database) ranks each
suite workload's measured candidates better. Each row is one suite workload, scored by:

- ``random``: a random ranking (leave-one-task-out, seed as given);
- ``pretrained``: the committed model the suite warm-started from (it never saw any suite workload);
- ``loto``: LightGBM, same features and hyper-parameters, trained on every other task;
- ``loto-N``: the same, on N rows of those tasks, drawn evenly over their workloads
  (``--loto-rows``; N defaults to the pretrained model's own training rows), as
  ``pretrain_rows`` draws them in a tuning session;
- ``loto-family`` / ``loto-related``: the same, on the other workloads of the held-out
  one's operator family only (and, where there are none, of its related families), as
  ``pretrain_family: true`` / ``related`` choose them in a tuning session
  (:func:`costlab.data.pretraining_set.select_pretraining_rows`);
- ``loto-group``: on the family and its related families together (``pretrain_family: group``);
- ``loto-measured``: one model per family of the other workloads; the one that ranks 32
  records of the held-out workload (drawn by the seed, standing in for a session's first
  batch) best is trained on its family's rows and those 32, as ``pretrain_family: measured``
  does in a tuning session (:mod:`costlab.models.measured_warm_start`); scored on the
  held-out workload's other records. It sees 32 of the held-out workload's records, which
  no row above does, so two controls see them too: ``probe-only`` (trained on those 32
  alone) and ``loto-related+probe`` (``loto-related``'s rows and those 32).

Metrics are TenSet's, per task (``costlab.data.metrics``): peak@k is the best latency
of the pool over the best among the model's top k; failed records are left out.

On ``datasets/cpu-v2`` (every committed CPU database; ``bash experiments/build_cpu_dataset.sh
datasets/cpu-v2`` rebuilds it)::

    python experiments/pretraining_reach.py --dataset datasets/cpu-v2 \\
        --out experiments/results/offline/pretraining_reach.md
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

PROBE_RECORDS = 32  # loto-measured: the records a family is chosen on (a session's first batch)
METRICS = ("peak_score@1", "peak_score@5", "pairwise_accuracy", "kendall_tau")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", required=True, help="a dataset holding the suite's databases")
    parser.add_argument("--config", default="experiments/cpu-suite.yaml", help="the suite (its workloads)")
    parser.add_argument("--pretrained", default="experiments/pretrained/lgbm-cpu-v1")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--loto-rows", type=int, help="rows of the capped loto model (default: the pretrained model's)")
    parser.add_argument("--out", help="write the markdown table here too")
    args = parser.parse_args(argv)

    from costlab.config import load_config
    from costlab.data.dataset import extract_features, load_dataset
    from costlab.data.offline import cross_validate, evaluate_model, load_rows, train_model
    from costlab.data.pretraining_set import load_family_sources, select_pretraining_rows
    from costlab.models import make_model
    from costlab.models._common import load_model
    from costlab.models.measured_warm_start import MeasuredWarmStart
    from costlab.workloads import workload_key

    cfg = load_config(args.config)
    suite = [workload_key(w.name, w.params) for w in cfg.workloads]
    pretrained = load_model(args.pretrained)
    features = pretrained.schema_.extractor
    df = load_dataset(args.dataset)
    tasks = {w: sorted(df.loc[df["workload_key"] == w, "task_key"].unique()) for w in suite}
    missing = [w for w, t in tasks.items() if not t]
    if missing:
        print(f"error: {args.dataset} holds no records of {', '.join(missing)}", file=sys.stderr)
        return 2

    def say(stage, done, total):
        if done == total or done % 5000 == 0:
            print(f"  [{time.strftime('%H:%M:%S')}] {stage}: {done}/{total}", file=sys.stderr, flush=True)

    extract_features(args.dataset, [features], progress=say)
    per_model = {}
    start = time.perf_counter()
    per_model["random"] = cross_validate(args.dataset, "random", "none", seed=args.seed).metrics.per_task
    per_model["pretrained"] = evaluate_model(pretrained, args.dataset, features, progress=say).metrics.per_task
    params = {k: v for k, v in pretrained.get_params().items() if k != "seed"}
    loto = cross_validate(args.dataset, "lgbm", features, params=params, seed=args.seed, progress=say)
    per_model["loto"] = loto.metrics.per_task
    cap = args.loto_rows or len(pretrained.data_)
    per_model[f"loto-{cap}"] = cross_validate(args.dataset, "lgbm", features, params=params, seed=args.seed,
                                              max_train_rows=cap, progress=say).metrics.per_task
    chosen_rows = {}  # model label -> what each held-out workload was trained on, in words
    for mode in (True, "related", "group"):
        per_task, chosen_by = {}, []
        for w in suite:
            chosen = select_pretraining_rows(df, w, family=mode, seed=args.seed)
            chosen_by.append(f"{w.split('(')[0]}: {chosen.describe()}")
            model = train_model(args.dataset, "lgbm", features, params=params, rows=chosen.rows, seed=args.seed).model
            held_out = df.loc[df["workload_key"] == w, "row"].to_numpy()
            per_task.update(evaluate_model(model, args.dataset, features, rows=held_out).metrics.per_task)
        label = "loto-family" if mode is True else f"loto-{mode}"
        per_model[label] = per_task
        chosen_rows[label] = chosen_by
    measured = {"loto-measured": {}, "probe-only": {}, "loto-related+probe": {}}  # scored on the records left
    chosen_by = []
    for w in suite:
        held_out = df.loc[df["workload_key"] == w, "row"].to_numpy()
        probe = np.random.default_rng(args.seed).choice(held_out, size=min(PROBE_RECORDS, len(held_out) - 1), replace=False)
        rest = np.setdiff1d(held_out, probe)
        model = MeasuredWarmStart(load_family_sources(args.dataset, w, features),
                                  lambda: make_model("lgbm", params, args.seed)[0]).fit_sources()
        model.update(*load_rows(args.dataset, features, probe)[:3])
        chosen_by.append(f"{w.split('(')[0]}: {model.describe()}")
        related = select_pretraining_rows(df, w, family="related", seed=args.seed).rows
        for label, trained in (("loto-measured", model),
                               ("probe-only", train_model(args.dataset, "lgbm", features, params=params, rows=probe,
                                                          seed=args.seed).model),
                               ("loto-related+probe", train_model(args.dataset, "lgbm", features, params=params,
                                                                  rows=np.concatenate([related, probe]),
                                                                  seed=args.seed).model)):
            measured[label].update(evaluate_model(trained, args.dataset, features, rows=rest).metrics.per_task)
    per_model.update(measured)
    chosen_rows["loto-measured"] = chosen_by
    took = time.perf_counter() - start

    lines = [
        "# Pretraining reach: the suite's other workloads vs none of them", "",
        f"Produced by `python experiments/pretraining_reach.py --dataset {args.dataset}"
        f"{f' --loto-rows {args.loto_rows}' if args.loto_rows else ''}{' --out ' + args.out if args.out else ''}` on {datetime.date.today().isoformat()} "
        f"({took:.0f} s; {len(df)} records, {df['task_key'].nunique()} tasks).", "",
        f"`pretrained`: `{args.pretrained}` (what `lgbm-warm` started from; it never saw a suite workload). "
        f"`loto`: LightGBM with the same features ({features}) and hyper-parameters, trained on every other "
        f"task of the dataset, the other suite workloads at their real sizes included "
        f"({int(sum(f.get('n_train', 0) for f in loto.folds) / max(len(loto.folds), 1))} records per fold on "
        f"average). `loto-{cap}`: the same on {cap} of those records, drawn evenly over their workloads "
        f"(as `pretrain_rows: {cap}` in a tuning session), as many as `pretrained` saw. "
        "`loto-family` / `loto-related`: the same on the other workloads of the held-out one's operator "
        "family only, or where the dataset has none, of its related families (as `pretrain_family: true` / "
        "`related` choose them in a tuning session); `loto-group`: on the family and its related families "
        "together (`pretrain_family: group`). `loto-measured`: the family whose model ranks "
        f"{PROBE_RECORDS} records of the held-out workload best (drawn by the seed), trained on with those records, "
        "as `pretrain_family: measured` chooses in a tuning session; scored on the other records. "
        f"It sees {PROBE_RECORDS} of the held-out workload's records, which no row above it does; the controls "
        f"`probe-only` (those {PROBE_RECORDS} alone) and `loto-related+probe` (`loto-related`'s rows and those "
        f"{PROBE_RECORDS}) see the same and are scored on the same records. "
        f"`random`: a random ranking. TenSet's per-task metrics; failed records left out.", "",
        "| workload | records | model | peak@1 | peak@5 | pairwise | Kendall τ |",
        "|---|---|---|---|---|---|---|",
    ]
    means = {m: {k: [] for k in METRICS} for m in per_model}
    for w in suite:
        for task in tasks[w]:
            for m, rows in per_model.items():
                row = rows[task]
                for k in METRICS:
                    means[m][k].append(row[k])
                lines.append(f"| {w} | {row['n_records']} | {m} | "
                             + " | ".join(f"{row[k]:.3f}" for k in METRICS) + " |")
    for m in per_model:
        lines.append(f"| mean over the suite | | {m} | "
                     + " | ".join(f"{sum(v) / len(v):.3f}" for v in means[m].values()) + " |")
    for label, chosen_by in chosen_rows.items():
        lines += ["", f"`{label}` trained on:", *(f"- {c}" for c in chosen_by)]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
