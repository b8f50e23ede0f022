"""Offline: how much TenSet's record-order tie-break moved costlab's top-k and peak scores.

Rows with equal features get equal scores (a schedule measured several times, or two traces that
lower alike), and TenSet picks the first of a tie in record order. Since 2026-12-07
``costlab/data/metrics.py`` takes the expected value over the random orders of a tie instead.
This scores a trained model's predictions on a dataset both ways, per task and over tasks::

    python experiments/tie_effect.py --model experiments/pretrained/lgbm-cpu-v1 --dataset datasets/cpu-intel-v1

The model must not have trained on the dataset's rows (``costlab evaluate`` checks that; this
script only measures the metric).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from costlab.data import metrics as m
from costlab.data.offline import evaluate_model
from costlab.models._common import load_model


def record_order_top_k(lat, scores, k: int) -> float:
    """The old rule: the first k records in score order, ties kept in record order."""
    picks = lat[np.argsort(-np.where(np.isnan(scores), -np.inf, scores), kind="stable")[:k]]
    return float(min(picks.min(), lat.min() / m.THROUGHPUT_FLOOR))


def record_order_peak(lat, scores, k: int) -> float:
    tp = m.throughput(lat)[np.argsort(-np.where(np.isnan(scores), -np.inf, scores), kind="stable")[:k]]
    return float(np.mean(np.maximum.accumulate(tp)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--dataset", required=True)
    args = parser.parse_args()
    start = time.time()
    result = evaluate_model(load_model(args.model), args.dataset,
                            progress=lambda stage, done, total: print(f"  {stage}: {done}/{total}", flush=True)
                            if done == total else None)
    from costlab.data.dataset import load_dataset

    df = load_dataset(args.dataset).set_index("row").loc[result.rows]
    lat_all, sc_all, groups = df["latency_s"].to_numpy(), result.scores, df["task_key"].to_numpy()
    print(f"{len(result.rows)} rows scored in {time.time() - start:.0f} s; failed records left out")
    print(f"{'task':60s} {'rows':>6s} {'tied':>6s} {'top1 old':>9s} {'top1 new':>9s} {'peak@5 old':>11s} "
          f"{'peak@5 new':>11s}")
    sums = {"old": [0.0, 0.0], "new": [0.0, 0.0]}
    for task, lat, sc in m._tasks(lat_all, sc_all, groups, "exclude"):
        _, counts = np.unique(sc, return_counts=True)
        tied = int(counts[counts > 1].sum())
        old1, new1 = record_order_top_k(lat, sc, 1), m.task_top_k_latency(lat, sc, 1)
        sums["old"][0] += lat.min()
        sums["old"][1] += old1
        sums["new"][0] += lat.min()
        sums["new"][1] += new1
        print(f"{task[:60]:60s} {lat.size:6d} {tied:6d} {lat.min() / old1:9.3f} {lat.min() / new1:9.3f} "
              f"{record_order_peak(lat, sc, 5):11.3f} {m.task_peak_score(lat, sc, 5):11.3f}")
    print(f"TenSet top-1 over tasks: record order {sums['old'][0] / sums['old'][1]:.3f}, "
          f"expected over ties {sums['new'][0] / sums['new'][1]:.3f}")


if __name__ == "__main__":
    main()
