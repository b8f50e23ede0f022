"""LightGBM on costlab's dense features: regression or lambdarank within a workload."""

from __future__ import annotations

import contextlib
import functools
import os
import re
import sys
from pathlib import Path

import numpy as np

from costlab.errors import CostlabError
from costlab.features._base import Features
from costlab.models._base import MODELS
from costlab.models._common import (
    GROUP_WEIGHTS,
    RANK_LEVELS,
    TrainedModel,
    TrainingData,
    check_boosting_params,
    check_choice,
    check_extra_param_names,
    check_number,
    file_in,
    group_codes,
    group_weights,
    normalized_throughput,
    relevance_levels,
)

BOOSTER_FILE = "booster.txt"
OBJECTIVES = {"regression": "regression", "lambdarank": "lambdarank", "xendcg": "rank_xendcg"}


@functools.lru_cache(maxsize=1)
def _lightgbm_aliases() -> dict[str, list[str]] | None:
    """LightGBM's own table of parameter names to their aliases (``LGBM_DumpParamAliases``,
    read through its private ``_ConfigAliases``), or None where that table is missing."""
    from lightgbm import basic

    aliases = getattr(basic, "_ConfigAliases", None)
    try:
        return aliases._get_all_param_aliases()
    except AttributeError:
        return None


def _unknown_to_lightgbm(extra_params: dict) -> list[str]:
    """The ``extra_params`` names that are neither a LightGBM parameter nor an alias of one
    (LightGBM ignores them, saying nothing at ``verbosity: -1``); where LightGBM's alias
    table is missing, nothing is refused."""
    table = _lightgbm_aliases()
    if table is None:
        return []
    known = set(table).union(*table.values())
    return [name for name in extra_params if name not in known]


def _with_extra_params(params: dict, extra_params: dict) -> dict:
    """``params`` updated with ``extra_params``, which win even where they use another alias
    of a parameter set in ``params`` (LightGBM would keep the main name and ignore the alias)."""
    if not extra_params:
        return dict(params)
    table = _lightgbm_aliases() or {}
    merged = dict(params)
    for name, value in extra_params.items():
        same = next(({main, *names} for main, names in table.items() if name == main or name in names), {name})
        for other in same:
            merged.pop(other, None)
        merged[name] = value
    return merged


@contextlib.contextmanager
def _native_stderr_silenced():
    """Discard what is written to file descriptor 2 inside the block: LightGBM's C++ side prints
    ``[LightGBM] [Fatal] ...``, with its own source line, there before it raises."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _refused_by_lightgbm(params: dict, extra_params: dict) -> None:
    """Refuse ``extra_params`` values LightGBM would stop at in the first fit (a bad type, a
    value out of range, an unknown choice): one boosting round on four rows in two groups."""
    import lightgbm as lgb

    probe = lgb.Dataset(np.zeros((4, 1)), label=np.array([0.0, 1.0, 0.0, 1.0]), group=[2, 2])
    try:
        with _native_stderr_silenced():  # the reason is in the error below, once
            lgb.train({**params, "verbosity": -1}, probe, num_boost_round=1)  # the parameters the fit will use
    except lgb.basic.LightGBMError as err:
        said = re.sub(r" at \S+, line \d+ ?\.?$", "", str(err).splitlines()[0])  # not LightGBM's source line
        raise CostlabError(f"lgbm: LightGBM refuses these parameters (extra_params: {extra_params!r}): "
                           f"{said}") from None


@MODELS.register("lgbm")
class LGBMModel(TrainedModel):
    """Gradient-boosted trees (LightGBM) that score candidates; higher = faster.

    Targets (see :mod:`costlab.models._common`):

    - ``objective="regression"``: L2 on the normalized throughput of the group (failures 0).
    - ``"lambdarank"``: LambdaMART within each workload group, with integer relevance
      0 (failed) .. 30 (fastest of its group) and a linear gain; pairs involve the top
      ``truncation_level`` candidates of a group (cost grows with it).
    - ``"xendcg"``: LightGBM's ``rank_xendcg`` (listwise, linear in the group size) on
      the same relevance.

    Parameters:
        objective: "regression", "lambdarank" or "xendcg".
        truncation_level: lambdarank's ``lambdarank_truncation_level``.
        n_estimators, num_leaves, learning_rate, min_child_samples, subsample,
        colsample_bytree, reg_lambda, max_bin: LightGBM parameters (bagging happens
        every iteration when ``subsample < 1``).
        n_threads: LightGBM threads (None: all cores; 1 by default, as OpenMP threads that wait
            for busy cores cost more than they give on a small shared machine).
        seed: LightGBM's seed; training is ``deterministic``.
        group_weight: "rows" (every sample weighs 1) or "equal" (every workload group
            carries the same total weight: a tuned workload's first measurements count as
            much as a pretraining workload's thousands). It matters most for "regression"
            and "xendcg": lambdarank normalizes each group's gradients and looks only at
            pairs with its top ``truncation_level``, so a small group counts fully already.
            Offline, on the related families' rows plus 32 or 96 of the held-out workload's,
            "equal" ranked no better (``experiments/results/offline/group_weight_reach.md``).
        extra_params: more LightGBM parameters, passed as given (they win over the above);
            a name that is not a LightGBM parameter or alias is refused.

    Defaults are sized for online refits: 2000 samples x 200 features in about a second.
    """

    name = "lgbm"
    default_features = "analysis+trace"
    feature_kinds = ("dense",)

    def __init__(self, objective: str = "lambdarank", truncation_level: int = 64, n_estimators: int = 100,
                 num_leaves: int = 31, learning_rate: float = 0.1, min_child_samples: int = 5,
                 subsample: float = 0.8, colsample_bytree: float = 1.0, reg_lambda: float = 0.0,
                 max_bin: int = 63, n_threads: int | None = 1, seed: int = 0, extra_params: dict | None = None,
                 group_weight: str = "rows"):
        self.objective = objective
        self.truncation_level = truncation_level
        self.n_estimators = n_estimators
        self.num_leaves = num_leaves
        self.learning_rate = learning_rate
        self.min_child_samples = min_child_samples
        self.subsample = subsample
        self.colsample_bytree = colsample_bytree
        self.reg_lambda = reg_lambda
        self.max_bin = max_bin
        self.n_threads = n_threads
        self.seed = seed
        self.extra_params = extra_params
        self.group_weight = group_weight

    def check_params(self) -> None:
        check_choice("lgbm", "objective", self.objective, OBJECTIVES)
        check_choice("lgbm", "group_weight", self.group_weight, GROUP_WEIGHTS)
        for param in ("n_estimators", "truncation_level"):
            check_number("lgbm", param, getattr(self, param), at_least=1, integer=True)
        check_number("lgbm", "num_leaves", self.num_leaves, at_least=2, integer=True)
        check_number("lgbm", "min_child_samples", self.min_child_samples, at_least=0, integer=True)
        check_boosting_params(self, "LightGBM")
        if self.extra_params:
            check_extra_param_names(self, _unknown_to_lightgbm(self.extra_params),
                                    "not a LightGBM parameter or alias, so LightGBM would ignore it")
            _refused_by_lightgbm(self._lgb_params(checked=False), self.extra_params)

    def _lgb_params(self, checked: bool = True) -> dict:
        if checked:
            self.check_params()
        params = {
            "objective": OBJECTIVES[self.objective], "num_leaves": self.num_leaves, "learning_rate": self.learning_rate,
            "min_data_in_leaf": self.min_child_samples,
            "bagging_fraction": self.subsample, "bagging_freq": 1 if self.subsample < 1 else 0,
            "feature_fraction": self.colsample_bytree, "lambda_l2": self.reg_lambda, "max_bin": self.max_bin,
            "seed": self.seed, "deterministic": True, "force_col_wise": True, "verbosity": -1,
        }
        if self.objective != "regression":
            params.update(label_gain=list(range(RANK_LEVELS)), lambdarank_truncation_level=self.truncation_level)
        if self.n_threads is not None:
            params["num_threads"] = self.n_threads
        return _with_extra_params(params, self.extra_params or {})

    def _fit(self, data: TrainingData) -> None:
        import lightgbm as lgb

        params = self._lgb_params()
        x = data.features.dense
        weight = group_weights(data.groups, self.group_weight)
        if self.objective == "regression":
            label = normalized_throughput(data.latency_s, data.groups)
            dataset = lgb.Dataset(x, label=label, weight=weight, params=params)
        else:
            qid, _ = group_codes(data.groups)
            order = np.argsort(qid, kind="stable")  # LightGBM wants each query's rows together
            label = relevance_levels(data.latency_s, data.groups)[order]
            dataset = lgb.Dataset(x[order], label=label, weight=None if weight is None else weight[order],
                                  group=np.bincount(qid), params=params)
        if np.ptp(label) == 0:  # one sample, or all alike: nothing to learn (LightGBM would refuse)
            self.booster_ = None
            return
        self.booster_ = lgb.train(params, dataset, num_boost_round=self.n_estimators)

    def _predict(self, features: Features) -> np.ndarray:
        if self.booster_ is None:
            return np.zeros(len(features))
        return self.booster_.predict(features.dense)

    def _save_state(self, path: Path) -> dict:
        if self.booster_ is None:
            return {"booster": None}
        self.booster_.save_model(str(path / BOOSTER_FILE))
        return {"booster": BOOSTER_FILE}

    def _load_state(self, path: Path, state: dict) -> None:
        import lightgbm as lgb

        self.booster_ = None
        if state["booster"] is not None:
            self.booster_ = lgb.Booster(model_file=str(file_in(path, state["booster"], "booster")))
