"""Offline training and evaluation of cost models on a dataset, as plain result objects.

The CLI (``costlab train`` / ``costlab evaluate``) and ``experiments/offline_benchmark.py``
call these; logging to MLflow is the caller's business (``costlab.tracking``)::

    res = train_model("datasets/a100", "lgbm", rows=split.train)
    ev = evaluate_model(res.model, "datasets/a100", rows=split.test)
    cv = cross_validate("datasets/a100", "lgbm", split="leave-one-task-out")
    print(cv.metrics.top1, cv.train_time_s)

Models receive ``latency_s`` (seconds; ``inf`` for failed records) and ``groups`` (the
``task_key`` column). Features come from the dataset's cache
(:func:`costlab.data.dataset.dataset_features`); rows without features are left out and
counted in ``n_rows_without_features``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from costlab.data.database import Progress
from costlab.data.dataset import dataset_features, load_dataset, positions_of
from costlab.data.metrics import RankingMetrics, _latencies, ranking_metrics
from costlab.data.splits import balanced_subsample, make_splits
from costlab.errors import CostlabError
from costlab.features import select_features


@dataclass
class TrainResult:
    """A fitted model and how it was trained."""

    model: object  # costlab.models.CostModel
    model_name: str
    features: str
    params: dict
    rows: np.ndarray  # dataset rows trained on
    n_tasks: int
    train_time_s: float  # wall-clock seconds of model.fit
    n_rows_without_features: int = 0

    @property
    def n_train(self) -> int:
        return int(len(self.rows))


@dataclass
class EvalResult:
    """A model's scores on some dataset rows and the ranking metrics they give."""

    model_name: str
    features: str
    metrics: RankingMetrics
    rows: np.ndarray  # dataset rows evaluated
    scores: np.ndarray  # model scores of those rows (higher = faster)
    predict_time_s: float
    n_rows_without_features: int = 0

    def as_dict(self) -> dict:
        return {"model": self.model_name, "features": self.features, "n_test": int(len(self.rows)),
                "n_rows_without_features": self.n_rows_without_features,
                "predict_time_s": self.predict_time_s, **self.metrics.as_dict()}


@dataclass
class CrossValResult:
    """Out-of-fold scores of every test row across the splits, and their metrics.

    Each split trains a fresh model on its train rows and scores its test rows; the
    metrics are computed once over all test rows (for leave-one-task-out: each task
    scored by the model that never saw it).
    """

    model_name: str
    features: str
    split: str
    params: dict
    metrics: RankingMetrics
    rows: np.ndarray
    scores: np.ndarray
    train_time_s: float  # summed over splits
    predict_time_s: float
    folds: list[dict] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"model": self.model_name, "features": self.features, "split": self.split,
                "n_folds": len(self.folds), "train_time_s": self.train_time_s,
                "predict_time_s": self.predict_time_s, **self.metrics.as_dict()}


def default_features(model_name: str, params: dict | None = None) -> str:
    """The extractor a model uses unless told otherwise (asks an instance if the class can't tell)."""
    from costlab import models

    value = getattr(models.get(model_name), "default_features", "per_store")
    if not isinstance(value, str):  # e.g. a property that depends on the hyper-parameters
        value = getattr(models.make_model(model_name, params)[0], "default_features", "per_store")
    return str(value)


def feature_kinds(model_name: str) -> tuple[str, ...]:
    """The feature kinds (``dense``/``graph``) a model accepts."""
    from costlab import models

    return tuple(getattr(models.get(model_name), "feature_kinds", ("dense",)))


def check_features_fit_model(model_name: str, features: str) -> None:
    """Raise :class:`CostlabError` unless extractor ``features`` exists and gives the kind of
    features (``dense``/``graph``) that model ``model_name`` takes: before any extraction."""
    from costlab.features import get as get_extractor

    kind = get_extractor(features).kind
    kinds = feature_kinds(model_name)
    if kind not in kinds:
        raise CostlabError(f"features {features!r} are {kind}, and model {model_name!r} takes "
                           f"{' or '.join(kinds)} features")


def load_rows(dataset: str | Path, features: str, rows: Sequence[int] | None = None,
              progress: Progress | None = None):
    """``(features, latency_s, groups, rows, n_missing)`` of dataset rows (all by default)."""
    df = load_dataset(dataset, columns=["row", "latency_s", "task_key"])
    feats, row_index = dataset_features(dataset, features, progress=progress)
    wanted = df["row"].to_numpy() if rows is None else np.asarray(rows, dtype=np.int64)
    pos = positions_of(row_index, wanted)
    have = row_index[pos]
    by_row = df.set_index("row")
    latency = by_row.loc[have, "latency_s"].to_numpy(dtype=np.float64)
    groups = by_row.loc[have, "task_key"].to_numpy(dtype=object)
    return select_features(feats, pos), latency, groups, have, int(len(wanted) - len(have))


def train_model(
    dataset: str | Path,
    model_name: str,
    features: str | None = None,
    *,
    params: dict | None = None,
    rows: Sequence[int] | None = None,
    seed: int | None = 0,
    progress: Progress | None = None,
) -> TrainResult:
    """Fit model ``model_name`` on dataset rows ``rows`` (all by default).

    Args:
        dataset: a dataset directory (see :func:`costlab.data.dataset.build_dataset`).
        features: an extractor name (default: the model's ``default_features``).
        params: the model's hyper-parameters.
        seed: passed as ``seed`` when the model takes one and ``params`` has none.
    """
    from costlab.models import make_model

    features = features or default_features(model_name, params)
    model, used = make_model(model_name, params, seed)
    check_features_fit_model(model_name, features)
    feats, latency, groups, have, missing = load_rows(dataset, features, rows, progress)
    if len(have) == 0:
        raise CostlabError(f"dataset {dataset}: no training rows with {features!r} features")
    start = time.perf_counter()
    model.fit(feats, latency, groups)
    elapsed = time.perf_counter() - start
    return TrainResult(model, model_name, features, used, have, int(len(set(groups.tolist()))),
                       elapsed, missing)


def evaluate_model(
    model,
    dataset: str | Path,
    features: str | None = None,
    *,
    rows: Sequence[int] | None = None,
    ks: Sequence[int] = (1, 5),
    failures: str = "exclude",
    repeats: str = "each",
    progress: Progress | None = None,
) -> EvalResult:
    """Score dataset rows with a fitted model and compute the ranking metrics.

    ``features`` defaults to the extractor the model was trained on (``model.schema_``),
    else the model's ``default_features``. ``repeats``: ``each`` ranks every measured row;
    ``mean`` ranks each (task, trace) once (:func:`merge_repeated_traces`).
    """
    if repeats not in REPEAT_MODES:
        raise CostlabError(f"repeats must be one of {', '.join(REPEAT_MODES)} (value: {repeats!r})")
    schema = getattr(model, "schema_", None)
    features = features or (schema.extractor if schema is not None else getattr(model, "default_features", "per_store"))
    feats, latency, groups, have, missing = load_rows(dataset, features, rows, progress)
    start = time.perf_counter()
    scores = np.asarray(model.predict(feats), dtype=np.float64) if len(have) else np.zeros(0)
    elapsed = time.perf_counter() - start
    ranked = (latency, scores, groups)
    if repeats == "mean":
        traces = load_dataset(dataset).set_index("row").loc[have, "trace"].to_numpy(dtype=object)
        ranked = merge_repeated_traces(latency, scores, groups, traces)
    metrics = ranking_metrics(*ranked, ks=ks, failures=failures)
    return EvalResult(getattr(model, "name", type(model).__name__), features, metrics, have, scores, elapsed, missing)


REPEAT_MODES = ("each", "mean")


def merge_repeated_traces(latency_s, scores, groups, traces) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(latency_s, scores, groups)`` with one row per (task, trace), in first-seen order.

    A tuning database can hold one schedule measured several times; ranked row by row, the
    task's best latency is then the luckiest of its timings, which no model can pick out,
    and a perfect model scores below 1. Merged, a trace's latency is the mean of its
    successful timings (a failure only if none succeeded), and its score the mean of its
    rows' (equal features give one score).
    """
    lat = _latencies(latency_s)  # the metrics' own reading: a failure is inf
    sc = np.asarray(scores, dtype=np.float64)
    keys = [f"{g}\x00{t}" for g, t in zip(groups, traces)]
    first: dict[str, int] = {}
    slot = np.asarray([first.setdefault(k, len(first)) for k in keys], dtype=np.int64)
    n = len(first)
    ok = np.isfinite(lat)
    n_ok = np.bincount(slot, weights=ok.astype(np.float64), minlength=n)
    lat_sum = np.bincount(slot, weights=np.where(ok, lat, 0.0), minlength=n)
    merged_lat = np.where(n_ok > 0, lat_sum / np.maximum(n_ok, 1), np.inf)
    merged_sc = np.bincount(slot, weights=sc, minlength=n) / np.bincount(slot, minlength=n)
    merged_groups = np.empty(n, dtype=object)
    merged_groups[slot] = np.asarray(groups, dtype=object)
    return merged_lat, merged_sc, merged_groups


def cross_validate(
    dataset: str | Path,
    model_name: str,
    features: str | None = None,
    *,
    split: str = "leave-one-task-out",
    params: dict | None = None,
    seed: int = 0,
    test_fraction: float = 0.2,
    k: int = 5,
    ks: Sequence[int] = (1, 5),
    failures: str = "exclude",
    max_train_rows: int | None = None,
    progress: Progress | None = None,
) -> CrossValResult:
    """Train and evaluate across the splits of kind ``split`` (see :mod:`costlab.data.splits`).

    ``max_train_rows`` caps each split's training rows, spread evenly over its workloads
    and drawn by ``seed`` (as a session's ``pretrain_rows``).
    """
    from costlab.models import make_model

    features = features or default_features(model_name, params)
    make_model(model_name, params, seed)  # bad params fail now, not after the features are read
    df = load_dataset(dataset)
    splits = make_splits(df, split, seed=seed, test_fraction=test_fraction, k=k)
    feats, row_index = dataset_features(dataset, features, progress=progress)
    by_row = df.set_index("row")
    all_rows, all_scores, folds = [], [], []
    train_s = predict_s = 0.0
    used: dict = {}
    stage = f"{split} {model_name}/{features}"
    for i, sp in enumerate(splits):
        if progress:
            progress(stage, i, len(splits))
        model, used = make_model(model_name, params, seed)
        train_pos = positions_of(row_index, df["row"].to_numpy()[sp.train])
        test_pos = positions_of(row_index, df["row"].to_numpy()[sp.test])
        if len(train_pos) == 0 or len(test_pos) == 0:
            folds.append({"name": sp.name, "n_train": int(len(train_pos)), "n_test": int(len(test_pos)),
                          "skipped": "no rows with features"})
            continue
        if max_train_rows is not None and len(train_pos) > max_train_rows:
            keep = balanced_subsample(by_row.loc[row_index[train_pos], "workload_key"], max_train_rows, seed)
            train_pos = train_pos[keep]
        train_rows = row_index[train_pos]
        start = time.perf_counter()
        model.fit(select_features(feats, train_pos), by_row.loc[train_rows, "latency_s"].to_numpy(np.float64),
                  by_row.loc[train_rows, "task_key"].to_numpy(object))
        fit_s = time.perf_counter() - start
        start = time.perf_counter()
        scores = np.asarray(model.predict(select_features(feats, test_pos)), dtype=np.float64)
        pred_s = time.perf_counter() - start
        train_s += fit_s
        predict_s += pred_s
        all_rows.append(row_index[test_pos])
        all_scores.append(scores)
        folds.append({"name": sp.name, "n_train": int(len(train_pos)), "n_test": int(len(test_pos)),
                      "train_time_s": fit_s, "predict_time_s": pred_s})
    if progress:
        progress(stage, len(splits), len(splits))
    if not all_rows:
        raise CostlabError(f"dataset {dataset}: no split had rows with {features!r} features")
    rows = np.concatenate(all_rows)
    scores = np.concatenate(all_scores)
    metrics = ranking_metrics(by_row.loc[rows, "latency_s"].to_numpy(np.float64), scores,
                              by_row.loc[rows, "task_key"].to_numpy(object), ks=ks, failures=failures)
    return CrossValResult(model_name, features, split, used, metrics, rows, scores, train_s, predict_s, folds)
