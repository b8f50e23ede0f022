"""Hostile configs: every malformed config gives a clean CostlabError, never a crash.

Hypothesis generates configs by breaking a good one: wrong types, unknown keys,
out-of-range numbers, bad names, random YAML values in every field.
"""

from __future__ import annotations

import copy

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from costlab.config import config_from_dict
from costlab.errors import CostlabError

GOOD = {
    "name": "fuzz",
    "target": "cpu",
    "workloads": [{"name": "gemm", "params": {"M": 64, "N": 64, "K": 64}}],
    "cost_models": ["tvm-xgb", {"name": "random", "params": {"seed": 1}}],
    "seeds": [0, 1],
    "search": {"trials": 16, "trials_per_iter": 8, "population_size": 64, "eps_greedy": 0.05},
    "runner": {"kind": "local"},
    "measure": {"number": 3, "repeat": 1, "min_repeat_ms": 10},
    "mlflow": {"tracking_uri": "sqlite:///mlflow.db"},
}

PATHS = [
    ("name",), ("target",), ("workloads",), ("workloads", 0), ("workloads", 0, "name"),
    ("workloads", 0, "params"), ("workloads", 0, "params", "M"), ("cost_models",), ("cost_models", 0),
    ("cost_models", 1, "params"), ("cost_models", 1, "name"), ("seeds",), ("seeds", 0), ("search",),
    ("search", "trials"), ("search", "trials_per_iter"), ("search", "eps_greedy"), ("runner",),
    ("runner", "kind"), ("measure", "number"), ("mlflow",), ("mlflow", "tracking_uri"),
]

junk = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=True)
    | st.text(max_size=12),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=6,
)

# Values that are valid for the field they replace are fine too: the property is
# "a clean error or a valid config", never a crash.
breakers = st.one_of(
    st.tuples(st.sampled_from(PATHS), junk).map(lambda t: ("set", t)),
    st.sampled_from(PATHS).map(lambda p: ("delete", p)),
    st.tuples(st.text(min_size=1, max_size=8), junk).map(lambda t: ("extra", t)),
)


def _apply(data, op):
    kind, arg = op
    if kind == "extra":
        key, value = arg
        data[key] = value
        return data
    path, value = (arg if kind == "set" else (arg, None))
    node = data
    for part in path[:-1]:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return data
    try:
        if kind == "set":
            node[path[-1]] = value
        elif isinstance(node, dict):
            node.pop(path[-1], None)
        elif isinstance(node, list) and isinstance(path[-1], int) and path[-1] < len(node):
            node.pop(path[-1])
    except (TypeError, IndexError):
        pass
    return data


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(breakers, min_size=1, max_size=3))
def test_malformed_configs_give_a_clean_error(ops):
    data = copy.deepcopy(GOOD)
    for op in ops:
        data = _apply(data, op)
    try:
        config_from_dict(data, "fuzz.yaml")
    except CostlabError as err:
        message = str(err)
        assert message.startswith("fuzz.yaml") or "fuzz.yaml" in message, message
        assert "Traceback" not in message


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=200))
def test_random_yaml_text_gives_a_clean_error(tmp_path_factory, text):
    from costlab.config import load_config

    path = tmp_path_factory.mktemp("fuzz") / "cfg.yaml"
    path.write_text(text)
    try:
        load_config(path)
    except CostlabError as err:
        assert str(path) in str(err)


def test_the_good_config_is_valid():
    cfg = config_from_dict(yaml.safe_load(yaml.safe_dump(GOOD)), "fuzz.yaml")
    assert cfg.search.trials == 16
