"""A third-party model installed as a package is found by name and passes the suite.

The ``example_plugin`` fixture (tests/conftest.py) pip-installs tests/plugins/costlab_example_plugin
into the current environment once (no deps, no build isolation).
"""

import os
import subprocess
import sys

from costlab.testing.model_checks import run_checks


def test_plugin_is_listed_in_a_fresh_process(example_plugin):
    out = subprocess.run(
        [sys.executable, "-c", "import costlab.models as m; print(m.available())"],
        check=True, capture_output=True, text=True, timeout=120,
    ).stdout
    assert "'example-linear'" in out, out


def test_costlab_models_lists_every_model_with_its_features(example_plugin):
    """The README's `costlab models`: built-ins and the plug-in, each with its default features."""
    out = subprocess.run([sys.executable, "-m", "costlab", "models"], check=True, capture_output=True,
                         text=True, timeout=120, env={**os.environ, "COLUMNS": "250"}).stdout
    rows = {line.split("│")[1].strip(): line.split("│")[2].strip() for line in out.splitlines()
            if line.startswith("│") and line.split("│")[1].strip()}
    assert rows["ensemble"] == "per_store"  # a property of the instance (its base model's)
    assert rows["lgbm"] == "analysis+trace" and rows["gnn"] == "graph" and rows["random"] == "none"
    assert "example-linear" in rows


def test_plugin_passes_the_conformance_suite(example_plugin):
    failures = {name: err for name, err in run_checks(example_plugin.ExampleLinearModel).items() if err is not None}
    assert not failures, "\n".join(f"{name}: {err!r}" for name, err in failures.items())



def test_a_config_with_a_bad_plugin_param_is_refused_at_load(example_plugin, tmp_path):
    """The plug-in's own check_params runs when the config loads (exit status 2, nothing tuned),
    and its constructor's signature names the valid params. In a fresh process, as a user runs it:
    this one's registry was filled before the fixture installed the plug-in."""
    import yaml

    def config(params):
        path = tmp_path / "cfg.yaml"
        path.write_text(yaml.safe_dump({"name": "t", "workloads": [{"name": "gemm", "params": {"M": 64}}],
                                        "cost_models": [{"name": "example-linear", "params": params}],
                                        "mlflow": {"tracking_uri": f"sqlite:///{tmp_path}/mlflow.db"}}))
        return path

    for params, message in [
        ({"alpha": -1}, "cfg.yaml: field cost_models.0.params: example-linear: alpha must be a number >= 0 (value: -1)"),
        ({"lambda": 2}, "field cost_models.0.params: example-linear: unknown parameter 'lambda' (value: 2); valid: alpha"),
    ]:
        done = subprocess.run([sys.executable, "-m", "costlab", "run", str(config(params))], capture_output=True,
                              text=True, timeout=120, env={**os.environ, "COLUMNS": "400"})
        assert done.returncode == 2, done.stdout + done.stderr
        assert message in " ".join((done.stdout + done.stderr).split()), done.stdout + done.stderr
    assert not (tmp_path / "mlflow.db").exists()  # refused before MLflow was touched
    out = subprocess.run([sys.executable, "-c", "import sys; from costlab.config import load_config; "
                          "print(load_config(sys.argv[1]).cost_models[0].params)", str(config({"alpha": 0.5}))],
                         check=True, capture_output=True, text=True, timeout=120).stdout
    assert out.strip() == "{'alpha': 0.5}"


def test_a_saved_plugin_model_loads_by_path_as_costlab_evaluate_loads_it(example_plugin, tmp_path):
    """costlab train saves with save_model: a plug-in that writes only its own files gets a
    costlab-model.json naming it, so load_model (costlab evaluate, pretrained:) finds its class.
    In a fresh process, whose registry finds the installed plug-in."""
    script = """
import sys
import numpy as np
from costlab.models import make_model
from costlab.models._common import load_model, save_model
from costlab.testing.synthetic import make_problem

data = make_problem("dense", n_groups=2, per_group=16, seed=0)
model = make_model("example-linear", {"alpha": 0.5})[0].fit(data.features, data.latency_s, data.groups)
save_model(model, sys.argv[1])
loaded = load_model(sys.argv[1])
assert type(loaded).__name__ == "ExampleLinearModel" and loaded.alpha == 0.5
assert np.array_equal(loaded.predict(data.features), model.predict(data.features))
print("loaded")
"""
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "m")], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "loaded", done.stdout + done.stderr
    assert (tmp_path / "m" / "costlab-model.json").is_file() and (tmp_path / "m" / "model.json").is_file()
