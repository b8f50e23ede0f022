"""The conformance suite itself: it catches broken models and names its cases readably."""

import numpy as np

from costlab.models import get
from costlab.models._common import TrainedModel, normalized_throughput
from costlab.testing.model_checks import checks_for, parametrize_with_checks, run_checks


class SloppyModel(TrainedModel):
    """Breaks the contract on purpose: float32 scores and params changed by fit."""

    name = "sloppy"
    default_features = "analysis"

    def __init__(self, alpha: float = 1.0):
        self.alpha = alpha

    def _fit(self, data):
        self.alpha = self.alpha * 2  # fit must not touch hyper-parameters
        x = data.features.dense[:, 0]
        self.w_ = float(np.corrcoef(x, normalized_throughput(data.latency_s, data.groups))[0, 1]) if x.size > 1 else 0.0

    def _predict(self, features):
        return features.dense[:, 0] * self.w_

    def predict(self, features):
        return super().predict(features).astype(np.float32)  # must be float64


def test_the_suite_reports_what_is_broken():
    failed = {name for name, err in run_checks(SloppyModel).items() if err is not None}
    assert {"check_params_unchanged_by_fit", "check_predict_shape_and_dtype"} <= failed
    assert "check_init_stores_params" not in failed


class EagerModel(SloppyModel):
    """Sets a learned attribute in its constructor, keeps the params contract."""

    def __init__(self, alpha: float = 1.0):
        super().__init__(alpha)
        self.w_ = 0.0


def test_a_model_that_learns_in_its_constructor_fails_only_that_check():
    results = run_checks(EagerModel)
    assert results["check_init_learns_nothing"] is not None
    assert "w_" in str(results["check_init_learns_nothing"])
    assert results["check_init_stores_params"] is None
    assert run_checks(SloppyModel)["check_init_learns_nothing"] is None


class UncheckedPredict(SloppyModel):
    """Predicts from an attribute only fit sets, without TrainedModel's fitted check."""

    def predict(self, features):
        return features.dense[:, 0].astype(np.float64) * self.w_


def test_predict_before_fit_must_be_a_clear_error_or_scores():
    """A user's model raising AttributeError ('no attribute w_') before fit passed every check
    (found by a library-API audit)."""
    failed = run_checks(UncheckedPredict)["check_predict_before_fit_is_clear"]
    assert "predict before fit raised AttributeError" in str(failed) and "raise CostlabError" in str(failed)
    assert run_checks(SloppyModel)["check_predict_before_fit_is_clear"] is None  # TrainedModel says it
    assert run_checks(lambda: get("random")())["check_predict_before_fit_is_clear"] is None  # scores from the start


def test_checks_are_chosen_by_feature_kind_and_methods():
    dense = {c.__name__ for c in checks_for(get("xgb")())}
    graph = {c.__name__ for c in checks_for(get("gnn")())}
    ensemble = {c.__name__ for c in checks_for(get("ensemble")())}
    assert "check_node_order_invariance" in graph - dense
    assert "check_predict_with_spread" in ensemble - dense


def test_parametrize_ids_and_expected_failures():
    mark = parametrize_with_checks([get("random")], expected_failed_checks={"random": {"check_one_sample": "demo"}})
    params = mark.args[1]
    ids = [p.id for p in params]
    assert "random-check_fit_returns_self" in ids
    xfails = {p.id for p in params if p.marks}
    assert xfails == {"random-check_ranks_separable_problem", "random-check_failures_rank_last",
                      "random-check_scores_do_not_depend_on_the_batch", "random-check_one_sample"}
