"""MeasuredWarmStart: one source model per family, the family that ranks the first batch best."""

import json

import numpy as np
import pytest

from costlab.errors import CostlabError
from costlab.features import select_features
from costlab.models import get
from costlab.models._common import load_model
from costlab.data.pretraining_set import SourceRows
from costlab.models.measured_warm_start import CHOICE_FILE, MeasuredWarmStart, most_accurate
from costlab.models.warm_blend import score_scale, standardized
from costlab.testing.synthetic import make_problem, pairwise_accuracy


def source(seed, reversed_=False, prefix="s"):
    """Two workloads whose latency falls with the hidden speed (or, reversed, rises with it)."""
    data = make_problem("dense", n_groups=2, per_group=64, seed=seed, group_prefix=prefix)
    latency = data.latency_s if not reversed_ else data.latency_s * np.exp(4.0 * data.speed)
    return SourceRows(data.features, latency, data.groups, n_workloads=2)


def lgbm():
    return get("lgbm")(seed=0)


def task(n, seed=7):
    return make_problem("dense", n_groups=1, per_group=n, seed=seed, group_prefix="task")


def test_most_accurate_takes_the_best_family_above_chance_only():
    assert most_accurate({"a": 0.61, "b": 0.74, "c": float("nan")}) == "b"
    assert most_accurate({"a": 0.5, "b": 0.31}) is None  # chance is not enough
    assert most_accurate({"b": 0.7, "a": 0.7}) == "a"  # ties: by name
    assert most_accurate({}) is None


def test_before_the_first_batch_it_scores_by_the_sources_mean_standardized_score_and_their_disagreement():
    sources = {"like": source(1), "unlike": source(2, reversed_=True)}
    model = MeasuredWarmStart(sources, lgbm).fit_sources()
    probe = task(40)
    # each source's scores on its own training rows set its scale
    z = np.stack([standardized(m.predict(probe.features), score_scale(m.predict(sources[f].features)))
                  for f, m in model.source_models_.items()])
    mean, spread = model.predict_with_spread(probe.features)
    np.testing.assert_allclose(mean, z.mean(axis=0))
    np.testing.assert_allclose(spread, z.std(axis=0))
    # MetaSchedule compares the scores of several predict calls: a candidate scores the same in any call
    half = select_features(probe.features, np.arange(20))
    np.testing.assert_allclose(model.predict_with_spread(half)[0], mean[:20])
    assert spread.mean() > 0.2  # the two sources rank in opposite orders
    assert model.describe() == "source models of 2 families (like 128, unlike 128 rows); none chosen yet"


def test_the_first_batch_chooses_the_family_that_ranks_it_and_trains_on_its_rows():
    sources = {"like": source(1), "unlike": source(2, reversed_=True)}
    model = MeasuredWarmStart(sources, lgbm).fit_sources()
    data = task(96)
    first = np.arange(32)
    model.update(select_features(data.features, first), data.latency_s[first], data.groups[first])
    assert model.chosen_ == "like"
    assert model.accuracy_["like"] > 0.8 and model.accuracy_["unlike"] < 0.2
    assert len(model.model_.data_) == 128 + 32  # the chosen family's rows and the batch
    assert model.describe().startswith("128 rows of 2 workloads (family like, the best pairwise accuracy on the "
                                       "first 32 measured: like ")
    rest = np.arange(32, 96)
    model.update(select_features(data.features, rest), data.latency_s[rest], data.groups[rest])
    assert len(model.model_.data_) == 128 + 96  # fine-tuned from then on
    assert pairwise_accuracy(model.predict(data.features), data.latency_s, data.groups) > 0.8


def test_when_no_family_beats_chance_it_trains_on_the_task_alone():
    model = MeasuredWarmStart({"unlike": source(2, reversed_=True)}, lgbm).fit_sources()
    data = task(32)
    model.update(data.features, data.latency_s, data.groups)
    assert model.chosen_ is None and len(model.model_.data_) == 32
    assert model.describe().startswith("no family ranked the first 32 measured better than chance (unlike 0.")


def test_saves_the_chosen_model_and_the_choice(tmp_path):
    model = MeasuredWarmStart({"like": source(1), "unlike": source(2, reversed_=True)}, lgbm).fit_sources()
    with pytest.raises(CostlabError, match="no model was chosen"):
        model.save(tmp_path / "early")
    data = task(32)
    model.update(data.features, data.latency_s, data.groups)
    model.save(tmp_path / "m")
    choice = json.loads((tmp_path / "m" / CHOICE_FILE).read_text())
    assert choice["chosen_family"] == "like" and choice["probe_samples"] == 32
    assert choice["family_rows"] == {"like": 128, "unlike": 128}
    assert set(choice["pairwise_accuracy"]) == {"like", "unlike"}
    for loaded in (load_model(tmp_path / "m"), MeasuredWarmStart.load(tmp_path / "m")):
        np.testing.assert_allclose(loaded.predict(data.features), model.predict(data.features))


def test_no_sources_is_a_clear_error():
    with pytest.raises(CostlabError, match="no other workload"):
        MeasuredWarmStart({}, lgbm)


def test_fit_starts_over_and_chooses_again():
    model = MeasuredWarmStart({"like": source(1), "unlike": source(2, reversed_=True)}, lgbm)
    data = task(32)
    model.fit(data.features, data.latency_s, data.groups)  # trains the source models itself
    first = model.predict(data.features)
    model.fit(data.features, data.latency_s, data.groups)
    assert model.chosen_ == "like" and len(model.model_.data_) == 128 + 32
    np.testing.assert_allclose(model.predict(data.features), first)


def test_a_batch_that_cannot_be_ranked_decides_nothing_and_is_kept_for_the_choice():
    """Every build failed, or a single success: no accuracy can be measured, so the choice (and
    the source models) wait; the batch is pooled with the next one, which decides."""
    sources = {"like": source(1), "unlike": source(2, reversed_=True)}
    model = MeasuredWarmStart(sources, lgbm).fit_sources()
    data = task(64)
    failed = np.arange(8)
    latency = data.latency_s.copy()
    latency[failed] = np.inf
    latency[8] = data.latency_s[8]  # one success in the second batch: still nothing to rank
    for rows in (failed, np.arange(8, 9)):
        model.update(select_features(data.features, rows), latency[rows], data.groups[rows])
        assert not model.decided and set(model.source_models_) == {"like", "unlike"}
    rest = np.arange(9, 40)
    model.update(select_features(data.features, rest), latency[rest], data.groups[rest])
    assert model.decided and model.chosen_ == "like" and model.n_probe_ == 40
    assert len(model.model_.data_) == 128 + 40  # the pooled batches, the failed ones included
    assert model.unranked_ == []
