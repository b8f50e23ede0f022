"""Turns a config's cost-model entry into the object MetaSchedule's search calls.

``tvm-xgb`` is TVM's own ``XGBModel`` on ``PerStoreFeature``, the default of
MetaSchedule and the baseline of every comparison. Every other name is a costlab
model from the registry, behind :class:`CostlabCostModel`.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from costlab.config import CostModelSpec
from costlab.errors import CostlabError
from costlab.search.adapter import CostlabCostModel, TimedCostModel
from costlab.search.timing import PhaseTimer

TVM_XGB = "tvm-xgb"


@dataclass
class SearchCostModel:
    """What a session needs: the MetaSchedule cost model and how to save it."""

    ms_model: object  # a MetaSchedule CostModel (a PyCostModel instance)
    save: Callable[[Path], Path | None]  # writes the trained model; returns the file
    adapter: CostlabCostModel | None  # None for TVM's own XGBModel


def _construct(spec: CostModelSpec, seed: int):
    from costlab.models import get

    cls = get(spec.name)
    params = dict(spec.params)
    if "seed" in inspect.signature(cls).parameters and "seed" not in params:
        params["seed"] = seed
    try:
        return cls(**params)
    except TypeError as err:
        raise CostlabError(f"cost model {spec.name!r}: bad params {spec.params}: {err}") from None


def _load_pretrained(spec: CostModelSpec, seed: int, workload_key: str, timer: PhaseTimer,
                     workload_hash: str | None = None, workload_family: str | None = None):
    """The model to warm-start from, with the session's seed.

    ``pretrained``: loaded, and reseeded (it was saved with its training seed).
    ``pretrain_on``: trained now on that dataset's rows of every other workload, so the
    tuned one stays unseen (leave-one-task-out), timed as ``pretrain_s``. A row is of the
    tuned workload when its ``workload_key`` or its structural hash (``workload_hash``,
    for databases costlab did not write) is the tuned one's. ``pretrain_family`` keeps the
    rows of the tuned workload's family only (as the dataset names it where it holds the
    workload, else ``workload_family``), when the dataset holds another workload of it.
    ``pretrain_rows`` then caps the rows, spread evenly over those workloads and drawn by
    the session's seed.
    """
    from costlab.models import get

    if spec.pretrain_on:
        from costlab.data.dataset import load_dataset
        from costlab.data.offline import default_features, train_model

        df = load_dataset(spec.pretrain_on)
        tuned = df["workload_key"] == workload_key
        if workload_hash is not None:
            tuned |= df["workload_hash"].astype(str) == workload_hash
        keep = ~tuned
        if not keep.any():
            raise CostlabError(f"pretrain_on {spec.pretrain_on}: no rows of another workload than {workload_key}")
        if spec.pretrain_family:
            family = df.loc[tuned, "family"].iloc[0] if tuned.any() else workload_family  # as the dataset names it
            same = df["family"] == family
            if (keep & same).any():
                keep &= same
        rows = df.loc[keep, "row"].to_numpy()
        if spec.pretrain_rows is not None and len(rows) > spec.pretrain_rows:
            from costlab.data.splits import balanced_subsample

            rows = rows[balanced_subsample(df.loc[keep, "workload_key"], spec.pretrain_rows, seed)]
        with timer.phase("pretrain_s"):
            return train_model(spec.pretrain_on, spec.name, spec.features or default_features(spec.name, spec.params),
                               params=spec.params, rows=rows, seed=seed).model
    model = get(spec.name).load(spec.pretrained)
    return model.reseed(seed) if hasattr(model, "reseed") else model


def make_search_cost_model(spec: CostModelSpec, group: str, timer: PhaseTimer, seed: int,
                           num_tuning_cores: int, workload_hash: str | None = None,
                           workload_family: str | None = None) -> SearchCostModel:
    """``group``: the tuned workload's key; ``workload_hash``, ``workload_family``: its structural
    hash and operator family (for pretrain_on)."""
    if spec.name == TVM_XGB:
        from tvm.s_tir.meta_schedule.cost_model import XGBModel
        from tvm.s_tir.meta_schedule.feature_extractor import PerStoreFeature

        inner = XGBModel(extractor=PerStoreFeature(), adaptive_training=True,
                         num_tuning_cores=num_tuning_cores)

        def save_tvm_xgb(path: Path) -> Path | None:
            if inner.booster is None:
                return None
            out = Path(path).with_suffix(".json")
            inner.booster.save_model(str(out))  # XGBoost JSON: a safe format
            return out

        return SearchCostModel(TimedCostModel(inner, timer), save_tvm_xgb, None)

    from costlab.features import get as get_extractor

    if spec.warm_started and spec.warm == "blend":
        from costlab.models.warm_blend import WarmBlend

        pretrained = _load_pretrained(spec, seed, group, timer, workload_hash, workload_family)
        model = WarmBlend(pretrained, _construct(spec, seed), spec.blend_samples)
    elif spec.warm_started:
        model = _load_pretrained(spec, seed, group, timer, workload_hash, workload_family)
    else:
        model = _construct(spec, seed)
    extractor = get_extractor(spec.features or model.default_features)
    if extractor.kind == "graph":
        # Graph models train with torch, whose thread pool fights the builder and the
        # runner for the cores: on 2 cores, 2 torch threads were 5-10x slower than 1.
        import torch

        torch.set_num_threads(1)
    adapter = CostlabCostModel(
        model, extractor, group, timer, kappa=spec.kappa, retrain_growth=spec.retrain_growth,
        frozen=spec.frozen, pretrained=spec.warm_started, seed=seed,
    )

    def save_costlab(path: Path) -> Path | None:
        if not adapter.fitted:
            return None
        model.save(path)
        return Path(path)

    return SearchCostModel(adapter, save_costlab, adapter)
