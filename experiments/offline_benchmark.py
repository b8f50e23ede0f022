"""Offline benchmark: every cost model x feature family on a dataset, one table.

Each model is trained and evaluated with a workload split (by default
leave-one-task-out: each task is scored by a model that never saw it) and the table
shows TenSet's top-1 and top-5 scores, pairwise comparison accuracy, Kendall's tau,
the summed training time, and fail@1: the fraction of tasks whose top-1 pick failed.
By default failed records are left out of the four ranking metrics (``--failures
penalize`` keeps them with TenSet's penalty; see ``costlab.data.metrics``).

Examples::

    python experiments/offline_benchmark.py --db ../shared/datasets/a100-resnet34
    python experiments/offline_benchmark.py --dataset runs/datasets/a100-resnet34-<id> \\
        --models lgbm,random --features default --split kfold --k 4
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from costlab.data.dataset import build_dataset, load_metadata  # noqa: E402
from costlab.data.offline import cross_validate, default_features, feature_kinds  # noqa: E402
from costlab.data.splits import SPLIT_KINDS  # noqa: E402
from costlab.errors import CostlabError  # noqa: E402


class Progress:
    """Prints ``stage done/total`` to stderr at most every 2 s per stage."""

    def __init__(self):
        self.last: dict[str, float] = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and now - self.last.get(stage, 0.0) < 2.0:
            return
        self.last[stage] = now
        of = f"/{total}" if total else ""
        print(f"  [{time.strftime('%H:%M:%S')}] {stage}: {done}{of}", file=sys.stderr, flush=True)


def dataset_for_dbs(dbs: list[str], cache_dir: Path, rebuild: bool, progress, replay: bool = True) -> Path:
    """Build (or reuse) the dataset of ``dbs`` in ``cache_dir``."""
    resolved = [str(Path(d).resolve()) for d in dbs]
    key = hashlib.sha256("\n".join(resolved).encode()).hexdigest()[:10]
    out = cache_dir / f"{Path(resolved[0]).name}-{key}"
    if not rebuild and (out / "dataset.json").is_file():
        meta = load_metadata(out)
        print(f"dataset: reusing {out} ({meta['n_rows']} rows, {meta['n_tasks']} tasks)", file=sys.stderr)
        return out
    print(f"dataset: building {out} from {', '.join(dbs)}", file=sys.stderr)
    summary = build_dataset(resolved, out, replay=replay, progress=progress)
    print(f"dataset: {summary}", file=sys.stderr)
    for source in summary.sources:
        for issue in (source["skipped"] + source["invalid"])[:20]:
            print(f"  {issue}", file=sys.stderr)
    return out


def combinations(models: list[str], features: str, params: dict | None = None) -> list[tuple[str, str]]:
    """(model, extractor) pairs: ``auto`` = every compatible extractor, ``default`` = the model's."""
    import costlab.features as cf

    pairs = []
    extractors = [e for e in cf.available() if e != "none"]
    for model in models:
        own = default_features(model, (params or {}).get(model))
        if features == "default" or own == "none":
            pairs.append((model, own))
            continue
        names = extractors if features == "auto" else [f.strip() for f in features.split(",") if f.strip()]
        kinds = feature_kinds(model)
        for name in names:
            if cf.get(name).kind in kinds:
                pairs.append((model, name))
    return pairs


def fmt(value: float, digits: int = 3) -> str:
    return "—" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--dataset", help="a dataset directory built by costlab")
    src.add_argument("--db", action="append", help="a MetaSchedule database directory (repeatable)")
    parser.add_argument("--cache-dir", default="runs/datasets", help="where --db datasets are built (runs/ is git-ignored)")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the dataset of --db")
    parser.add_argument("--no-replay", action="store_true",
                        help="build without replaying traces (fast); feature extraction replays them "
                             "anyway and leaves out rows that fail")
    parser.add_argument("--split", default="leave-one-task-out", choices=SPLIT_KINDS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--test-fraction", type=float, default=0.2)
    parser.add_argument("--k", type=int, default=5, help="folds for --split kfold")
    parser.add_argument("--models", default="all", help="comma-separated model names, or 'all'")
    parser.add_argument("--features", default="auto",
                        help="'auto' (every compatible extractor), 'default' (each model's), or names")
    parser.add_argument("--params", default="{}", help='JSON {"model": {hyper-parameters}}')
    parser.add_argument("--failures", default="exclude", choices=["exclude", "penalize"],
                        help="failed records: left out of the metrics, or TenSet's penalty "
                             "(see costlab.data.metrics); fail@1 always counts them")
    parser.add_argument("--json", help="write the results to this JSON file")
    args = parser.parse_args(argv)

    progress = Progress()
    try:
        from costlab import models as cm

        dataset = Path(args.dataset) if args.dataset else dataset_for_dbs(
            args.db, Path(args.cache_dir), args.rebuild, progress, replay=not args.no_replay)
        names = cm.available() if args.models == "all" else [m.strip() for m in args.models.split(",")]
        params = json.loads(args.params)
        pairs = combinations(names, args.features, params)
    except (CostlabError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2

    from costlab.data.dataset import extract_features

    needed = sorted({f for _, f in pairs})
    print(f"features: {', '.join(needed)} (one replay of the traces for all; cached)", file=sys.stderr)
    try:
        extract_features(dataset, needed, progress=progress)
    except Exception as err:  # noqa: BLE001  (a broken extractor shows up per row below)
        print(f"   feature extraction failed: {type(err).__name__}: {err}", file=sys.stderr)

    results = []
    for model, features in pairs:
        print(f"== {model} / {features} ({args.split})", file=sys.stderr, flush=True)
        try:
            cv = cross_validate(dataset, model, features, split=args.split, params=params.get(model),
                                seed=args.seed, test_fraction=args.test_fraction, k=args.k,
                                failures=args.failures, progress=progress)
            results.append(cv.as_dict())
        except Exception as err:  # noqa: BLE001  (one broken combination must not stop the table)
            print(f"   failed: {type(err).__name__}: {err}", file=sys.stderr)
            results.append({"model": model, "features": features, "split": args.split, "error": str(err)})

    header = "| model | features | top-1 | top-5 | pairwise | Kendall τ | fail@1 | train s | tasks |"
    print(f"\nDataset {dataset}, split {args.split}, seed {args.seed}, failures {args.failures}\n")
    print(header)
    print("|" + "---|" * 9)
    for r in results:
        if "error" in r:
            print(f"| {r['model']} | {r['features']} | error: {r['error'][:60]} | | | | | | |")
            continue
        print(f"| {r['model']} | {r['features']} | {fmt(r['top1_score'])} | {fmt(r['top5_score'])} | "
              f"{fmt(r['pairwise_accuracy'])} | {fmt(r['kendall_tau'])} | {fmt(r['failed_pick_rate@1'], 2)} | "
              f"{fmt(r['train_time_s'], 1)} | "
              f"{int(r['n_tasks'])} (+{int(r['n_skipped_tasks'])} skipped) |")
    if args.json:
        Path(args.json).write_text(json.dumps({"dataset": str(dataset), "split": args.split, "seed": args.seed,
                                               "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
