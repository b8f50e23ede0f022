"""costlab used from a script or notebook, not the CLI: registering a model class, the
scikit-learn parameter contract, loading any saved model, and inputs refused with a
message instead of an error from deep inside XGBoost or LightGBM."""

import numpy as np
import pytest
import sklearn.base

from costlab.errors import CostlabError
from costlab.features import Features, FeatureSchema
from costlab.models import MODELS, CostModel, get, load_model, save_model
from costlab.registry import Registry
from tests.bare_models import FitOnly

SCHEMA = FeatureSchema("toy", 1, ["a", "b"])


def _fitted_lgbm(seed=0):
    rng = np.random.default_rng(seed)
    return get("lgbm")(seed=seed, n_estimators=5).fit(Features(SCHEMA, dense=rng.random((40, 2))), rng.random(40),
                                                       ["g"] * 40)


class _Named(FitOnly):
    name = "_api-named"


def test_register_refuses_a_class_that_is_no_model_or_has_another_name_or_takes_a_built_in_name():
    registry = Registry("cost model", base=CostModel)
    with pytest.raises(CostlabError, match=r"cannot register cost model 'dict': it names class dict, not a subclass "
                                           r"of CostModel"):
        registry.register("dict")(dict)
    with pytest.raises(CostlabError, match=r"its class's name is '_api-named', not 'other': .* set name = 'other'"):
        registry.register("other")(_Named)
    registry.register("_api-named")(_Named)
    registry.register("_api-named")(_Named)  # the same class again (a notebook cell run again) is allowed

    class Impostor(_Named):
        pass

    with pytest.raises(CostlabError, match=r"cannot register cost model '_api-named' .*Impostor\): the name is taken "
                                           r"by .*_Named; choose another name"):
        registry.register("_api-named")(Impostor)
    assert registry.factory("_api-named") is _Named


def test_a_built_in_model_cannot_be_replaced_by_registering_its_name():
    class FakeLGBM(_Named):
        name = "lgbm"

    lgbm = MODELS.factory("lgbm")
    with pytest.raises(CostlabError, match=r"'lgbm' .*: the name is taken by costlab\.models\.lgbm\.LGBMModel"):
        MODELS.register("lgbm")(FakeLGBM)
    assert MODELS.factory("lgbm") is lgbm


def test_set_params_and_sklearn_clone_follow_the_contract():
    model = get("lgbm")(seed=0, n_estimators=5)
    assert model.set_params(seed=3) is model and model.seed == 3
    assert model.get_params(deep=True) == model.get_params()
    with pytest.raises(CostlabError, match=r"unknown parameter 'nope' \(value: 1\); valid: objective, "):
        model.set_params(nope=1)
    with pytest.raises(CostlabError, match="objective"):
        model.set_params(seed=4, objective="no-such-objective")
    assert model.seed == 3 and model.objective == "lambdarank"  # a refused set changes nothing
    twin = sklearn.base.clone(_fitted_lgbm())
    assert type(twin).__name__ == "LGBMModel" and not twin.is_fitted and twin.get_params()["n_estimators"] == 5


def test_the_base_class_loads_whichever_model_a_folder_holds(tmp_path):
    model = _fitted_lgbm()
    save_model(model, tmp_path / "m")
    for loaded in (CostModel.load(tmp_path / "m"), load_model(tmp_path / "m")):
        assert type(loaded) is type(model)
        features = Features(SCHEMA, dense=np.random.default_rng(1).random((8, 2)))
        np.testing.assert_array_equal(loaded.predict(features), model.predict(features))


def test_features_that_do_not_match_their_schema_are_refused_when_made():
    Features(SCHEMA, dense=np.zeros((3, 2), dtype=np.float64))  # other dtypes become float32
    assert Features(SCHEMA, dense=np.zeros((3, 2), dtype=np.float64)).dense.dtype == np.float32
    with pytest.raises(ValueError, match=r"'toy': the dense matrix has shape \(3, 3\), but the schema names 2 "
                                         r"feature\(s\)"):
        Features(SCHEMA, dense=np.zeros((3, 3)))
    with pytest.raises(ValueError, match=r"shape \(6,\)"):
        Features(SCHEMA, dense=np.zeros(6))
    with pytest.raises(ValueError, match="exactly one of them"):
        Features(SCHEMA)
    with pytest.raises(ValueError, match=r"the schema's kind is 'dense', but a graph batch was given"):
        from costlab.features import GraphBatch

        Features(SCHEMA, graphs=GraphBatch(np.zeros((2, 2), np.float32), np.zeros((2, 0), np.int64),
                                           np.zeros(0, np.int64), np.zeros(2, np.int64), 1))


def test_predict_and_fit_refuse_what_is_not_features_or_groups():
    features = Features(SCHEMA, dense=np.random.default_rng(0).random((12, 2)))
    ensemble = get("ensemble")(base="lgbm", base_params={"n_estimators": 3}, n_members=2)
    for model in (_fitted_lgbm(), get("random")(), ensemble.fit(features, np.arange(1.0, 13.0), ["g"] * 12)):
        with pytest.raises(CostlabError, match=rf"cost model '{model.name}': expects costlab Features .* got ndarray"):
            model.predict(np.zeros((4, 2)))
    with pytest.raises(CostlabError, match=r"groups is None; give one workload key per sample"):
        get("lgbm")().fit(Features(SCHEMA, dense=np.zeros((4, 2))), np.ones(4), None)


def test_a_scripts_extractor_may_not_take_a_built_in_name_before_the_built_ins_are_imported():
    """The extractors load lazily: a script registering 'analysis' first took the name, and every
    later look-up failed when the built-in came to register (found by the diff review)."""
    from costlab.features import EXTRACTORS, FeatureExtractor, get as get_extractor

    class Mine(FeatureExtractor):
        name = "analysis"
        feature_names = ["a"]

        def extract(self, context, candidates):
            return Features(self.schema, dense=np.zeros((len(candidates), 1)))

    with pytest.raises(CostlabError, match=r"'analysis' .*: the name is taken by costlab\.features\.analysis\."):
        EXTRACTORS.register("analysis")(Mine)  # refused: nothing to undo
    assert type(get_extractor("analysis")).__module__ == "costlab.features.analysis"
