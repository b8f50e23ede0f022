"""The shared conformance suite of cost models, as scikit-learn's ``check_estimator``.

Each check is a plain function ``check_xxx(model_factory)``: ``model_factory()`` returns a
fresh, unfitted model with fixed hyper-parameters (a model class works). A check raises
``AssertionError`` (or the model's own error) when the model breaks the contract of
:mod:`costlab.models._base`. The data are synthetic (:mod:`costlab.testing.synthetic`),
dense or graph after the kind of the model's ``default_features``; no TVM is needed.

In pytest, plug-in authors reuse the suite like this::

    from costlab.testing.model_checks import parametrize_with_checks

    @parametrize_with_checks({"my-model": MyModel})
    def test_my_model(model_factory, check):
        check(model_factory)

A model may declare ``expected_failed_checks = {check name: reason}`` (the random model
does not learn, for instance); those checks are marked ``xfail(strict=True)``.
"""

from __future__ import annotations

import copy
import inspect
import json
import tempfile
from pathlib import Path
from typing import Callable, Iterator, Mapping, Sequence

import numpy as np

from costlab.errors import CostlabError
from costlab.features._base import Features, FeatureSchema, select_features
from costlab.testing.synthetic import SyntheticData, feature_kind, make_problem, pairwise_accuracy, permute_nodes

ModelFactory = Callable[[], object]

# Training-set sizes of the learning checks: graph models need more samples than trees.
LEARN_PER_GROUP = {"dense": 64, "graph": 128}


# -- data --------------------------------------------------------------------------------
def model_kind(model) -> str:
    """"dense" or "graph": the kind of features the model's default extractor gives."""
    return feature_kind(model.default_features)


def problem_for(model, n_groups: int = 4, per_group: int = 32, seed: int = 0, **kwargs) -> SyntheticData:
    """A synthetic problem of the model's feature kind, named after its default extractor."""
    return make_problem(model_kind(model), n_groups=n_groups, per_group=per_group, seed=seed,
                        extractor=model.default_features, **kwargs)


def _fit(model, data: SyntheticData):
    return model.fit(data.features, data.latency_s, data.groups)


def _same(a: np.ndarray, b: np.ndarray, what: str) -> None:
    assert np.array_equal(a, b), f"{what}: predictions differ (max |diff| {np.max(np.abs(a - b)):.3g})"


def _finite(scores, n: int, what: str) -> None:
    assert isinstance(scores, np.ndarray), f"{what}: predict returned {type(scores).__name__}, not np.ndarray"
    assert scores.dtype == np.float64, f"{what}: predict returned {scores.dtype}, not float64"
    assert scores.shape == (n,), f"{what}: predict returned shape {scores.shape}, not ({n},)"
    assert np.isfinite(scores).all(), f"{what}: non-finite scores {scores[~np.isfinite(scores)][:5]}"


def _learned_attributes(model) -> list[str]:
    return [k for k in vars(model) if k.endswith("_") and not k.startswith("_")]


def _other_schema(schema: FeatureSchema, **change) -> FeatureSchema:
    data = schema.to_dict()
    data.update(change)
    return FeatureSchema.from_dict(data)


# -- checks ------------------------------------------------------------------------------
def check_init_learns_nothing(model_factory: ModelFactory) -> None:
    """A new model holds no learned state (attributes ending in ``_``) until it is fitted."""
    model = model_factory()
    assert not _learned_attributes(model), f"__init__ set learned attributes {_learned_attributes(model)}"


def check_init_stores_params(model_factory: ModelFactory) -> None:
    """The constructor stores every keyword argument unchanged: get_params() names the
    constructor's arguments, and a model built from them has the same params."""
    model = model_factory()
    params = model.get_params()
    sig = inspect.signature(type(model).__init__).parameters
    names = {p for p, v in sig.items() if p != "self" and v.kind not in (v.VAR_POSITIONAL, v.VAR_KEYWORD)}
    assert set(params) == names, f"get_params() gives {sorted(params)}, the constructor takes {sorted(names)}"
    rebuilt = type(model)(**params)
    assert rebuilt.get_params() == params, "a model rebuilt from get_params() has other params"
    assert isinstance(model.name, str) and model.name, "the model has no name"
    assert isinstance(model.default_features, str) and model.default_features, "no default_features"


def check_params_are_json(model_factory: ModelFactory) -> None:
    """Hyper-parameters are plain JSON values (saved files and MLflow need it)."""
    params = model_factory().get_params()
    assert json.loads(json.dumps(params)) == params, f"params do not survive JSON: {params}"


def check_params_pass_check_params(model_factory: ModelFactory) -> None:
    """The factory's own hyper-parameters pass ``check_params`` (where the model has one),
    and checking changes none of them: a config with them is accepted at load."""
    model = model_factory()
    check = getattr(model, "check_params", None)
    if callable(check):
        before = copy.deepcopy(model.get_params())
        check()
        assert model.get_params() == before, "check_params changed the params"


def check_fit_returns_self(model_factory: ModelFactory) -> None:
    model = model_factory()
    assert _fit(model, problem_for(model)) is model, "fit() must return self"


def check_update_returns_self(model_factory: ModelFactory) -> None:
    """update() on an unfitted model trains it; update() after fit adds samples; both return self."""
    model = model_factory()
    first, second = problem_for(model, seed=1), problem_for(model, n_groups=2, seed=2, group_prefix="u")
    assert model.update(first.features, first.latency_s, first.groups) is model, "update() must return self"
    _finite(model.predict(first.features), len(first.latency_s), "after update() on an unfitted model")
    assert model.update(second.features, second.latency_s, second.groups) is model, "update() must return self"
    _finite(model.predict(second.features), len(second.latency_s), "after a second update()")
    fitted = _fit(model_factory(), first)
    assert fitted.update(second.features, second.latency_s, second.groups) is fitted, "update() must return self"


def check_params_unchanged_by_fit(model_factory: ModelFactory) -> None:
    model = model_factory()
    before = copy.deepcopy(model.get_params())
    data = problem_for(model)
    _fit(model, data)
    model.update(data.features, data.latency_s, data.groups)
    assert model.get_params() == before, f"fit/update changed params: {before} -> {model.get_params()}"


def check_predict_shape_and_dtype(model_factory: ModelFactory) -> None:
    """predict returns a float64 array of shape (n,) for n = all, 7 and 1 candidates."""
    model = model_factory()
    data = problem_for(model)
    _fit(model, data)
    for n in (len(data.latency_s), 7, 1):
        _finite(model.predict(select_features(data.features, np.arange(n))), n, f"predict on {n} candidates")


def check_predict_finite_with_failures(model_factory: ModelFactory) -> None:
    """Finite scores after training with an all-failed group, and on all-failed data only."""
    model = model_factory()
    data = problem_for(model)
    lat = data.latency_s.copy()
    lat[data.groups == "w1"] = np.inf
    lat[data.groups == "w2"] = 1e10  # MetaSchedule's failure value, if a caller forgets to convert
    model.fit(data.features, lat, data.groups)
    _finite(model.predict(data.features), lat.size, "after fit with all-failed groups")
    model.update(data.features, np.full(lat.size, np.inf), data.groups)
    _finite(model.predict(data.features), lat.size, "after update with an all-failed batch")
    only_failed = model_factory().fit(data.features, np.full(lat.size, np.inf), data.groups)
    _finite(only_failed.predict(data.features), lat.size, "after fit on failures only")


def check_one_sample(model_factory: ModelFactory) -> None:
    """Fit on one sample (successful, then failed) and predict one: finite."""
    model = model_factory()
    data = problem_for(model)
    one = select_features(data.features, np.array([0]))
    for latency in (1e-3, np.inf):
        model = model_factory().fit(one, np.array([latency]), np.array(["w0"]))
        _finite(model.predict(one), 1, f"fit on one sample of latency {latency}")
        _finite(model.predict(data.features), len(data.latency_s), f"fit on one sample of latency {latency}")


def check_no_sample_is_a_clear_error(model_factory: ModelFactory) -> None:
    """Fit on no sample: a CostlabError (nothing to learn from), not a library's error, nor a
    model that goes on to predict from nothing."""
    model = model_factory()
    data = problem_for(model)
    none = select_features(data.features, np.zeros(0, dtype=np.int64))
    try:
        model.fit(none, np.zeros(0), np.zeros(0, dtype=str))
    except CostlabError:
        return
    raise AssertionError("fit on no sample returned instead of raising CostlabError")


def check_predict_before_fit_is_clear(model_factory: ModelFactory) -> None:
    """Predict with a model that was never fitted: a CostlabError that says so, or valid scores
    from a model made to predict from the start (random, a pretrained warm start); not a
    library's error or a missing attribute."""
    model = model_factory()
    data = problem_for(model)
    try:
        scores = model.predict(data.features)
    except CostlabError:
        return
    except Exception as err:
        raise AssertionError(f"predict before fit raised {type(err).__name__}: {err}; raise CostlabError "
                             f"saying the model is not fitted") from None
    _finite(scores, len(data.latency_s), "predict before fit")


def check_same_seed_same_predictions(model_factory: ModelFactory) -> None:
    data = None
    preds = []
    for _ in range(2):
        model = model_factory()
        data = data or problem_for(model)
        _fit(model, data)
        first = model.predict(data.features)
        model.update(data.features, data.latency_s[::-1].copy(), data.groups)
        preds.append((first, model.predict(data.features)))
    _same(preds[0][0], preds[1][0], "two models with the same params after fit")
    _same(preds[0][1], preds[1][1], "two models with the same params after update")


def check_fit_is_idempotent(model_factory: ModelFactory) -> None:
    """fit() starts from scratch: fitting twice gives what fitting once gives."""
    model = model_factory()
    data, other = problem_for(model), problem_for(model, seed=5)
    once = _fit(model, data).predict(data.features)
    _fit(model, other)
    twice = _fit(model, data).predict(data.features)
    _same(once, twice, "fit(A); fit(B); fit(A) vs fit(A)")


def check_save_load_roundtrip(model_factory: ModelFactory) -> None:
    """A loaded model predicts identically, has the same params and updates identically."""
    model = model_factory()
    data, test, more = problem_for(model), problem_for(model, seed=3), problem_for(model, seed=4)
    _fit(model, data)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model"
        model.save(path)
        loaded = type(model).load(path)
    assert type(loaded) is type(model), f"load() returned a {type(loaded).__name__}"
    assert loaded.get_params() == json.loads(json.dumps(model.get_params())), "loaded params differ"
    _same(model.predict(test.features), loaded.predict(test.features), "saved vs loaded model")
    model.update(more.features, more.latency_s, more.groups)
    loaded.update(more.features, more.latency_s, more.groups)
    _same(model.predict(test.features), loaded.predict(test.features), "saved vs loaded model after update")


def check_refuses_wrong_schema(model_factory: ModelFactory) -> None:
    """Features of another extractor, version or columns raise CostlabError, also after load."""
    model = model_factory()
    data = problem_for(model)
    _fit(model, data)
    schema = data.features.schema
    wrong = [
        _other_schema(schema, extractor=schema.extractor + "-other"),
        _other_schema(schema, version=schema.version + 1),
        _other_schema(schema, names=[n + "_renamed" for n in schema.names]),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        model.save(Path(tmp) / "model")
        loaded = type(model).load(Path(tmp) / "model")
    for m in (model, loaded):
        for w in wrong:
            features = Features(w, dense=data.features.dense, graphs=data.features.graphs)
            try:
                m.predict(features)
            except CostlabError:
                pass
            else:
                raise AssertionError(f"predict accepted schema {w.to_dict()} (fitted on {schema.to_dict()})")
    features = Features(wrong[0], dense=data.features.dense, graphs=data.features.graphs)
    try:
        model.update(features, data.latency_s, data.groups)
    except CostlabError:
        pass
    else:
        raise AssertionError("update accepted features of another extractor")


def check_ranks_separable_problem(model_factory: ModelFactory) -> None:
    """Latency falls monotonically with one feature: pairwise accuracy > 0.9 on new workloads."""
    model = model_factory()
    per_group = LEARN_PER_GROUP[model_kind(model)]
    train = problem_for(model, per_group=per_group, seed=11)
    test = problem_for(model, n_groups=2, per_group=100, seed=12, group_prefix="t")
    _fit(model, train)
    acc = pairwise_accuracy(model.predict(test.features), test.latency_s, test.groups)
    assert acc > 0.9, f"pairwise accuracy {acc:.3f} <= 0.9 on a separable problem"


def check_failures_rank_last(model_factory: ModelFactory) -> None:
    """Samples like the failed ones (30% of the training set) stay out of the top 10% and rank below the rest."""
    model = model_factory()
    per_group = LEARN_PER_GROUP[model_kind(model)]
    train = problem_for(model, per_group=per_group, seed=21, fail_above=0.7)
    test = problem_for(model, n_groups=2, per_group=100, seed=22, fail_above=0.7, group_prefix="t")
    _fit(model, train)
    scores = model.predict(test.features)
    failed = ~np.isfinite(test.latency_s)
    top = np.concatenate([np.flatnonzero(test.groups == g)[np.argsort(-scores[test.groups == g])[:10]]
                          for g in np.unique(test.groups)])
    share = failed[top].mean()
    assert share <= 0.05, f"{share:.0%} of the top 10% would fail (30% fail overall)"
    assert np.median(scores[failed]) < np.median(scores[~failed]), "failures score above the successes"


def check_node_order_invariance(model_factory: ModelFactory) -> None:
    """Graph models: reordering the nodes inside each graph does not change the scores."""
    model = model_factory()
    data, test = problem_for(model), problem_for(model, seed=31)
    _fit(model, data)
    permuted = Features(test.features.schema, graphs=permute_nodes(test.features.graphs, seed=32))
    a, b = model.predict(test.features), model.predict(permuted)
    assert np.allclose(a, b, rtol=1e-4, atol=1e-5), f"node order changed scores by up to {np.max(np.abs(a - b)):.3g}"


def check_scores_do_not_depend_on_the_batch(model_factory: ModelFactory) -> None:
    """A candidate's score is its own: scoring half the candidates, in reverse order, gives
    each the score it had among all of them (the search scores candidates in batches of any
    size and order)."""
    model = model_factory()
    data, test = problem_for(model), problem_for(model, seed=33)
    _fit(model, data)
    every = np.asarray(model.predict(test.features))
    half = np.arange(len(test.latency_s) // 2)[::-1].copy()
    part = np.asarray(model.predict(select_features(test.features, half)))
    gap = np.max(np.abs(part - every[half])) if half.size else 0.0
    assert np.allclose(part, every[half], rtol=1e-4, atol=1e-5), f"the batch changed scores by up to {gap:.3g}"


def check_predict_with_spread(model_factory: ModelFactory) -> None:
    """Models with predict_with_spread: (mean, std), float64 (n,), std >= 0, mean == predict."""
    model = model_factory()
    data = problem_for(model)
    _fit(model, data)
    mean, spread = model.predict_with_spread(data.features)
    n = len(data.latency_s)
    _finite(mean, n, "predict_with_spread mean")
    _finite(spread, n, "predict_with_spread spread")
    assert (spread >= 0).all(), "negative spread"
    assert np.allclose(mean, model.predict(data.features)), "the mean differs from predict()"


ALL_CHECKS = (
    check_init_learns_nothing,
    check_init_stores_params,
    check_params_are_json,
    check_params_pass_check_params,
    check_fit_returns_self,
    check_update_returns_self,
    check_params_unchanged_by_fit,
    check_predict_shape_and_dtype,
    check_predict_finite_with_failures,
    check_one_sample,
    check_no_sample_is_a_clear_error,
    check_predict_before_fit_is_clear,
    check_same_seed_same_predictions,
    check_fit_is_idempotent,
    check_save_load_roundtrip,
    check_refuses_wrong_schema,
    check_ranks_separable_problem,
    check_failures_rank_last,
    check_node_order_invariance,
    check_scores_do_not_depend_on_the_batch,
    check_predict_with_spread,
)


def checks_for(model) -> Iterator[Callable[[ModelFactory], None]]:
    """The checks that apply to ``model`` (graph-only and optional-method checks filtered)."""
    for check in ALL_CHECKS:
        if check is check_node_order_invariance and model_kind(model) != "graph":
            continue
        if check is check_predict_with_spread and not hasattr(model, "predict_with_spread"):
            continue
        yield check


def _expected_failures(model, label: str, extra) -> dict[str, str]:
    out = dict(getattr(model, "expected_failed_checks", None) or {})
    if callable(extra):
        out.update(extra(model) or {})
    elif extra:
        out.update(extra.get(label, {}))
    return out


def _named(factories) -> list[tuple[str, ModelFactory]]:
    if isinstance(factories, Mapping):
        return list(factories.items())
    return [(getattr(f(), "name", "") or getattr(f, "__name__", repr(f)), f) for f in factories]


def parametrize_with_checks(factories: Mapping[str, ModelFactory] | Sequence[ModelFactory],
                            expected_failed_checks: Mapping[str, Mapping[str, str]] | Callable | None = None):
    """A ``pytest.mark.parametrize`` over (model_factory, check) with ids like ``xgb-check_fit_returns_self``.

    ``factories``: {label: factory} or a list of factories (labelled by the model's name).
    ``expected_failed_checks``: {label: {check name: reason}} or ``f(model) -> {check name: reason}``,
    added to the model's own ``expected_failed_checks``; those become strict xfails.
    """
    import pytest

    params = []
    for label, factory in _named(factories):
        model = factory()
        xfail = _expected_failures(model, label, expected_failed_checks)
        for check in checks_for(model):
            marks = [pytest.mark.xfail(strict=True, reason=xfail[check.__name__])] if check.__name__ in xfail else []
            params.append(pytest.param(factory, check, id=f"{label}-{check.__name__}", marks=marks))
    return pytest.mark.parametrize("model_factory, check", params)


def run_checks(model_factory: ModelFactory) -> dict[str, BaseException | None]:
    """Run every applicable check without pytest: {check name: None or the error it raised}."""
    results: dict[str, BaseException | None] = {}
    for check in checks_for(model_factory()):
        try:
            check(model_factory)
            results[check.__name__] = None
        except Exception as err:  # report every failure, not only the first
            results[check.__name__] = err
    return results
