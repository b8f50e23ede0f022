"""A third-party model installed as a package is found by name and passes the suite."""

import importlib
import importlib.metadata
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from costlab.testing.model_checks import run_checks

PLUGIN_DIR = Path(__file__).resolve().parents[1] / "plugins" / "costlab_example_plugin"
DIST = "costlab-example-plugin"


@pytest.fixture(scope="module")
def plugin(tmp_path_factory):
    """Install the example plug-in into the current environment once (no deps, no build isolation).

    It is built from a copy, so that setuptools' build/ and egg-info stay out of the source tree.
    """
    try:
        importlib.metadata.version(DIST)
    except importlib.metadata.PackageNotFoundError:
        source = tmp_path_factory.mktemp("plugin") / PLUGIN_DIR.name
        shutil.copytree(PLUGIN_DIR, source, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", str(source)],
            check=True, capture_output=True, text=True, timeout=300,
        )
        importlib.invalidate_caches()
    return importlib.import_module("costlab_example_plugin")


def test_plugin_is_listed_in_a_fresh_process(plugin):
    out = subprocess.run(
        [sys.executable, "-c", "import costlab.models as m; print(m.available())"],
        check=True, capture_output=True, text=True, timeout=120,
    ).stdout
    assert "'example-linear'" in out, out


def test_plugin_passes_the_conformance_suite(plugin):
    failures = {name: err for name, err in run_checks(plugin.ExampleLinearModel).items() if err is not None}
    assert not failures, "\n".join(f"{name}: {err!r}" for name, err in failures.items())
