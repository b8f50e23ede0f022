"""Behaviour of the builtin models beyond the shared conformance suite."""

import json

import numpy as np
import pytest

from costlab.errors import CostlabError
from costlab.models import MODELS, check_model_params, get
from costlab.models._common import META_FILE, load_model
from costlab.testing.synthetic import make_problem
from costlab.features import Features, FeatureSchema


def dense(seed=0, **kw):
    return make_problem("dense", seed=seed, **kw)


def fit(model, data):
    return model.fit(data.features, data.latency_s, data.groups)


BAD_PARAMS = [
    ("xgb", {"objective": "rank:map"}, "valid: regression, pairwise, ndcg"),
    ("xgb", {"update_mode": "never"}, "valid: refit, continue"),
    ("xgb", {"subsample": 0}, r"subsample must be a number > 0 and <= 1 \(value: 0\)"),
    ("lgbm", {"objective": "huber"}, "valid: regression, lambdarank, xendcg"),
    ("lgbm", {"group_weight": "even"}, "valid: rows, equal"),
    ("lgbm", {"num_leaves": 1}, r"num_leaves must be an integer >= 2 \(value: 1\)"),
    ("lgbm", {"n_estimators": 10.5}, r"n_estimators must be an integer >= 1 \(value: 10.5\)"),
    ("lgbm", {"extra_params": ["max_depth", 3]}, "extra_params must be a mapping"),
    ("lgbm", {"extra_params": {"max_depth": 3, "num_leavs": 8}},
     r"lgbm: extra_params num_leavs: not a LightGBM parameter or alias, so LightGBM would ignore it"),
    ("lgbm", {"extra_params": {"max_depth": "deep"}},
     r"lgbm: LightGBM refuses these parameters .*'deep'.*: Parameter max_depth should be of type int"),
    ("lgbm", {"extra_params": {"path_smooth": -1}}, r"LightGBM refuses .*Check failed: \(path_smooth\) >= \(0\.0\)$"),
    ("lgbm", {"objective": "lambdarank", "extra_params": {"tree_learner": "nope"}}, r"Unknown tree learner type nope"),
    ("lgbm", {"extra_params": {"min_data_in_leaf": -1}}, r"Check failed: \(min_data_in_leaf\) >= \(0\)"),
    ("lgbm", {"extra_params": {"min_data": -1}}, r"Check failed: \(min_data_in_leaf\) >= \(0\)"),  # an alias
    ("xgb", {"extra_params": {"max_dpeth": 3}}, r"xgb: extra_params max_dpeth: XGBoost says it would not use it"),
    ("xgb", {"extra_params": {"lambdarank_pair_method": "topk"}}, r"extra_params lambdarank_pair_method: XGBoost"),
    ("xgb", {"extra_params": {"grow_policy": "nope"}}, r"XGBoost refuses these parameters .*'nope'"),
    ("gnn", {"loss": "hinge"}, "valid: pairwise, listwise"),
    ("gnn", {"hidden": 128}, r"hidden must be an integer >= 1 and <= 64 \(value: 128\)"),
    ("ensemble", {"bag_over": "rows"}, "valid: samples, groups"),
    ("ensemble", {"base": "nope"}, "valid names"),
    ("ensemble", {"base": "lgbm", "base_params": {"learning_rate": -1}}, r"base 'lgbm': lgbm: learning_rate must be"),
    ("ensemble", {"n_members": 0}, r"n_members must be an integer >= 1 \(value: 0\)"),
    ("ensemble", {"base": "lgbm", "base_params": {"extra_params": {"leaves": 4}}}, r"base 'lgbm': .*extra_params leaves"),
    # tvm-xgb, offline (costlab train): TVM's recipe's own parameters
    ("tvm-xgb", {"tree_method": "histt"}, r"tvm-xgb: unknown tree_method 'histt'; valid: auto, exact, approx, hist"),
    ("tvm-xgb", {"eta": 0}, r"tvm-xgb: eta must be a number > 0 \(value: 0\)"),
    ("tvm-xgb", {"adaptive_training": "yes"}, r"adaptive_training must be true or false \(value: 'yes'\)"),
]


def test_extra_params_that_the_library_uses_pass_and_reach_it():
    check_model_params("xgb", {"objective": "pairwise", "extra_params": {"lambdarank_pair_method": "topk"}})
    check_model_params("xgb", {"extra_params": {"alpha": 0.5, "grow_policy": "lossguide"}})
    check_model_params("lgbm", {"extra_params": {"num_leaf": 4, "path_smooth": 0.1}})  # an alias counts
    stumps = fit(get("lgbm")(extra_params={"max_depth": 1}, n_estimators=5), dense(seed=1))
    trees = stumps.booster_.dump_model()["tree_info"]
    assert trees and all(tree["num_leaves"] <= 2 for tree in trees)
    # an alias of a parameter costlab sets wins too (LightGBM alone would keep costlab's main name)
    capped = fit(get("lgbm")(extra_params={"max_leaves": 2}, num_leaves=31, n_estimators=5), dense(seed=1))
    trees = capped.booster_.dump_model()["tree_info"]
    assert trees and all(tree["num_leaves"] <= 2 for tree in trees)
    assert "num_leaves" not in capped._lgb_params() and capped._lgb_params()["max_leaves"] == 2


BAD_SEEDS = [  # a seed numpy and XGBoost take, for every model built by name (they failed at the first fit)
    ("xgb", {"seed": "abc"}, r"xgb: seed must be an integer >= 0 and <= 4294967295 \(value: 'abc'\)"),
    ("lgbm", {"seed": 1.5}, r"lgbm: seed must be an integer .*\(value: 1.5\)"),
    ("random", {"seed": -1}, r"random: seed must be an integer >= 0 .*\(value: -1\)"),
    ("ensemble", {"seed": 2**32}, r"ensemble: seed must be an integer .*\(value: 4294967296\)"),
]


@pytest.mark.parametrize("name, params, match", BAD_PARAMS + BAD_SEEDS)
def test_check_model_params_refuses_bad_params_before_any_work(name, params, match, capfd):
    with pytest.raises(CostlabError, match=match):
        check_model_params(name, params)
    assert "[Fatal]" not in capfd.readouterr().err  # the library's reason is said once, in costlab's error


def test_check_model_params_names_an_unknown_parameter_and_the_valid_ones():
    with pytest.raises(CostlabError, match=r"lgbm: unknown parameter 'leaves' \(value: 8\); valid: objective, "):
        check_model_params("lgbm", {"leaves": 8})
    with pytest.raises(CostlabError, match=r"ensemble: base 'xgb': xgb: unknown parameter 'depth'"):
        check_model_params("ensemble", {"base": "xgb", "base_params": {"depth": 3}})
    check_model_params("ensemble", {"base": "lgbm", "n_members": 4, "base_params": {"objective": "xendcg"}})
    check_model_params("random", {"seed": 3})
    check_model_params("lgbm", {"num_leaves": np.int64(8), "subsample": np.float32(0.5)})  # numpy numbers count


@pytest.mark.parametrize("name, params, match", BAD_PARAMS)
def test_bad_params_fail_at_fit_with_the_valid_choices(name, params, match):
    model = get(name)(**params)  # the constructor only stores
    data = make_problem("graph" if name == "gnn" else "dense", n_groups=1, per_group=8)
    with pytest.raises(CostlabError, match=match):
        fit(model, data)


@pytest.mark.parametrize("name, params", [
    ("xgb", {"objective": "pairwise"}), ("xgb", {"objective": "ndcg"}),
    ("lgbm", {"objective": "regression"}), ("lgbm", {"objective": "xendcg"}),
])
def test_other_objectives_rank(name, params):
    from costlab.testing.synthetic import pairwise_accuracy

    test = dense(seed=2, n_groups=2, per_group=50, group_prefix="t")
    scores = fit(get(name)(**params), dense(seed=1, per_group=64)).predict(test.features)
    assert pairwise_accuracy(scores, test.latency_s, test.groups) > 0.8


def test_xgb_continue_mode_adds_trees_then_refits():
    data, more = dense(seed=1), dense(seed=2)
    model = fit(get("xgb")(update_mode="continue", n_estimators=10, update_rounds=5), data)
    model.update(more.features, more.latency_s, more.groups)
    assert model.booster_.num_boosted_rounds() == 15
    for _ in range(4):
        model.update(more.features, more.latency_s, more.groups)
    assert model.booster_.num_boosted_rounds() <= 30


def test_xgb_continue_mode_continues_alike_after_save_and_load(tmp_path):
    """The trees added by an update sample rows (subsample 0.8) from (seed, round): a saved
    booster has no RNG state, so without that the loaded model continued differently."""
    first, more = dense(seed=0), dense(seed=1)
    model = fit(get("xgb")(update_mode="continue", n_estimators=10, update_rounds=5), first)
    model.save(tmp_path / "m")
    loaded = load_model(tmp_path / "m")
    for m in (model, loaded):
        m.update(more.features, more.latency_s, more.groups)
    assert np.array_equal(model.predict(more.features), loaded.predict(more.features))


def test_tvm_xgb_retrains_only_after_20_percent_growth():
    data = dense(seed=1, per_group=50)  # 200 samples
    model = fit(get("tvm-xgb")(), data)
    booster = model.booster_
    few = make_problem("dense", seed=3, n_groups=1, per_group=30)
    model.update(few.features, few.latency_s, few.groups)  # 230 < 200 * 1.2
    assert model.booster_ is booster
    model.update(few.features, few.latency_s, few.groups)  # 260 >= 240
    assert model.booster_ is not booster and model.last_train_size_ == 260


def test_random_model_leaves_numpy_global_rng_alone():
    np.random.seed(123)
    state = np.random.get_state()[1].copy()
    data = dense()
    fit(get("random")(seed=4), data).predict(data.features)
    assert np.array_equal(np.random.get_state()[1], state)


def test_gnn_leaves_torch_global_rng_alone_and_warm_updates():
    import torch

    torch.manual_seed(7)
    state = torch.get_rng_state()
    data = make_problem("graph", n_groups=2, per_group=24, seed=1)
    model = fit(get("gnn")(max_epochs=3, update_mode="warm", update_epochs=2), data)
    assert torch.equal(torch.get_rng_state(), state)
    model.update(data.features, data.latency_s, data.groups)
    assert model.epochs_ <= 2 and np.isfinite(model.predict(data.features)).all()


def test_gnn_weights_do_not_depend_on_torch_s_thread_count():
    """torch's sums depend on how many threads share them: a GNN trained offline on 2 threads
    and the same one on 1 (as in a session) differed, and so did what they kept."""
    import torch

    data = make_problem("graph", n_groups=4, per_group=256, seed=3)
    threads = torch.get_num_threads()
    weights = []
    try:
        for n in (2, 1):
            torch.set_num_threads(n)
            model = fit(get("gnn")(max_epochs=6, seed=0), data)
            assert torch.get_num_threads() == n  # the caller's setting is left as it was
            weights.append(model.net_.state_dict())
    finally:
        torch.set_num_threads(threads)
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])


@pytest.mark.parametrize("first_per_group, reseed, saved", [
    (30, False, False),  # each training drew a new validation split
    (8, False, False),  # a first fit under 50 rows validates on none and trains on all
    (30, True, True),  # a pretrained model, saved, loaded and reseeded by the session
])
def test_gnn_warm_update_never_validates_on_rows_it_has_trained_on(monkeypatch, tmp_path, first_per_group,
                                                                    reseed, saved):
    """An update's early stop was judged on rows the model had learned in an earlier training."""
    from costlab.features._base import GraphIndex, taker

    data = make_problem("graph", n_groups=2, per_group=60, seed=1)
    first = np.r_[0:first_per_group, 60:60 + first_per_group]
    new = np.setdiff1d(np.arange(120), first)
    rows = {"fit": first, "update": np.r_[first, new]}  # an update trains on the rows seen so far, then the new
    used = {}  # (phase, training?) -> the data's rows the model selected
    phase = ["fit"]
    model = get("gnn")(max_epochs=6, max_steps=10_000, patience=100, update_mode="warm", update_epochs=6, seed=0)
    real_select = GraphIndex.select

    def recorded(self, idx):
        used.setdefault((phase[0], model.net_.training), set()).update(rows[phase[0]][idx].tolist())
        return real_select(self, idx)

    take = taker(data.features)
    inputs = {p: (take(r), data.latency_s[r], data.groups[r]) for p, r in (("fit", first), ("update", new))}
    monkeypatch.setattr(GraphIndex, "select", recorded)
    model.fit(*inputs["fit"])
    if saved:
        model.save(tmp_path / "gnn")
        model = get("gnn").load(tmp_path / "gnn")
    if reseed:
        model.reseed(7)
    phase[0] = "update"
    model.update(*inputs["update"])
    trained, validated = used[("fit", True)], used[("update", False)]
    assert trained and validated and not trained & validated


def test_gnn_trains_on_held_out_rows_when_none_can_validate(monkeypatch):
    """60 rows in 30 groups of 2: the rows drawn for validation (at most one per group) made no
    validation batch, and were neither trained on nor validated."""
    from costlab.features._base import GraphIndex

    data = make_problem("graph", n_groups=30, per_group=2, seed=1)
    seen = set()
    real_select = GraphIndex.select

    def recorded(self, idx):
        seen.update(np.asarray(idx).tolist())
        return real_select(self, idx)

    monkeypatch.setattr(GraphIndex, "select", recorded)
    model = fit(get("gnn")(max_epochs=5, seed=0), data)
    assert model.unvalidated_rows_ == 60 and seen == set(range(60))


def test_gnn_names_the_epoch_whose_weights_it_keeps(tmp_path):
    """The early stop keeps the best epoch's weights; ``epochs_`` said only how many ran."""
    data = make_problem("graph", n_groups=2, per_group=40, seed=2)  # 80 samples: a validation split
    model = fit(get("gnn")(max_epochs=40, max_steps=10_000, patience=2, seed=3), data)
    assert 1 <= model.kept_epoch_ <= model.epochs_
    assert model.epochs_ == 40 or model.epochs_ - model.kept_epoch_ == 2  # stopped 2 epochs past the best
    model.save(tmp_path / "gnn")
    loaded = get("gnn").load(tmp_path / "gnn")
    assert (loaded.epochs_, loaded.kept_epoch_) == (model.epochs_, model.kept_epoch_)


def test_a_warm_gnn_update_keeps_its_weights_when_no_epoch_validates_better():
    """A warm update's early stop compared only the update's own epochs, so an update whose
    every epoch validated worse than the weights it started from kept the least bad of them."""
    data = make_problem("graph", n_groups=2, per_group=60, seed=2)  # 120 samples: a validation split
    model = fit(get("gnn")(max_epochs=30, max_steps=10_000, update_mode="warm", update_epochs=4, seed=3), data)
    before = model.predict(data.features)
    model.learning_rate = 50.0  # every step of the update now overshoots: no epoch validates better
    more = make_problem("graph", n_groups=2, per_group=10, seed=5)
    model.update(more.features, more.latency_s, more.groups)
    assert model.kept_epoch_ == 0 and model.epochs_ >= 1
    np.testing.assert_array_equal(model.predict(data.features), before)


def test_gnn_reads_a_nan_feature_cell_as_missing():
    """One NaN cell made the normalization NaN and every score NaN (then -1e30): the tree models
    read NaN as a missing value; so does the GNN now."""
    data = make_problem("graph", n_groups=2, per_group=24, seed=1)
    data.features.graphs.node_features[3, 0] = np.nan
    model = fit(get("gnn")(max_epochs=3), data)
    scores = model.predict(data.features)
    assert np.isfinite(scores).all() and np.unique(scores).size > 1
    assert np.isfinite(model.net_.x_mean.numpy()).all() and np.isfinite(model.net_.x_std.numpy()).all()


def test_ensemble_spread_and_graph_members_round_trip(tmp_path):
    data = make_problem("graph", n_groups=2, per_group=24, seed=1)
    model = fit(get("ensemble")(base="gnn", base_params={"max_epochs": 3}, n_members=2), data)
    assert model.default_features == "graph"
    mean, spread = model.predict_with_spread(data.features)
    assert spread.max() > 0 and np.allclose(mean, model.predict(data.features))
    model.save(tmp_path / "ens")
    loaded = load_model(tmp_path / "ens")
    assert np.array_equal(loaded.predict(data.features), model.predict(data.features))
    assert sorted(p.name for p in (tmp_path / "ens").iterdir()) == [META_FILE, "member-0", "member-1"]


def test_group_weights_give_every_group_the_same_total_weight():
    from costlab.models._common import group_weights

    groups = np.array(["a", "a", "a", "b", "c", "c", "c", "c", "c", "c"])
    weight = group_weights(groups, "equal")
    totals = {g: weight[groups == g].sum() for g in "abc"}
    assert totals["a"] == pytest.approx(totals["b"]) and totals["b"] == pytest.approx(totals["c"])
    assert weight.mean() == pytest.approx(1.0)
    assert group_weights(groups, "rows") is None
    with pytest.raises(CostlabError, match="valid: rows, equal"):
        group_weights(groups, "by-size")


@pytest.mark.parametrize("objective", ["regression", "xendcg"])
def test_lgbm_equal_group_weight_fits_small_workloads_better_at_a_large_ones_cost(objective):
    """One large workload is fast at low x, two small ones at high x. Weighing workloads
    rather than rows, the model ranks the small ones' records better and the large one's
    worse. (lambdarank normalizes each query's gradients already, so there the small
    workloads count fully either way.)"""
    from costlab.features._base import Features
    from costlab.testing.synthetic import N_FEATURES, pairwise_accuracy, synthetic_schema

    rng = np.random.default_rng(0)

    def workload(n, fast_at_high_x, group):
        x = rng.random((n, N_FEATURES))
        latency_s = 1e-3 * (1 + 4 * (1 - x[:, 0] if fast_at_high_x else x[:, 0]))
        return x, latency_s, np.full(n, group)

    parts = [workload(1200, False, "large"), workload(40, True, "small-1"), workload(40, True, "small-2")]
    x, latency_s, groups = (np.concatenate(column) for column in zip(*parts))
    features, small = Features(synthetic_schema("dense"), x), groups != "large"
    accuracy = {}
    for how in ("rows", "equal"):
        scores = get("lgbm")(objective=objective, group_weight=how).fit(features, latency_s, groups).predict(features)
        accuracy[how] = {part: pairwise_accuracy(scores[mask], latency_s[mask], groups[mask])
                         for part, mask in (("small", small), ("large", ~small))}
    assert accuracy["equal"]["small"] > accuracy["rows"]["small"] + 0.05, accuracy
    assert accuracy["equal"]["large"] < accuracy["rows"]["large"], accuracy


def test_ensemble_members_get_distinct_seeds_and_base_params_stay_untouched():
    base_params = {"n_estimators": 5}
    model = fit(get("ensemble")(base_params=base_params, n_members=3), dense())
    assert base_params == {"n_estimators": 5}
    assert len({m.seed for m in model.members_}) == 3


def test_a_reseeded_pretrained_ensemble_refits_differently_per_session_seed(tmp_path):
    """The session seed must reach a loaded model's online refits, not only the search."""
    fit(get("ensemble")(base="lgbm", base_params={"n_estimators": 10}, n_members=3), dense(seed=0)).save(tmp_path / "e")
    new = dense(seed=1)

    def refit(seed):
        model = load_model(tmp_path / "e").reseed(seed)
        assert model.seed == seed and [m.seed for m in model.members_] == [model._member_seed(i) for i in range(3)]
        return model.update(new.features, new.latency_s, new.groups).predict(new.features)

    assert np.array_equal(refit(1), refit(1))
    assert not np.array_equal(refit(1), refit(2))
    assert get("lgbm")(seed=3).reseed(7).seed == 7


@pytest.mark.parametrize("name", ["xgb", "lgbm", "tvm-xgb", "gnn", "random"])
def test_saved_files_are_safe_formats(tmp_path, name):
    kind = "graph" if name == "gnn" else "dense"
    data = make_problem(kind, n_groups=2, per_group=16)
    params = {"max_epochs": 2} if name == "gnn" else {}
    fit(get(name)(**params), data).save(tmp_path / "m")
    suffixes = {p.suffix for p in (tmp_path / "m").iterdir()}
    assert suffixes <= {".json", ".npz", ".ubj", ".txt", ".pt"}, suffixes
    meta = json.loads((tmp_path / "m" / META_FILE).read_text())
    assert meta["model"] == name and meta["features"] == data.features.schema.to_dict()
    if (tmp_path / "m" / "data.npz").exists():
        np.load(tmp_path / "m" / "data.npz", allow_pickle=False)["groups"]  # no object arrays


def test_loading_another_models_file_or_a_non_model_fails_clearly(tmp_path):
    fit(get("xgb")(), dense()).save(tmp_path / "x")
    with pytest.raises(CostlabError, match="holds a 'xgb' model, not 'lgbm'"):
        get("lgbm").load(tmp_path / "x")
    with pytest.raises(CostlabError, match="not a saved costlab model"):
        load_model(tmp_path)


@pytest.mark.parametrize("name", ["xgb", "lgbm", "tvm-xgb", "gnn"])
@pytest.mark.parametrize("damage", ["missing", "truncated"])
def test_a_saved_model_with_a_missing_or_truncated_file_fails_in_one_line_naming_the_model(tmp_path, name, damage):
    kind = "graph" if name == "gnn" else "dense"
    params = {"max_epochs": 2} if name == "gnn" else {}
    fit(get(name)(**params), make_problem(kind, n_groups=2, per_group=16)).save(tmp_path / "m")
    for file in sorted(p for p in (tmp_path / "m").iterdir() if p.name != META_FILE):
        whole = file.read_bytes()
        file.unlink() if damage == "missing" else file.write_bytes(whole[:50])
        with pytest.raises(CostlabError) as raised:
            load_model(tmp_path / "m")
        message = str(raised.value)
        assert message.startswith(f"{tmp_path / 'm'}: its {name!r} model cannot be loaded, a file of it is "
                                  f"missing or damaged: "), message
        assert "\n" not in message and len(message) < 400, message
        if damage == "missing":
            assert file.name in message, message
        file.write_bytes(whole)
    load_model(tmp_path / "m")  # whole again


def test_a_model_metadata_file_that_is_not_an_object_is_named(tmp_path):
    (tmp_path / META_FILE).write_text("[1]")
    with pytest.raises(CostlabError, match=f"^{tmp_path / META_FILE}: holds a JSON list, not the object costlab writes$"):
        load_model(tmp_path)
    (tmp_path / META_FILE).write_text("{}")  # said "unsupported format None vNone" (a bad-input audit)
    with pytest.raises(CostlabError, match=f"^{tmp_path / META_FILE}: names no format, so it is not a model costlab "
                                           f"saved \\(it writes format "):
        load_model(tmp_path)


def test_unfitted_models_refuse_to_predict_except_random():
    data = dense()
    for name in MODELS.names():
        model = get(name)()
        if name == "random":
            assert model.predict(data.features).shape == (len(data.latency_s),)
        elif name in ("xgb", "lgbm", "tvm-xgb", "gnn", "ensemble"):
            with pytest.raises(CostlabError, match="not fitted"):
                model.predict(data.features)


def test_a_loaded_random_model_reseeded_draws_from_its_new_seed(tmp_path):
    get("random")(seed=0).save(tmp_path / "r")
    a = load_model(tmp_path / "r").reseed(1).predict(dense(seed=0).features)
    b = load_model(tmp_path / "r").reseed(2).predict(dense(seed=0).features)
    assert not np.array_equal(a, b)
    assert np.array_equal(a, get("random")(seed=1).predict(dense(seed=0).features))


def test_gnn_keeps_to_max_steps_with_many_groups(monkeypatch):
    """Each epoch takes one batch or more per group; the step budget counted one per 128
    candidates, so 20 groups of 3 ran 20x max_steps."""
    import torch

    data = make_problem("graph", n_groups=20, per_group=3, seed=1)
    steps = []
    real_step = torch.optim.AdamW.step

    def counted(self, *args, **kwargs):
        steps.append(1)
        return real_step(self, *args, **kwargs)

    monkeypatch.setattr(torch.optim.AdamW, "step", counted)
    fit(get("gnn")(max_steps=40, max_epochs=100, patience=100, seed=0), data)
    assert 0 < len(steps) <= 40


def test_gnn_reads_an_infinite_cell_as_missing():
    """One inf node feature made every score -1e30."""
    data = make_problem("graph", n_groups=2, per_group=24, seed=1)
    data.features.graphs.node_features[0, 0] = np.inf
    scores = fit(get("gnn")(max_epochs=3, seed=0), data).predict(data.features)
    assert np.all(np.isfinite(scores)) and len(np.unique(scores)) > 1


def test_gnn_edge_directions_round_trip(tmp_path):
    """'both' adds each edge reversed as a type of its own; a model saved before the option
    (no edge_directions in its state) loads as 'forward'."""
    import json

    data = make_problem("graph", n_groups=2, per_group=24, seed=1)
    feats = data.features
    for directions in ("both", "forward"):
        model = fit(get("gnn")(max_epochs=3, edge_directions=directions, seed=0), data)
        n_types = model.net_.convs[0].edge_embed.num_embeddings
        assert n_types == (2 if directions == "both" else 1) * model.num_relations_
        model.save(tmp_path / directions)
        assert np.array_equal(load_model(tmp_path / directions).predict(feats), model.predict(feats))
    meta_file = tmp_path / "forward" / "costlab-model.json"
    meta = json.loads(meta_file.read_text())
    del meta["params"]["edge_directions"], meta["state"]["edge_directions"]  # as saved before the option
    meta_file.write_text(json.dumps(meta))
    old = load_model(tmp_path / "forward")
    assert old.edge_directions == "forward" and np.array_equal(old.predict(feats), model.predict(feats))


def test_numpy_hyper_parameters_save_and_load(tmp_path):
    """A sweep over np.arange values passed the checks and trained, then failed to save, leaving
    the booster without the costlab-model.json that names it."""
    data = make_problem("dense", n_groups=2, per_group=32, seed=0)
    model = get("lgbm")(num_leaves=np.int64(7), learning_rate=np.float32(0.25), seed=0)
    model.fit(data.features, data.latency_s, data.groups).save(tmp_path / "m")
    loaded = load_model(tmp_path / "m")
    assert loaded.get_params()["num_leaves"] == 7
    np.testing.assert_array_equal(loaded.predict(data.features), model.predict(data.features))


@pytest.mark.parametrize("name", ["xgb", "tvm-xgb"])
def test_xgboost_models_read_infinite_features_as_missing(name):
    """XGBoost refused inf in training (LightGBM and the GNN read it as missing)."""
    data = make_problem("dense", n_groups=2, per_group=32, seed=0)
    with_inf, with_nan = data.features.dense.copy(), data.features.dense.copy()
    with_inf[::5, 0], with_nan[::5, 0] = np.inf, np.nan
    scores = []
    for x in (with_inf, with_nan):
        feats = Features(data.features.schema, dense=x)
        scores.append(get(name)(seed=0).fit(feats, data.latency_s, data.groups).predict(feats))
    np.testing.assert_array_equal(scores[0], scores[1])


def test_a_failed_update_or_fit_leaves_the_model_as_it_was(monkeypatch):
    """The batch was stored before training: a failed update kept it (every later update failed
    on it), and a failed refit kept the new schema beside the old booster."""
    data = make_problem("dense", n_groups=2, per_group=32, seed=0)
    model = get("xgb")(seed=0).fit(data.features, data.latency_s, data.groups)
    before = model.predict(data.features)

    def broken(*args):
        raise RuntimeError("the learner failed")

    monkeypatch.setattr(model, "_update", broken)
    with pytest.raises(RuntimeError, match="the learner failed"):
        model.update(data.features, data.latency_s, data.groups)
    assert len(model.data_) == 64
    monkeypatch.setattr(model, "_fit", broken)
    other = Features(FeatureSchema("other", 1, list(data.features.schema.names)), dense=data.features.dense)
    with pytest.raises(RuntimeError):
        model.fit(other, data.latency_s, data.groups)
    assert model.schema_ == data.features.schema
    np.testing.assert_array_equal(model.predict(data.features), before)
    fresh = get("xgb")(seed=0)
    monkeypatch.setattr(fresh, "_fit", broken)
    with pytest.raises(RuntimeError):
        fresh.fit(data.features, data.latency_s, data.groups)
    with pytest.raises(CostlabError, match="is not fitted"):
        fresh.predict(data.features)


def test_xgb_random_state_in_extra_params_seeds_it():
    """XGBoost keeps costlab's seed over its alias random_state: the alias changed nothing."""
    data = make_problem("dense", n_groups=2, per_group=64, seed=0)

    def scores(**params):
        return get("xgb")(subsample=0.5, **params).fit(data.features, data.latency_s, data.groups).predict(
            data.features)

    np.testing.assert_array_equal(scores(seed=0, extra_params={"random_state": 7}), scores(seed=7))
    assert not np.array_equal(scores(seed=0, extra_params={"random_state": 7}), scores(seed=0))


def test_the_gnn_never_keeps_diverged_weights_as_its_best():
    """With NaN scores every comparison of the held-out check was False: an error of 0, better
    than any real epoch, so the NaN weights were kept and every score became the same."""
    import torch

    data = make_problem("graph", n_groups=2, per_group=100, seed=0, extractor="graph")  # >= 50 rows: validated
    model = get("gnn")(learning_rate=3e4, max_epochs=30, patience=8, seed=0)
    model.fit(data.features, data.latency_s, data.groups)
    assert all(bool(torch.isfinite(t).all()) for t in model.net_.parameters())
    assert len(np.unique(model.predict(data.features))) > 1


def test_a_failed_warm_gnn_update_leaves_its_weights_as_they_were(monkeypatch):
    """It trains its network in place: the attributes came back, the half-trained weights stayed."""
    data = make_problem("graph", n_groups=2, per_group=30, seed=0, extractor="graph")
    model = get("gnn")(max_epochs=3, update_mode="warm", update_epochs=3, seed=0).fit(
        data.features, data.latency_s, data.groups)
    before = model.predict(data.features)
    calls = []
    loss = model._loss

    def failing_loss(*args):
        calls.append(1)
        if len(calls) > 2:  # after two optimizer steps
            raise RuntimeError("out of memory")
        return loss(*args)

    monkeypatch.setattr(model, "_loss", failing_loss)
    with pytest.raises(RuntimeError, match="out of memory"):
        model.update(data.features, data.latency_s, data.groups)
    assert len(calls) == 3
    np.testing.assert_array_equal(model.predict(data.features), before)
