"""A session's records are continued only under the setup they were tuned with."""

import json

import pytest

from costlab.errors import CostlabError
from costlab.search.session import SETUP_FILE, _check_same_setup


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


def test_another_target_measurement_or_model_is_refused_with_what_differs(tmp_path):
    (tmp_path / SETUP_FILE).write_text(json.dumps(_setup()))
    _check_same_setup(tmp_path, _setup(), 5)
    # a moved checkout: the same pretrained model under another path still resumes
    _check_same_setup(tmp_path, _setup(**{"cost_model.pretrained": "/ci/clone/experiments/pretrained/ens"}), 5)
    with pytest.raises(CostlabError, match=r"target: .*znver3.* then, .*skylake.* now"):
        _check_same_setup(tmp_path, _setup(target='{"kind": "llvm", "mcpu": "skylake"}'), 5)
    with pytest.raises(CostlabError, match=r"measure: .*'min_repeat_ms': 0.* then, .*'min_repeat_ms': 20.* now"):
        _check_same_setup(tmp_path, _setup(measure={"number": 1, "repeat": 1, "min_repeat_ms": 20}), 5)
    with pytest.raises(CostlabError, match=r"\(cost_model.kappa: 1.0 then, 2.0 now\); use another name or work_dir"):
        _check_same_setup(tmp_path, _setup(**{"cost_model.kappa": 2.0}), 5)


def test_fields_an_older_setup_file_lacks_are_not_compared(tmp_path):
    old = _setup()
    del old["measure"]
    (tmp_path / SETUP_FILE).write_text(json.dumps(old))
    _check_same_setup(tmp_path, _setup(measure={"number": 3, "repeat": 1, "min_repeat_ms": 20}), 5)
