"""Shared test set-up.

TVM's tensor-intrinsic import is slow once torch and mlflow are loaded; doing it
first, the fast way, keeps every test that creates a TuneContext quick.
"""

from costlab._tvm import import_tensor_intrinsics

import_tensor_intrinsics()


import functools  # noqa: E402
import importlib  # noqa: E402
import importlib.metadata  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

PLUGIN_DIR = Path(__file__).resolve().parent / "plugins" / "costlab_example_plugin"
PLUGIN_DIST = "costlab-example-plugin"


@pytest.fixture(scope="session")
def example_plugin(tmp_path_factory):
    """Install the example plug-in package (tests/plugins) into this environment once.

    It is a real third-party package with a ``costlab.models`` entry point, built
    from a copy so that setuptools' build/ and egg-info stay out of the source tree.
    Installed by the tests, it is uninstalled after them, so it does not stay in the
    environment's model list (``costlab models``, ``--models all``).
    """
    installed_here = False
    try:
        importlib.metadata.version(PLUGIN_DIST)
    except importlib.metadata.PackageNotFoundError:
        source = tmp_path_factory.mktemp("plugin") / PLUGIN_DIR.name
        shutil.copytree(PLUGIN_DIR, source, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", str(source)],
            check=True, capture_output=True, text=True, timeout=300,
        )
        importlib.invalidate_caches()
        installed_here = True
    yield importlib.import_module("costlab_example_plugin")
    if installed_here:
        subprocess.run([sys.executable, "-m", "pip", "uninstall", "--quiet", "--yes", PLUGIN_DIST],
                       check=True, capture_output=True, text=True, timeout=300)


def pytest_collection_modifyitems(items):
    """The files with slow tests first (each file's tests kept together and in order): on two
    workers, a long end-to-end file started last would run on alone."""
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_files)


def pytest_xdist_make_scheduler(config, log):
    """Under pytest-xdist, send each test file to one worker, so that its module-scoped fixtures
    (a tuned run, a farm) are built once, and the files that use the example plug-in to the same
    worker: it is installed into the environment and removed after them. Files go out in the
    order collected (slow ones first), not by their number of tests."""
    from xdist.scheduler import LoadScopeScheduling

    if config.getvalue("dist") != "load":  # a --dist mode asked for on the command line
        return None
    root = config.rootpath
    config.option.loadscopereorder = False

    class ByFile(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            file = nodeid.split("::", 1)[0]
            return "example-plugin" if _uses_example_plugin(root / file) else file

    return ByFile(config, log)


@functools.cache
def _uses_example_plugin(path: Path) -> bool:
    return path.suffix == ".py" and "example_plugin" in path.read_text()
