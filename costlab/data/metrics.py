"""Ranking metrics of cost models (TenSet's definitions) and search-efficiency metrics.

Inputs are per record: ``latency_s`` (seconds; ``inf`` or >= 1e9 for a failed build or
run), ``scores`` (the model's prediction, higher = faster; NaN counts as the worst
score) and ``groups`` (the task of each record). Within a task, the normalized
throughput of a record is ``best_latency / latency`` (1 for the best, 0 for a failure).

Ranking metrics (after TenSet, ``scripts/eval_model.py`` and
``python/tvm/auto_scheduler/cost_model/metric.py``):

* **top-k score** = ``Σ_t w_t · best_t / Σ_t w_t · min(latency of the model's k
  highest-scored records of t)``, with task weights ``w_t`` (default 1). A ratio of sums:
  a slow task weighs more (as in a network's end-to-end latency). costlab also reports the
  unweighted **task-mean top-k score**, the mean over tasks of ``best_t / top-k latency_t``.
* **average peak score@k**: per task, take the k highest-scored records in that
  order, compute the running maximum of their normalized throughput and average it
  over the k picks; then average over tasks weighted by their number of records
  (TenSet's weighting).
* **pairwise comparison accuracy**: per task, the fraction of record pairs that the
  scores order as the latencies do; averaged over tasks weighted by records used.
  Pairs with equal latency are left out, and equal scores count one half (for distinct
  values this equals TenSet's; TenSet decides ties by record order).
* **Kendall τ**: ``scipy.stats.kendalltau`` (τ-b) of scores against throughput per
  task, weighted like pairwise accuracy; a constant score gives 0, and a task whose
  latencies are all equal is left out (as pairwise accuracy leaves it out).
* **failed-pick rate@k** (costlab's): the fraction of tasks whose k highest-scored
  records all failed, always computed with the failures in.

Equal scores (a constant prediction, or NaNs) are not ordered by record order, as in TenSet:
top-k and peak scores take their expected value over the random orders of the tied records.

Failures never count as fast. Every ranking metric takes ``failures``:

* ``"exclude"`` (the default): failed records are removed before the metric, so it
  measures the ranking among working programs (the protocol of the A100 table in
  ``notes/tvm-0.27-facts.md``). A model that likes failures shows in the failed-pick
  rate instead.
* ``"penalize"``: failed records stay. In top-k a failed pick's latency is capped at
  ``best_t / 1e-5`` as TenSet does (it divides by ``max(throughput, 1e-5)``): a
  failure counts as 100,000 times slower than the best, so one failed top-1 pick pulls
  the whole top-1 score close to 0. In peak scores a failure has throughput 0; in
  pairwise accuracy and τ failures are tied slowest (pairs of two failures left out).

A task with no successful record has no best latency: it is skipped by every ranking
metric and counted in :attr:`RankingMetrics.skipped_tasks`. Do not use MetaSchedule's
MLP top-k, which ranks the wrong way round.

Search-efficiency metrics take the latencies of one tuning run in trial order:

* **T95 / T90**: the first trial (1-based) at which the best latency so far is within
  95% / 90% of the reference throughput, i.e. ``reference / best <= 1/0.95`` is
  ``best <= reference / 0.95``; ``budget + 1`` when never reached.
* **convergence AUC**: the mean over trials ``1..budget`` of
  ``min(1, reference / best_so_far)`` (0 before the first success); a run shorter than
  the budget keeps its last value. 1 means the reference was found on the first trial.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from costlab.data.database import FAILED_LATENCY_S

THROUGHPUT_FLOOR = 1e-5  # TenSet: latency = best / max(throughput, 1e-5)


def _latencies(latency_s) -> np.ndarray:
    arr = np.asarray(latency_s, dtype=np.float64).reshape(-1)
    bad = ~np.isfinite(arr) | (arr >= FAILED_LATENCY_S) | (arr <= 0)  # no kernel runs in zero seconds
    return np.where(bad, np.inf, arr)


def _scores(scores) -> np.ndarray:
    arr = np.asarray(scores, dtype=np.float64).reshape(-1)
    return np.where(np.isnan(arr), -np.inf, arr)


FAILURE_MODES = ("exclude", "penalize")


def _check_mode(failures: str) -> None:
    if failures not in FAILURE_MODES:
        raise ValueError(f"failures must be one of {FAILURE_MODES}, not {failures!r}")


def _tasks(latency_s, scores, groups, failures: str = "penalize"):
    """``(task, latency_s, scores)`` per task with a success; failures dropped if excluded."""
    _check_mode(failures)
    lat, sc = _latencies(latency_s), _scores(scores)
    grp = np.asarray([str(g) for g in groups], dtype=object)
    if not (len(lat) == len(sc) == len(grp)):
        raise ValueError(f"latency_s, scores and groups differ in length: {len(lat)}, {len(sc)}, {len(grp)}")
    for task in sorted(set(grp.tolist())):
        idx = np.flatnonzero(grp == task)
        if failures == "exclude":
            idx = idx[np.isfinite(lat[idx])]
        if idx.size == 0 or not np.isfinite(lat[idx]).any():
            continue
        yield task, lat[idx], sc[idx]


def _all_tasks(groups) -> list[str]:
    return sorted({str(g) for g in groups})


def _expected_running(values, scores, k: int, best_of) -> np.ndarray:
    """The expected ``best_of`` (``max`` or ``min``) of ``values`` over the first 1..k picks in
    score order, equal scores taken in a uniformly random order. TenSet breaks ties by record
    order, which rewards a constant (or NaN) prediction for the order the records were saved
    in; here a tie is worth what a random choice among it is worth.

    Of a group of m tied values, a random r of them has the i-th best (i = 1..m, best first) as
    its best with probability C(m-i, r-1) / C(m, r)."""
    from math import comb

    vals, sc = np.asarray(values, dtype=np.float64), _scores(scores)
    out, before, taken = [], None, 0
    for level in np.unique(sc)[::-1]:  # tie groups, highest score first
        group = vals[sc == level]
        group = np.sort(group)[::-1] if best_of is max else np.sort(group)
        m = group.size
        for r in range(1, m + 1):
            if taken + r > k:
                break
            chance = np.array([comb(m - i, r - 1) for i in range(1, m + 1)], dtype=np.float64) / comb(m, r)
            best = group if before is None else (np.maximum(group, before) if best_of is max
                                                 else np.minimum(group, before))
            out.append(float(np.sum(chance * best)))
        taken += m
        if taken >= k:
            break
        before = group[0] if before is None else best_of(before, group[0])
    return np.asarray(out)


def throughput(latency_s: np.ndarray) -> np.ndarray:
    """Normalized throughput within one task: ``best / latency`` (0 for failures)."""
    lat = _latencies(latency_s)
    best = lat.min() if lat.size else math.inf
    if not math.isfinite(best):
        return np.zeros_like(lat)
    return np.where(np.isfinite(lat), best / lat, 0.0)


# ------------------------------------------------------------------- per task


def task_top_k_latency(latency_s, scores, k: int) -> float:
    """Latency (s) of the best of the k highest-scored records, capped at best / 1e-5 (the
    expected value over the orders of equal scores)."""
    lat = _latencies(latency_s)
    capped = np.minimum(lat, lat.min() / THROUGHPUT_FLOOR)  # inf (a failure) becomes the cap
    return float(_expected_running(capped, scores, k, min)[-1])


def task_peak_score(latency_s, scores, k: int) -> float:
    """TenSet's peak score of one task: mean running max of the top-k picks' throughput (the
    expected value over the orders of equal scores)."""
    return float(np.mean(_expected_running(throughput(latency_s), scores, k, max)))


def _usable(latency_s, scores, failures: str):
    _check_mode(failures)
    lat, sc = _latencies(latency_s), _scores(scores)
    if failures == "exclude":
        keep = np.isfinite(lat)
        return throughput(lat)[keep], sc[keep]
    return throughput(lat), sc


def task_pairwise_accuracy(latency_s, scores, failures: str = "exclude") -> tuple[float, int]:
    """``(accuracy, n_pairs)`` of one task; NaN accuracy when no pair has distinct latencies."""
    tp, sc = _usable(latency_s, scores, failures)
    if tp.size < 2:
        return math.nan, 0
    n_pairs, agree_sum = 0, 0.0
    cols = np.arange(tp.size)
    with np.errstate(invalid="ignore"):
        for start in range(0, tp.size, 512):  # chunks keep memory at 512 x n
            rows = np.arange(start, min(start + 512, tp.size))
            d_true = np.sign(tp[rows, None] - tp[None, :])
            d_pred = np.nan_to_num(np.sign(sc[rows, None] - sc[None, :]), nan=0.0)  # -inf vs -inf: tie
            upper = (cols[None, :] > rows[:, None]) & (d_true != 0)
            n_pairs += int(upper.sum())
            agree = np.where(d_pred == 0, 0.5, (d_pred == d_true).astype(np.float64))
            agree_sum += float(agree[upper].sum())
    if n_pairs == 0:
        return math.nan, 0
    return agree_sum / n_pairs, n_pairs


def task_kendall_tau(latency_s, scores, failures: str = "exclude") -> float:
    """Kendall τ-b of scores against throughput in one task; 0 for constant scores; NaN when the
    latencies are all equal (nothing to rank: left out, as pairwise accuracy leaves it)."""
    from scipy.stats import kendalltau

    tp, sc = _usable(latency_s, scores, failures)
    if tp.size < 2 or np.all(tp == tp[0]):
        return math.nan
    sc = np.where(np.isinf(sc), np.sign(sc) * np.finfo(np.float64).max, sc)
    tau = kendalltau(sc, tp).statistic
    return 0.0 if tau is None or math.isnan(tau) else float(tau)


# ------------------------------------------------------------------- over tasks


@dataclass
class RankingMetrics:
    """Ranking metrics over tasks; ``skipped_tasks`` had no successful record."""

    top_k: dict[int, float]  # k -> TenSet's top-k score: Σ best / Σ top-k latency (slow tasks weigh more)
    peak: dict[int, float]  # k -> average peak score@k
    pairwise_accuracy: float
    kendall_tau: float
    failed_pick_rate: dict[int, float]  # k -> fraction of tasks whose k picks all failed
    n_tasks: int  # tasks evaluated
    n_records: int
    skipped_tasks: list[str] = field(default_factory=list)
    per_task: dict[str, dict] = field(default_factory=dict)
    failures: str = "exclude"  # how failed records entered (see the module docstring)
    task_mean_top_k: dict[int, float] = field(default_factory=dict)  # k -> mean over tasks of best / top-k latency

    @property
    def top1(self) -> float:
        return self.top_k.get(1, math.nan)

    @property
    def top5(self) -> float:
        return self.top_k.get(5, math.nan)

    @property
    def n_skipped_tasks(self) -> int:
        return len(self.skipped_tasks)

    def as_dict(self) -> dict[str, float]:
        """Flat metric names for tables and tracking (no per-task detail)."""
        out: dict[str, float] = {}
        for k, v in self.top_k.items():
            out[f"top{k}_score"] = v
        for k, v in self.task_mean_top_k.items():
            out[f"task_mean_top{k}_score"] = v
        for k, v in self.peak.items():
            out[f"peak_score@{k}"] = v
        for k, v in self.failed_pick_rate.items():
            out[f"failed_pick_rate@{k}"] = v
        out["pairwise_accuracy"] = self.pairwise_accuracy
        out["kendall_tau"] = self.kendall_tau
        out["n_tasks"] = float(self.n_tasks)
        out["n_skipped_tasks"] = float(self.n_skipped_tasks)
        out["n_records"] = float(self.n_records)
        return out


def top_k_score(latency_s, scores, groups, k: int, weights: Mapping[str, float] | None = None,
                failures: str = "exclude") -> float:
    """TenSet's top-k score over tasks (see the module docstring); NaN if no task is usable."""
    num = den = 0.0
    for task, lat, sc in _tasks(latency_s, scores, groups, failures):
        w = float(weights.get(task, 1.0)) if weights else 1.0
        num += w * lat.min()
        den += w * task_top_k_latency(lat, sc, k)
    return num / den if den > 0 else math.nan


def _weighted(values: list[tuple[float, float]]) -> float:
    vals = [(v, w) for v, w in values if not math.isnan(v) and w > 0]
    if not vals:
        return math.nan
    return float(sum(v * w for v, w in vals) / sum(w for _, w in vals))


def peak_score(latency_s, scores, groups, k: int, failures: str = "exclude") -> float:
    """Average peak score@k over tasks, weighted by their number of records."""
    return _weighted([(task_peak_score(lat, sc, k), float(lat.size))
                      for _, lat, sc in _tasks(latency_s, scores, groups, failures)])


def pairwise_accuracy(latency_s, scores, groups, failures: str = "exclude") -> float:
    """Pairwise comparison accuracy over tasks, weighted by the records each task uses."""
    return _weighted([(task_pairwise_accuracy(lat, sc, failures)[0], float(lat.size))
                      for _, lat, sc in _tasks(latency_s, scores, groups, failures)])


def kendall_tau(latency_s, scores, groups, failures: str = "exclude") -> float:
    """Kendall τ-b over tasks, weighted by the records each task uses."""
    return _weighted([(task_kendall_tau(lat, sc, failures), float(lat.size))
                      for _, lat, sc in _tasks(latency_s, scores, groups, failures)])


def task_failed_pick_chance(latency_s, scores, k: int) -> float:
    """The chance that the k highest-scored records of one task all failed (1 or 0 unless
    equal scores leave the picks to a random order)."""
    lat = _latencies(latency_s)
    return 1.0 - float(_expected_running(np.isfinite(lat).astype(np.float64), scores, k, max)[-1])


def failed_pick_rate(latency_s, scores, groups, k: int = 1) -> float:
    """Fraction of tasks (with a success) whose k highest-scored records all failed (expected
    over the orders of equal scores)."""
    flags = [task_failed_pick_chance(lat, sc, k) for _, lat, sc in _tasks(latency_s, scores, groups, "penalize")]
    return float(np.mean(flags)) if flags else math.nan


def ranking_metrics(
    latency_s,
    scores,
    groups,
    *,
    ks: Sequence[int] = (1, 5),
    weights: Mapping[str, float] | None = None,
    failures: str = "exclude",
) -> RankingMetrics:
    """All ranking metrics at once, with per-task detail in ``per_task``."""
    _check_mode(failures)
    if not ks or any(isinstance(k, bool) or not isinstance(k, (int, float, np.integer, np.floating))
                     or int(k) != k or k < 1 for k in ks):
        raise ValueError(f"ks must be whole numbers >= 1, not {tuple(ks)}")
    ks = tuple(int(k) for k in ks)
    lat_all = _latencies(latency_s)
    per_task: dict[str, dict] = {}
    for task, lat, sc in _tasks(latency_s, scores, groups, failures):
        acc, n_pairs = task_pairwise_accuracy(lat, sc, failures)
        per_task[task] = {
            "n_records": int(lat.size),
            "best_latency_s": float(lat.min()),
            **{f"top{k}_latency_s": task_top_k_latency(lat, sc, k) for k in ks},
            **{f"peak_score@{k}": task_peak_score(lat, sc, k) for k in ks},
            "pairwise_accuracy": acc,
            "n_pairs": n_pairs,
            "kendall_tau": task_kendall_tau(lat, sc, failures),
        }
    for task, lat, sc in _tasks(latency_s, scores, groups, "penalize"):
        per_task[task]["n_failed"] = int((~np.isfinite(lat)).sum())
        per_task[task]["top1_pick_failed"] = task_failed_pick_chance(lat, sc, 1)  # 0 or 1 unless tied
    return RankingMetrics(
        top_k={k: float(top_k_score(latency_s, scores, groups, k, weights, failures)) for k in ks},
        task_mean_top_k={k: (float(np.mean([row["best_latency_s"] / row[f"top{k}_latency_s"]
                                            for row in per_task.values()])) if per_task else math.nan) for k in ks},
        peak={k: peak_score(latency_s, scores, groups, k, failures) for k in ks},
        pairwise_accuracy=pairwise_accuracy(latency_s, scores, groups, failures),
        kendall_tau=kendall_tau(latency_s, scores, groups, failures),
        failed_pick_rate={k: failed_pick_rate(latency_s, scores, groups, k) for k in ks},
        n_tasks=len(per_task),
        n_records=int(lat_all.size),
        skipped_tasks=[t for t in _all_tasks(groups) if t not in per_task],
        per_task=per_task,
        failures=failures,
    )


# ------------------------------------------------------------- search efficiency


def best_so_far(latency_s) -> np.ndarray:
    """Running minimum of latencies in trial order (``inf`` until the first success)."""
    lat = _latencies(latency_s)
    return np.minimum.accumulate(lat) if lat.size else lat


def trials_to_reach(latency_s, reference_latency_s: float, fraction: float = 0.95,
                    budget: int | None = None) -> int:
    """First trial (1-based) with ``best_so_far <= reference / fraction``; ``budget + 1`` if none.

    ``budget`` defaults to the number of trials; trials after it are ignored.
    """
    _check_reference(reference_latency_s)
    best = best_so_far(latency_s)
    budget = len(best) if budget is None else int(budget)
    best = best[:budget]
    hit = np.flatnonzero(best <= reference_latency_s / fraction * (1 + 1e-12))
    return int(hit[0]) + 1 if hit.size else budget + 1


def _check_reference(reference_latency_s: float) -> None:
    """A reference is a measured latency: without one (inf, NaN, 0) every run would reach it,
    or none would."""
    if not (isinstance(reference_latency_s, (int, float, np.number)) and math.isfinite(reference_latency_s)
            and reference_latency_s > 0):
        raise ValueError(f"the reference latency must be a finite positive number of seconds, "
                         f"not {reference_latency_s!r}")


def t95(latency_s, reference_latency_s: float, budget: int | None = None) -> int:
    """Trials to reach 95% of the reference throughput (``budget + 1`` if never)."""
    return trials_to_reach(latency_s, reference_latency_s, 0.95, budget)


def t90(latency_s, reference_latency_s: float, budget: int | None = None) -> int:
    """Trials to reach 90% of the reference throughput (``budget + 1`` if never)."""
    return trials_to_reach(latency_s, reference_latency_s, 0.90, budget)


def normalized_curve(latency_s, reference_latency_s: float, budget: int | None = None) -> np.ndarray:
    """``min(1, reference / best_so_far)`` per trial, padded with the last value to ``budget``."""
    _check_reference(reference_latency_s)
    best = best_so_far(latency_s)
    budget = len(best) if budget is None else int(budget)
    if budget <= 0:
        return np.zeros(0)
    curve = np.where(np.isfinite(best), np.minimum(1.0, reference_latency_s / best), 0.0)[:budget]
    if curve.size < budget:
        pad = curve[-1] if curve.size else 0.0
        curve = np.concatenate([curve, np.full(budget - curve.size, pad)])
    return curve


def convergence_auc(latency_s, reference_latency_s: float, budget: int | None = None) -> float:
    """Area under the normalized convergence curve, divided by the budget (0..1)."""
    curve = normalized_curve(latency_s, reference_latency_s, budget)
    return float(curve.mean()) if curve.size else math.nan
