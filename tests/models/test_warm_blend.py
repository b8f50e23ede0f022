"""WarmBlend: a kept pretrained model blended, by standardized scores, with a model of the task alone."""

import numpy as np
import pytest

from costlab.errors import CostlabError
from costlab.features import select_features
from costlab.models import get
from costlab.models._common import load_model
from costlab.models.warm_blend import WarmBlend
from costlab.testing.model_checks import parametrize_with_checks, problem_for
from costlab.testing.synthetic import make_problem, pairwise_accuracy


def _pretrained(seed=0):
    data = make_problem("dense", n_groups=3, per_group=64, seed=seed)
    return get("lgbm")(seed=seed).fit(data.features, data.latency_s, data.groups)


def _blend_of(name: str):
    """A factory of unfitted blends: one pretrained ``name`` model (fitted once, on groups the
    checks' problems do not hold) with a fresh online ``name`` model."""
    model = get(name)()
    prior = problem_for(model, seed=99, group_prefix="p")
    pretrained = model.fit(prior.features, prior.latency_s, prior.groups)
    return lambda: WarmBlend(pretrained, get(name)(), half_samples=16)


@parametrize_with_checks({"warm-blend-lgbm": _blend_of("lgbm"), "warm-blend-xgb": _blend_of("xgb")})
def test_conformance(model_factory, check):
    check(model_factory)


def test_before_any_task_sample_it_ranks_like_the_pretrained_model():
    pretrained = _pretrained()
    task = make_problem("dense", n_groups=1, per_group=40, seed=5)
    blend = WarmBlend(pretrained, get("lgbm")(seed=1), half_samples=16)
    np.testing.assert_allclose(blend.predict(task.features), pretrained.predict(task.features))


def test_the_online_model_takes_over_as_task_samples_grow_and_the_pretrained_one_is_kept():
    pretrained = _pretrained()
    before = pretrained.predict(make_problem("dense", n_groups=1, per_group=8, seed=9).features)
    task = make_problem("dense", n_groups=1, per_group=96, seed=5)
    blend = WarmBlend(pretrained, get("lgbm")(seed=1), half_samples=16)
    first16 = np.arange(16)
    blend.update(select_features(task.features, first16), task.latency_s[first16], task.groups[first16])
    first = blend.online_weight
    blend.update(task.features, task.latency_s, task.groups)
    assert 0 < first < blend.online_weight < 1
    assert pairwise_accuracy(blend.predict(task.features), task.latency_s, task.groups) > 0.7
    after = pretrained.predict(make_problem("dense", n_groups=1, per_group=8, seed=9).features)
    np.testing.assert_array_equal(before, after)  # never fine-tuned


def test_a_candidate_scores_the_same_in_any_predict_call():
    """MetaSchedule keeps the best of all the predict calls of a search iteration in one heap:
    scores within one call's ranks would put the best of a weak call above better candidates."""
    task = make_problem("dense", n_groups=1, per_group=96, seed=5)
    blend = WarmBlend(_pretrained(), get("lgbm")(seed=1), half_samples=16)
    blend.update(select_features(task.features, np.arange(32)), task.latency_s[:32], task.groups[:32])
    everything = blend.predict(task.features)
    slow = np.argsort(task.latency_s)[-24:]  # a weak population, scored alone
    np.testing.assert_allclose(blend.predict(select_features(task.features, slow)), everything[slow])
    assert everything[slow].max() < everything.max()


def test_save_and_load_round_trip(tmp_path):
    task = make_problem("dense", n_groups=1, per_group=48, seed=5)
    blend = WarmBlend(_pretrained(), get("lgbm")(seed=1), half_samples=16)
    blend.update(task.features, task.latency_s, task.groups)
    blend.save(tmp_path / "m")
    loaded = WarmBlend.load(tmp_path / "m")
    assert loaded.n_samples_ == 48 and loaded.half_samples == 16
    np.testing.assert_allclose(loaded.predict(task.features), blend.predict(task.features))
    any_model = load_model(tmp_path / "m")  # what `costlab evaluate --model` loads
    assert isinstance(any_model, WarmBlend)
    np.testing.assert_allclose(any_model.predict(task.features), blend.predict(task.features))


def test_saved_before_any_sample_the_online_model_keeps_its_own_params(tmp_path):
    online = get("lgbm")(seed=5, n_estimators=7, objective="xendcg")
    WarmBlend(_pretrained(), online, half_samples=16).save(tmp_path / "m")
    loaded = WarmBlend.load(tmp_path / "m")
    assert loaded.n_samples_ == 0 and loaded.online.get_params() == online.get_params()


def test_bad_half_samples_and_bad_directory_are_clear_errors(tmp_path):
    with pytest.raises(CostlabError, match="half_samples"):
        WarmBlend(_pretrained(), get("lgbm")(), half_samples=0)
    with pytest.raises(CostlabError, match="not a saved warm-blend model"):
        WarmBlend.load(tmp_path)


def test_a_loaded_blend_updates_as_the_one_it_was_saved_from(tmp_path):
    """Its task samples (which set each model's score scale) were not restored: after the next
    update the loaded blend's scales came from the new batch alone, and its scores differed."""
    task = make_problem("dense", n_groups=1, per_group=96, seed=5)
    first, rest = np.arange(48), np.arange(48, 96)
    blend = WarmBlend(_pretrained(), get("lgbm")(seed=1), half_samples=16)
    blend.update(select_features(task.features, first), task.latency_s[first], task.groups[first])
    blend.save(tmp_path / "m")
    loaded = WarmBlend.load(tmp_path / "m")
    for model in (blend, loaded):
        model.update(select_features(task.features, rest), task.latency_s[rest], task.groups[rest])
    np.testing.assert_array_equal(loaded.predict(task.features), blend.predict(task.features))
