"""Dataset build and feature extraction on one process against worker processes.

    python experiments/replay_jobs_benchmark.py --db ../shared/datasets/a100-resnet34 --features per_store
    python experiments/replay_jobs_benchmark.py --dataset datasets/cpu-v1 --features analysis+trace,graph

With ``--db`` (once per database) it builds a dataset from them with ``jobs=1`` and with
``--jobs`` workers, then extracts the features of the first build both ways; with
``--dataset`` it only extracts (into copies of the dataset, so its own caches are left
alone). It prints each wall time and checks that both ways wrote the same dataset and
the same features (it exits 1 if not).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def _same_features(a, b) -> bool:
    (fa, rows_a), (fb, rows_b) = a, b
    if not np.array_equal(rows_a, rows_b) or fa.kind != fb.kind:
        return False
    if fa.kind == "dense":
        return np.array_equal(fa.dense, fb.dense, equal_nan=True)
    return all(np.array_equal(getattr(fa.graphs, f), getattr(fb.graphs, f))
               for f in ("node_features", "edge_index", "edge_type", "batch"))


def main() -> int:
    import pandas as pd

    from costlab.data.dataset import RECORDS_FILE, WORKLOADS_FILE, build_dataset, extract_features
    from costlab.targets import usable_cores

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", action="append", default=[], help="a database directory (repeatable)")
    parser.add_argument("--dataset", help="a dataset directory (instead of --db)")
    parser.add_argument("--features", default="per_store", help="extractor names, comma-separated")
    parser.add_argument("--jobs", type=int, default=usable_cores(), help="worker processes (default: the cores)")
    args = parser.parse_args()
    if bool(args.db) == bool(args.dataset):
        parser.error("give --db (one or more) or --dataset")
    names = [n for n in args.features.split(",") if n]
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if args.db:
            builds = {}
            for jobs in (1, args.jobs):
                out = work / f"built-{jobs}"
                t0 = time.perf_counter()
                summary = build_dataset(args.db, out, jobs=jobs)
                builds[jobs] = out
                print(f"build, jobs={jobs}: {time.perf_counter() - t0:.1f} s ({summary.n_rows} records, "
                      f"{summary.n_skipped} lines skipped)", flush=True)
            same = pd.read_parquet(builds[1] / RECORDS_FILE).equals(pd.read_parquet(builds[args.jobs] / RECORDS_FILE))
            print(f"same records: {same}")
            ok &= same
            source = builds[1]
        else:
            source = Path(args.dataset)
        extracted = {}
        for jobs in (1, args.jobs):
            copy = work / f"extract-{jobs}"
            copy.mkdir()
            for name in (RECORDS_FILE, WORKLOADS_FILE):
                shutil.copy2(source / name, copy / name)
            t0 = time.perf_counter()
            extracted[jobs] = extract_features(copy, names, jobs=jobs)
            print(f"features {'+'.join(names)}, jobs={jobs}: {time.perf_counter() - t0:.1f} s", flush=True)
        for name in names:
            same = _same_features(extracted[1][name], extracted[args.jobs][name])
            print(f"same {name} features: {same}")
            ok &= same
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
