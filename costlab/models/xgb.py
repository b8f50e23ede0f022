"""XGBoost on costlab's dense features: regression or ranking within a workload."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from costlab.errors import CostlabError
from costlab.features._base import Features
from costlab.models._base import MODELS
from costlab.models._common import (
    TrainedModel,
    TrainingData,
    check_boosting_params,
    check_choice,
    check_extra_param_names,
    check_number,
    file_in,
    group_codes,
    inf_as_missing,
    normalized_throughput,
    relevance_levels,
)

BOOSTER_FILE = "booster.ubj"
OBJECTIVES = {"regression": "reg:squarederror", "pairwise": "rank:pairwise", "ndcg": "rank:ndcg"}
UPDATE_MODES = ("refit", "continue")


def _unused_by_xgboost(params: dict, extra_params: dict) -> list[str]:
    """The ``extra_params`` names XGBoost says it would not use with ``params``: one boosting
    round on two rows, with XGBoost's warnings on (it only warns about such names)."""
    import warnings

    import xgboost as xgb

    probe = xgb.DMatrix(np.zeros((2, 1)), label=np.array([0.0, 1.0]), qid=np.zeros(2))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            xgb.train({**params, "verbosity": 1}, probe, num_boost_round=1)
        except xgb.core.XGBoostError as err:
            raise CostlabError(f"xgb: XGBoost refuses these parameters (extra_params: {extra_params!r}): "
                               f"{str(err).splitlines()[0]}") from None
    said = " ".join(str(w.message) for w in caught)
    unused = set()
    for listed in re.findall(r"Parameters: \{(.*?)\} are not used", said, flags=re.S):
        unused.update(re.findall(r'"([^"]+)"', listed))
    return [name for name in extra_params if name in unused]


@MODELS.register("xgb")
class XGBModel(TrainedModel):
    """Gradient-boosted trees (XGBoost ``hist``) that score candidates; higher = faster.

    Targets (see :mod:`costlab.models._common`):

    - ``objective="regression"``: squared error on the normalized throughput
      ``min latency / latency`` of the group (failures 0).
    - ``"pairwise"`` / ``"ndcg"``: ``rank:pairwise`` / ``rank:ndcg`` with the workload
      group as ``qid`` and integer relevance 0 (failed) .. 30 (fastest of its group).
      "pairwise" samples 8 pairs per sample over the whole group (``mean`` pairs);
      "ndcg" uses XGBoost's top-k pairs with a linear gain (``ndcg_exp_gain=False``).

    Defaults are sized for online refits: 2000 samples x 200 features in about a second.

    Parameters:
        objective: "regression", "pairwise" or "ndcg".
        n_estimators, max_depth, learning_rate, min_child_weight, subsample,
        colsample_bytree, reg_lambda, max_bin: XGBoost parameters.
        update_mode: "refit" retrains from scratch on all data seen; "continue" adds
            ``update_rounds`` trees trained on all data to the current booster (refits
            once the booster holds more than ``3 * n_estimators`` trees).
        update_rounds: trees added per update in "continue" mode.
        n_threads: XGBoost threads (None: all cores; 1 by default, as OpenMP threads that wait
            for busy cores cost more than they give on a small shared machine).
        seed: XGBoost's seed (row and column sampling).
        extra_params: more XGBoost parameters, passed as given (they win over the above);
            a name XGBoost says it would not use with these parameters is refused.
    """

    name = "xgb"
    default_features = "per_store"
    feature_kinds = ("dense",)

    def __init__(self, objective: str = "regression", n_estimators: int = 100, max_depth: int = 6,
                 learning_rate: float = 0.2, min_child_weight: float = 1.0, subsample: float = 0.8,
                 colsample_bytree: float = 1.0, reg_lambda: float = 1.0, max_bin: int = 64,
                 update_mode: str = "refit", update_rounds: int = 20, n_threads: int | None = 1,
                 seed: int = 0, extra_params: dict | None = None):
        self.objective = objective
        self.n_estimators = n_estimators
        self.max_depth = max_depth
        self.learning_rate = learning_rate
        self.min_child_weight = min_child_weight
        self.subsample = subsample
        self.colsample_bytree = colsample_bytree
        self.reg_lambda = reg_lambda
        self.max_bin = max_bin
        self.update_mode = update_mode
        self.update_rounds = update_rounds
        self.n_threads = n_threads
        self.seed = seed
        self.extra_params = extra_params

    def check_params(self) -> None:
        check_choice("xgb", "objective", self.objective, OBJECTIVES)
        check_choice("xgb", "update_mode", self.update_mode, UPDATE_MODES)
        for param in ("n_estimators", "update_rounds"):
            check_number("xgb", param, getattr(self, param), at_least=1, integer=True)
        check_number("xgb", "max_depth", self.max_depth, at_least=0, integer=True)  # 0: no limit
        check_number("xgb", "min_child_weight", self.min_child_weight, at_least=0)
        check_boosting_params(self, "XGBoost")
        if self.extra_params:
            unused = _unused_by_xgboost(self._xgb_params(checked=False), self.extra_params)
            check_extra_param_names(self, unused, "XGBoost says it would not use it with these parameters")

    def _xgb_params(self, checked: bool = True) -> dict:
        if checked:
            self.check_params()
        params = {
            "objective": OBJECTIVES[self.objective], "tree_method": "hist", "max_depth": self.max_depth,
            "eta": self.learning_rate, "min_child_weight": self.min_child_weight, "subsample": self.subsample,
            "colsample_bytree": self.colsample_bytree, "lambda": self.reg_lambda, "max_bin": self.max_bin,
            "seed": self.seed, "verbosity": 0,
        }
        if self.objective == "pairwise":  # every pair counts, not only the top of the list
            params.update(lambdarank_pair_method="mean", lambdarank_num_pair_per_sample=8)
        if self.objective == "ndcg":  # linear gain: 2**30 for the best of 31 levels drowns the rest
            params.update(ndcg_exp_gain=False)
        if self.update_mode == "continue":  # the row sampling of added trees from (seed, round), not from an RNG
            params["seed_per_iteration"] = True  # state a saved booster lacks: a loaded model continues alike
        if self.n_threads is not None:
            params["nthread"] = self.n_threads
        params.update(self.extra_params or {})
        if "random_state" in (self.extra_params or {}) and "seed" not in self.extra_params:
            del params["seed"]  # XGBoost keeps seed over its alias: the alias given would change nothing
        return params

    def _dmatrix(self, data: TrainingData):
        import xgboost as xgb

        if self.objective == "regression":
            y = normalized_throughput(data.latency_s, data.groups)
            return xgb.DMatrix(inf_as_missing(data.features.dense), label=y)
        qid, _ = group_codes(data.groups)
        order = np.argsort(qid, kind="stable")  # XGBoost wants rows sorted by qid
        y = relevance_levels(data.latency_s, data.groups)
        return xgb.DMatrix(inf_as_missing(data.features.dense[order]), label=y[order], qid=qid[order])

    def _fit(self, data: TrainingData) -> None:
        import xgboost as xgb

        self.booster_ = xgb.train(self._xgb_params(), self._dmatrix(data), num_boost_round=self.n_estimators)

    def _update(self, data: TrainingData, new: TrainingData) -> None:
        import xgboost as xgb

        if self.update_mode == "refit" or self.booster_.num_boosted_rounds() >= 3 * self.n_estimators:
            self._fit(data)
            return
        self.booster_ = xgb.train(self._xgb_params(), self._dmatrix(data), num_boost_round=self.update_rounds,
                                  xgb_model=self.booster_)

    def _predict(self, features: Features) -> np.ndarray:
        return self.booster_.inplace_predict(inf_as_missing(features.dense))

    def _save_state(self, path: Path) -> dict:
        self.booster_.save_model(str(path / BOOSTER_FILE))
        return {"booster": BOOSTER_FILE}

    def _load_state(self, path: Path, state: dict) -> None:
        import xgboost as xgb

        self.booster_ = xgb.Booster(model_file=str(file_in(path, state["booster"], "booster")))
