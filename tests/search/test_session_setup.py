"""A session's records are continued only under the setup they were tuned with."""

from costlab.search.session import _setup_differences


def _setup(**changes):
    setup = {
        "workload_key": "gemm(M=64)", "seed": 0,
        "cost_model": {"name": "ensemble", "label": "warm", "params": {}, "kappa": 1.0,
                       "pretrained": "/work/main/experiments/pretrained/ens"},
        "target": '{"kind": "llvm", "mcpu": "znver3"}',
        "measure": {"number": 1, "repeat": 1, "min_repeat_ms": 0},
    }
    for key, value in changes.items():
        if key.startswith("cost_model."):
            setup["cost_model"][key.split(".", 1)[1]] = value
        else:
            setup[key] = value
    return setup


def test_another_target_measurement_or_model_is_named_with_what_differs():
    saved = _setup()
    assert _setup_differences(saved, _setup()) == []
    # a moved checkout: the same pretrained model under another path still resumes
    assert _setup_differences(saved, _setup(**{"cost_model.pretrained": "/ci/clone/experiments/pretrained/ens"})) == []
    (target,) = _setup_differences(saved, _setup(target='{"kind": "llvm", "mcpu": "skylake"}'))
    assert "znver3" in target.split(" then, ")[0] and "skylake" in target.split(" then, ")[1]
    (measure,) = _setup_differences(saved, _setup(measure={"number": 1, "repeat": 1, "min_repeat_ms": 20}))
    assert measure.startswith("measure: ") and "'min_repeat_ms': 20" in measure.split(" then, ")[1]
    assert _setup_differences(saved, _setup(**{"cost_model.kappa": 2.0})) == ["cost_model.kappa: 1.0 then, 2.0 now"]


def test_fields_an_older_setup_file_lacks_are_not_compared():
    old = _setup()
    del old["measure"]
    assert _setup_differences(old, _setup(measure={"number": 3, "repeat": 1, "min_repeat_ms": 20})) == []
    assert _setup_differences({}, _setup()) == []  # no setup file at all
