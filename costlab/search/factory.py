"""Turns a config's cost-model entry into the object MetaSchedule's search calls.

``tvm-xgb`` is TVM's own ``XGBModel`` on ``PerStoreFeature``, the default of
MetaSchedule and the baseline of every comparison. Every other name is a costlab
model from the registry, behind :class:`CostlabCostModel`.
"""

from __future__ import annotations

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
    # pretrain_on: the rows the warm start was trained on, in words; asked when logged,
    # since pretrain_family: measured chooses them during the search
    describe_pretraining: Callable[[], str] = lambda: ""

    @property
    def pretraining(self) -> str:
        return self.describe_pretraining()


def _construct(spec: CostModelSpec, seed: int):
    from costlab.models import make_model

    return make_model(spec.name, spec.params, seed)[0]


def _load_pretrained(spec: CostModelSpec, seed: int, workload_key: str, timer: PhaseTimer,
                     workload_hash: str | None = None, workload_family: str | None = None):
    """``(model, describe)``: the model to warm-start from, with the session's seed, and a
    function that gives the rows it was trained on, in words ("" for a saved model).

    ``pretrained``: loaded, and reseeded (it was saved with its training seed).
    ``pretrain_on``: trained now on that dataset without the tuned workload (leave-one-task-out;
    with ``pretrain_tuned``, with it: a transfer), the rows chosen by
    :func:`costlab.data.pretraining_set.select_pretraining_rows` from ``pretrain_family``,
    ``pretrain_rows`` and ``pretrain_tuned``; timed as ``pretrain_s``. ``workload_hash``
    finds the tuned workload's rows in databases costlab did not write; ``workload_family``
    is its family where the dataset does not hold it. ``pretrain_family: measured``: a
    :class:`~costlab.models.measured_warm_start.MeasuredWarmStart` with its source models
    trained; its words change when it chooses, on the first measured batch.
    """
    from costlab.models import get

    if spec.pretrain_on and spec.pretrain_family == "measured":
        return _measured_warm_start(spec, seed, workload_key, timer, workload_hash)
    if spec.pretrain_on:
        from costlab.data.dataset import load_dataset
        from costlab.data.offline import default_features, train_model
        from costlab.data.pretraining_set import select_pretraining_rows

        try:
            chosen = select_pretraining_rows(load_dataset(spec.pretrain_on), workload_key, workload_hash,
                                             spec.pretrain_family, workload_family, spec.pretrain_rows, seed,
                                             keep_tuned=spec.pretrain_tuned)
        except CostlabError as err:
            raise CostlabError(f"pretrain_on {spec.pretrain_on}: {err}") from None
        with timer.phase("pretrain_s"):
            model = train_model(spec.pretrain_on, spec.name, spec.features or default_features(spec.name, spec.params),
                                params=spec.params, rows=chosen.rows, seed=seed).model
        return model, chosen.describe
    model = get(spec.name).load(spec.pretrained)
    return (model.reseed(seed) if hasattr(model, "reseed") else model), lambda: ""


def _measured_warm_start(spec: CostModelSpec, seed: int, workload_key: str, timer: PhaseTimer,
                         workload_hash: str | None):
    from costlab.data.offline import default_features
    from costlab.data.pretraining_set import load_family_sources
    from costlab.models.measured_warm_start import MeasuredWarmStart

    features = spec.features or default_features(spec.name, spec.params)
    with timer.phase("pretrain_s"):
        try:
            sources = load_family_sources(spec.pretrain_on, workload_key, features, workload_hash)
        except CostlabError as err:
            raise CostlabError(f"pretrain_on {spec.pretrain_on}: {err}") from None
        model = MeasuredWarmStart(sources, lambda: _construct(spec, seed)).fit_sources()
    return model, model.describe


def _one_torch_thread_for_graphs(extractor) -> None:
    """Graph models train with torch, whose thread pool fights the builder and the runner for
    the cores: on 2 cores, 2 torch threads were 5-10x slower than 1."""
    if extractor.kind == "graph":
        import torch

        torch.set_num_threads(1)


def _features_trained_on(model) -> str:
    """The extractor a pretrained (or loaded) model was trained on, else its default: a model
    trained offline with ``--features per_store`` scores ``per_store`` features, whatever its
    class's default. A warm blend scores with its pretrained model's features."""
    from costlab.models.warm_blend import WarmBlend

    schema = getattr(model.pretrained if isinstance(model, WarmBlend) else model, "schema_", None)
    return schema.extractor if schema is not None else model.default_features


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

    from costlab.data.offline import default_features
    from costlab.features import get as get_extractor
    from costlab.models._common import save_model

    # before any pretraining, so that a warm start does not depend on the host's cores (an
    # ensemble's default features are a property of its params: default_features asks an instance)
    _one_torch_thread_for_graphs(get_extractor(spec.features or default_features(spec.name, spec.params)))
    if spec.warm_started and spec.warm == "blend":
        from costlab.models.warm_blend import WarmBlend

        pretrained, pretraining = _load_pretrained(spec, seed, group, timer, workload_hash, workload_family)
        model = WarmBlend(pretrained, _construct(spec, seed), spec.blend_samples)
    elif spec.warm_started:
        model, pretraining = _load_pretrained(spec, seed, group, timer, workload_hash, workload_family)
    else:
        model, pretraining = _construct(spec, seed), lambda: ""
    extractor = get_extractor(spec.features or _features_trained_on(model))
    _one_torch_thread_for_graphs(extractor)  # a loaded model's own features may differ from its spec's
    adapter = CostlabCostModel(
        model, extractor, group, timer, kappa=spec.kappa, retrain_growth=spec.retrain_growth,
        frozen=spec.frozen, pretrained=spec.warm_started, seed=seed, scores=spec.tvm_scores,
    )

    def save_costlab(path: Path) -> Path | None:
        if not adapter.fitted or getattr(model, "decided", True) is False:  # measured: nothing measured yet
            return None
        save_model(model, path)
        return Path(path)

    return SearchCostModel(adapter, save_costlab, adapter, pretraining)
