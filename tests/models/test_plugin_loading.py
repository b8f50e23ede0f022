"""A broken or clashing plug-in is reported by name and does not hide the others.

The plug-ins here are real distributions (a ``*.dist-info`` with ``entry_points.txt``) on
``sys.path``, found by ``importlib.metadata`` as pip-installed ones are.
"""

import os
import subprocess
import sys

import pytest
import yaml

from costlab.errors import CostlabError
from costlab.registry import Registry

GOOD_MODULE = "costlab_test_goodplug"


def _distribution(root, name: str, group: str, entries: dict[str, str]) -> None:
    info = root / f"{name}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in entries.items()))


def _plugins(root, group: str) -> None:
    """A broken plug-in sorted first, a working one, and one that reuses a built-in's name."""
    (root / f"{GOOD_MODULE}.py").write_text("from costlab.models import CostModel\n\n\n"
                                            "class Model(CostModel):\n    name = 'zzz-good'\n")
    _distribution(root, "aaa-broken-plugin", group, {"aaa-broken": "costlab_test_no_such_module:Model"})
    _distribution(root, "zzz-good-plugin", group, {"zzz-good": f"{GOOD_MODULE}:Model", "xgb": f"{GOOD_MODULE}:Model"})


def test_a_broken_plugin_is_reported_by_name_and_hides_nothing(tmp_path, monkeypatch):
    group = "costlab.test-plugin-loading"
    _plugins(tmp_path, group)
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = Registry("cost model", entry_point_group=group)

    @registry.register("xgb")
    class BuiltIn:
        pass

    with pytest.warns(UserWarning, match=r"plug-in 'xgb' .* is ignored: costlab already has a cost model of that name"):
        names = registry.names()
    assert names == ["xgb", "zzz-good"]
    assert registry.factory("xgb") is BuiltIn
    assert registry.factory("zzz-good").__module__ == GOOD_MODULE
    with pytest.raises(CostlabError, match=r"plug-in 'aaa-broken' .*\(costlab_test_no_such_module:Model\) failed to "
                                           r"load: ModuleNotFoundError: No module named 'costlab_test_no_such_module'"):
        registry.factory("aaa-broken")
    with pytest.raises(CostlabError, match=r"unknown cost model 'nope'; valid names: xgb, zzz-good; "
                                           r"plug-ins that failed to load: aaa-broken$"):
        registry.factory("nope")
    assert list(registry.load_failures()) == ["aaa-broken"]


def test_cli_names_the_broken_plugin(tmp_path):
    """In a fresh process, as a user meets it: ``costlab models`` still lists every model and says
    which plug-in failed and why; a config naming it is refused at load, naming the field."""
    (tmp_path / "site").mkdir()
    _plugins(tmp_path / "site", "costlab.models")
    env = {**os.environ, "COLUMNS": "400", "PYTHONPATH": str(tmp_path / "site")}
    listed = subprocess.run([sys.executable, "-m", "costlab", "models"], capture_output=True, text=True,
                            timeout=120, env=env)
    assert listed.returncode == 0, listed.stderr
    out = " ".join(listed.stdout.split())
    assert "zzz-good" in out and "lgbm" in out and "aaa-broken" not in out
    assert "tvm-xgb's hyper-parameters apply to costlab train; in a tuning config it is TVM's own XGBModel" in out
    out = " ".join(listed.stderr.split())  # a warning, on stderr
    # one line per warning, not Python's file:line and the costlab source line that raised it
    assert listed.stderr.startswith("warning: plug-in 'xgb' ") and "UserWarning" not in out, out
    assert "warnings.warn(" not in out, out
    assert ("plug-in 'aaa-broken' of entry-point group 'costlab.models' (costlab_test_no_such_module:Model) failed "
            "to load: ModuleNotFoundError: No module named 'costlab_test_no_such_module'") in out, out

    config = tmp_path / "cfg.yaml"
    config.write_text(yaml.safe_dump({"name": "t", "workloads": [{"name": "gemm", "params": {"M": 64}}],
                                      "cost_models": [{"name": "aaa-broken"}],
                                      "mlflow": {"tracking_uri": f"sqlite:///{tmp_path}/mlflow.db"}}))
    refused = subprocess.run([sys.executable, "-m", "costlab", "run", str(config), "--dry-run"],
                             capture_output=True, text=True, timeout=120, env=env)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    message = " ".join((refused.stdout + refused.stderr).split())
    assert "cfg.yaml: field cost_models.0.name: plug-in 'aaa-broken'" in message, message
    assert "failed to load: ModuleNotFoundError" in message, message


def _plugin_module(root, monkeypatch, module: str, group: str, source: str, entries: dict[str, str]) -> None:
    """A one-module plug-in distribution on ``sys.path``: ``entries`` maps entry-point names to
    the module's attributes."""
    (root / f"{module}.py").write_text(source)
    _distribution(root, module.replace("_", "-"), group, {k: f"{module}:{v}" for k, v in entries.items()})
    monkeypatch.syspath_prepend(str(root))


def test_a_plugin_that_names_no_subclass_of_the_base_fails_to_load_and_says_what_it_named(tmp_path, monkeypatch):
    group = "costlab.test-plugin-base"
    _plugin_module(tmp_path, monkeypatch, "costlab_test_notamodel", group,
                   "class Base:\n    pass\n\nclass Good(Base):\n    pass\n\nclass Stranger:\n    pass\n\n"
                   "def make():\n    return Good()\n",
                   {"good": "Good", "stranger": "Stranger", "function": "make"})
    import costlab_test_notamodel

    registry = Registry("cost model", entry_point_group=group, base=costlab_test_notamodel.Base)
    assert registry.names() == ["good"]
    failures = registry.load_failures()
    assert failures["stranger"].endswith("(costlab_test_notamodel:Stranger) failed to load: it names class Stranger, "
                                         "not a subclass of Base")
    assert failures["function"].endswith("failed to load: it names a function, not a subclass of Base")
    with pytest.raises(CostlabError, match="plug-in 'function' .* it names a function, not a subclass of Base"):
        registry.factory("function")


def test_a_plugin_whose_class_has_another_name_fails_to_load_and_says_which(tmp_path, monkeypatch):
    """It trained and saved under its class's name ("ridge"), which costlab could not load back."""
    from costlab.models import CostModel

    group = "costlab.test-plugin-names"
    _plugin_module(tmp_path, monkeypatch, "costlab_test_names", group,
                   "from costlab.models import CostModel\n\n"
                   "class Ridge(CostModel):\n    name = 'ridge'\n\nclass Unnamed(CostModel):\n    pass\n",
                   {"mylab-ridge": "Ridge", "mylab-unnamed": "Unnamed"})
    registry = Registry("cost model", entry_point_group=group, base=CostModel)
    assert registry.names() == []
    failures = registry.load_failures()
    assert failures["mylab-ridge"].endswith("failed to load: its class's name is 'ridge', not its entry-point "
                                            "name: a model it saves would be unknown to costlab; set name = "
                                            "'mylab-ridge' in class Ridge")
    assert "its class's name is ''" in failures["mylab-unnamed"]
