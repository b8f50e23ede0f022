"""Replay benchmark: how far each cost-model lever gets on measured candidate pools.

A tuning run costs minutes per (workload, model, seed), so the levers of issue 8
(feature families, ranking loss, retraining policy, ensembles with optimistic
exploration, pretraining) cannot all be tried online on 2 cores. This script replays
the online loop on the measured records of a dataset instead:

- the pool of a task is all its measured candidates; its reference is the best of them;
- each round the model scores the candidates not yet "measured", the top ``batch``
  (less an epsilon-greedy share picked at random, as MetaSchedule does) are measured,
  i.e. their recorded latency is revealed, and handed to costlab's own online adapter
  (:class:`costlab.search.adapter.CostlabCostModel`: same retraining policy, same
  ``mean + kappa * spread`` scoring, same fine-tuning of a pretrained model);
- before its first training a cold model picks at random, as in tuning;
- T95 is the number of replayed trials until a candidate within 5% of the pool's best
  was picked (budget + 1 if never).

What this is not: a search. The pool holds only what earlier searches measured, and
no new schedule is generated, so it measures how well a model *ranks* as it learns
online, not how it steers mutation. Warm-started models are pretrained on every other
task of the dataset (leave-one-task-out), never on the task replayed.

Example::

    python experiments/replay_levers.py --dataset datasets/cpu-v1 --seeds 5 \\
        --out experiments/results/replay_levers
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from costlab.data.dataset import dataset_features, finite_or_inf, load_dataset, positions_of  # noqa: E402
from costlab.data.metrics import convergence_auc, t95  # noqa: E402
from costlab.models import make_model  # noqa: E402
from costlab.features import select_features  # noqa: E402
from costlab.models.warm_blend import WarmBlend  # noqa: E402
from costlab.search.adapter import CostlabCostModel  # noqa: E402
from costlab.search.timing import PhaseTimer  # noqa: E402


@dataclass(frozen=True)
class Lever:
    """One replayed configuration: a model, its features and the adapter's policy."""

    label: str
    group: str  # which lever it varies, for the report
    model: str
    features: str
    params: dict = field(default_factory=dict)
    kappa: float = 0.0
    retrain_growth: float = 0.0
    warm: str = ""  # "": cold; pretrained on the other tasks and then "finetune", "frozen" or "blend"
    blend_samples: int = 64  # warm="blend": task samples at which both models weigh one half
    epsilon: float | None = None  # share of each batch picked at random (None: --epsilon)


LEVERS = [
    Lever("random", "baseline", "random", "none"),
    Lever("tvm-xgb (offline reproduction)", "baseline", "tvm-xgb", "per_store"),
    Lever("lgbm per_store", "features", "lgbm", "per_store"),
    Lever("lgbm analysis", "features", "lgbm", "analysis"),
    Lever("lgbm trace", "features", "lgbm", "trace"),
    Lever("lgbm analysis+trace", "features", "lgbm", "analysis+trace"),
    Lever("lgbm regression, analysis+trace", "loss", "lgbm", "analysis+trace", {"objective": "regression"}),
    Lever("xgb pairwise, analysis+trace", "loss", "xgb", "analysis+trace", {"objective": "pairwise"}),
    Lever("lgbm analysis+trace, retrain at +50% data", "retraining", "lgbm", "analysis+trace", retrain_growth=0.5),
    Lever("lgbm analysis+trace, retrain at 2x data", "retraining", "lgbm", "analysis+trace", retrain_growth=1.0),
    Lever("ensemble 4x lgbm, kappa 0", "ensemble", "ensemble", "analysis+trace",
          {"base": "lgbm", "n_members": 4}, kappa=0.0),
    Lever("ensemble 4x lgbm, kappa 1", "ensemble", "ensemble", "analysis+trace",
          {"base": "lgbm", "n_members": 4}, kappa=1.0),
    Lever("ensemble 4x lgbm, kappa 2", "ensemble", "ensemble", "analysis+trace",
          {"base": "lgbm", "n_members": 4}, kappa=2.0),
    Lever("lgbm analysis+trace, pretrained, fine-tuned", "pretraining", "lgbm", "analysis+trace", warm="finetune"),
    Lever("lgbm analysis+trace, pretrained, frozen", "pretraining", "lgbm", "analysis+trace", warm="frozen"),
    Lever("lgbm analysis+trace, pretrained, blended with an online model", "pretraining", "lgbm",
          "analysis+trace", warm="blend"),
    Lever("lgbm analysis+trace, pretrained, blended, half weight at 8 samples", "pretraining", "lgbm",
          "analysis+trace", warm="blend", blend_samples=8),
    Lever("lgbm analysis+trace, pretrained, fine-tuned, 50% random picks", "pretraining", "lgbm",
          "analysis+trace", warm="finetune", epsilon=0.5),
]


def replay(lever: Lever, pool_features, latency_s: np.ndarray, task: str, seed: int, budget: int,
           batch: int, epsilon: float, pretrained=None) -> np.ndarray:
    """Latencies in the order the lever's model picked them (length ``budget``)."""
    rng = np.random.default_rng(seed)
    if lever.warm == "blend":
        model = WarmBlend(copy.deepcopy(pretrained), make_model(lever.model, lever.params, seed)[0],
                          lever.blend_samples)
    elif pretrained is not None:
        model = copy.deepcopy(pretrained)
    else:
        model, _ = make_model(lever.model, lever.params, seed)
    adapter = CostlabCostModel(model, None, task, PhaseTimer(), kappa=lever.kappa,
                               retrain_growth=lever.retrain_growth, frozen=lever.warm == "frozen",
                               pretrained=pretrained is not None, seed=seed)
    left = np.arange(len(latency_s))
    picked: list[int] = []
    while len(picked) < budget and left.size:
        take = min(batch, budget - len(picked), left.size)
        if adapter.fitted and lever.model != "random":
            scores = adapter.score(select_features(pool_features, left))
        else:
            scores = rng.random(left.size)
        n_random = int(round(epsilon * take))
        order = np.argsort(-scores, kind="stable")
        chosen = list(order[: take - n_random])
        rest = np.setdiff1d(np.arange(left.size), chosen)
        chosen += list(rng.choice(rest, size=min(n_random, rest.size), replace=False))
        chosen = np.asarray(chosen, dtype=np.int64)
        rows = left[chosen]
        picked.extend(rows.tolist())
        if lever.model != "random":
            adapter.add_samples(select_features(pool_features, rows), latency_s[rows])
        left = np.delete(left, chosen)
    return latency_s[np.asarray(picked, dtype=np.int64)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", default="datasets/cpu-v1")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--budget", type=int, default=192, help="replayed trials per run")
    ap.add_argument("--batch", type=int, default=32, help="trials per round (MetaSchedule's trials_per_iter)")
    ap.add_argument("--epsilon", type=float, default=0.05, help="share of each batch picked at random")
    ap.add_argument("--min-pool", type=int, default=200, help="skip tasks with fewer measured candidates")
    ap.add_argument("--levers", default="all", help="lever labels or groups, separated by ';' (results of "
                    "other levers already in --out with the same settings are kept)")
    ap.add_argument("--out", default="experiments/results/replay_levers")
    args = ap.parse_args(argv)

    df = load_dataset(args.dataset)
    levers = LEVERS if args.levers == "all" else [
        lv for lv in LEVERS if {lv.label, lv.group} & set(args.levers.split(";"))]
    tasks = [t for t, g in df.groupby("task_key") if np.isfinite(finite_or_inf(g["latency_s"])).sum() > 0
             and len(g) >= args.min_pool]
    print(f"{args.dataset}: {len(tasks)} tasks with >= {args.min_pool} records; "
          f"{len(levers)} levers x {args.seeds} seeds, budget {args.budget}, batch {args.batch}", flush=True)
    out = Path(args.out)
    results: dict[str, dict[str, list[dict]]] = {}
    settings = {k: v for k, v in vars(args).items() if k not in ("levers", "out")}
    if (out / "results.json").is_file():  # keep the other levers of an earlier run with the same settings
        earlier = json.loads((out / "results.json").read_text())
        if {k: v for k, v in earlier["args"].items() if k not in ("levers", "out")} == settings:
            results = earlier["runs"]
            print(f"keeping {len(results)} lever(s) of {out / 'results.json'}; replaying {len(levers)}", flush=True)
    by_row = df.set_index("row")
    features_cache: dict[str, tuple] = {}
    pretrained_cache: dict[tuple, object] = {}  # (model, params, features, held-out task) -> fitted model
    start = time.perf_counter()
    for lever in levers:
        if lever.features not in features_cache:
            features_cache[lever.features] = dataset_features(args.dataset, lever.features)
        feats, row_index = features_cache[lever.features]
        epsilon = args.epsilon if lever.epsilon is None else lever.epsilon
        results[lever.label] = {}
        for task in tasks:
            pos = positions_of(row_index, df.loc[df["task_key"] == task, "row"].to_numpy())
            pool = select_features(feats, pos)
            latency = finite_or_inf(by_row.loc[row_index[pos], "latency_s"])
            reference = float(latency[np.isfinite(latency)].min())
            pretrained = None
            if lever.warm:
                key = (lever.model, json.dumps(lever.params, sort_keys=True), lever.features, task)
                if key not in pretrained_cache:
                    opos = positions_of(row_index, df.loc[df["task_key"] != task, "row"].to_numpy())
                    others = by_row.loc[row_index[opos]]
                    model, _ = make_model(lever.model, lever.params, 0)
                    pretrained_cache[key] = model.fit(select_features(feats, opos), finite_or_inf(others["latency_s"]),
                                                      others["task_key"].to_numpy(object))
                pretrained = pretrained_cache[key]
            runs = []
            for seed in range(args.seeds):
                picked = replay(lever, pool, latency, task, seed, args.budget, args.batch, epsilon, pretrained)
                runs.append({"seed": seed, "t95": t95(picked, reference, args.budget),
                             "auc": convergence_auc(picked, reference, args.budget),
                             "final_vs_reference": float(reference / np.min(picked))})
            results[lever.label][task] = runs
            med = np.median([r["t95"] for r in runs])
            print(f"  [{time.perf_counter() - start:6.0f} s] {lever.label} · {task.split(' @')[0]}: "
                  f"median T95 {med:g}", flush=True)
    out.mkdir(parents=True, exist_ok=True)
    summary = summarize(results, tasks, [lv for lv in LEVERS if lv.label in results], args)
    (out / "results.json").write_text(json.dumps({"args": vars(args), "runs": results}, indent=1))
    (out / "README.md").write_text(summary)
    print(summary)
    return 0


def summarize(results, tasks, levers, args) -> str:
    base = "tvm-xgb (offline reproduction)"
    base_t95 = {t: np.median([r["t95"] for r in results[base][t]]) for t in tasks} if base in results else {}
    lines = [
        "# Replay of the online loop on measured pools: how far each lever gets",
        "",
        f"Command: `python experiments/replay_levers.py --dataset {args.dataset} --seeds {args.seeds} "
        f"--budget {args.budget} --batch {args.batch} --out {args.out}`",
        "",
        f"{len(tasks)} tasks of `{args.dataset}` with at least {args.min_pool} measured candidates, "
        f"{args.seeds} seeds each, {args.budget} replayed trials in batches of {args.batch} "
        f"({args.epsilon:.0%} of each batch random). T95: replayed trials until a candidate within 5% "
        f"of the pool's best was picked (`{args.budget + 1}` = never). The ratio is the median over tasks of "
        "(the lever's median T95 / the tvm-xgb reproduction's median T95) on the same task. "
        "A replay ranks a fixed pool; it is not a search (see the script's docstring).",
        "",
        "| lever | configuration | median T95 over tasks | T95 ratio to tvm-xgb | tasks never within 5% | AUC |",
        "|---|---|---|---|---|---|",
    ]
    for lever in levers:
        per_task = results[lever.label]
        t95s = {t: float(np.median([r["t95"] for r in per_task[t]])) for t in tasks}
        ratios = [t95s[t] / base_t95[t] for t in tasks if base_t95]
        never = sum(1 for t in tasks if t95s[t] > args.budget)
        auc = np.median([r["auc"] for t in tasks for r in per_task[t]])
        ratio = f"{np.median(ratios):.2f}" if ratios else "-"
        lines.append(f"| {lever.group} | {lever.label} | {np.median(list(t95s.values())):.0f} | {ratio} | "
                     f"{never}/{len(tasks)} | {auc:.3f} |")
    lines += ["", "Per task, median T95 over seeds:", "",
              "| configuration | " + " | ".join(t.split(" @")[0].replace(",dtype=float32", "") for t in tasks) + " |",
              "|---|" + "---|" * len(tasks)]
    for lever in levers:
        cells = [f"{np.median([r['t95'] for r in results[lever.label][t]]):.0f}" for t in tasks]
        lines.append(f"| {lever.label} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
