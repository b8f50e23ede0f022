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
