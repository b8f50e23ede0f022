"""Training targets and input checks shared by the builtin models."""

import numpy as np
import pytest

from costlab.errors import CostlabError
from costlab.models._common import (
    failed_mask,
    group_codes,
    normalized_throughput,
    relevance_levels,
)
from costlab.testing.synthetic import make_problem

LAT = np.array([2e-3, 1e-3, np.inf, 4e-3, 1e10, np.nan, 5e-3, np.inf])
GROUPS = np.array(["a", "a", "a", "a", "a", "b", "c", "c"])


def test_failed_mask_covers_inf_nan_and_metaschedule_1e10():
    assert failed_mask(LAT).tolist() == [False, False, True, False, True, True, False, True]
    assert failed_mask(np.array([0.0, -1.0])).all()


def test_normalized_throughput_is_min_over_latency_and_zero_for_failures():
    y = normalized_throughput(LAT, GROUPS)
    np.testing.assert_allclose(y, [0.5, 1.0, 0.0, 0.25, 0.0, 0.0, 1.0, 0.0])


def test_relevance_levels_put_failures_at_zero_and_the_best_at_the_top():
    rel = relevance_levels(LAT, GROUPS)
    assert rel.dtype == np.int64
    assert rel[[2, 4, 5, 7]].tolist() == [0, 0, 0, 0]  # failures, and group b has no success
    assert rel[1] == 30 and rel[6] == 30  # fastest of a group, and a lone success
    assert rel[3] == 1 and 1 < rel[0] < 30


def test_group_codes_follow_first_appearance():
    codes, n = group_codes(np.array(["z", "a", "z", "m"]))
    assert n == 3 and codes.tolist() == [0, 1, 0, 2]



@pytest.mark.parametrize("name", ["xgb", "lgbm", "tvm-xgb"])
def test_dense_models_refuse_graph_features_and_bad_lengths(name):
    from costlab.models import get

    graphs = make_problem("graph", n_groups=1, per_group=4)
    with pytest.raises(CostlabError, match="needs dense features"):
        get(name)().fit(graphs.features, graphs.latency_s, graphs.groups)
    dense = make_problem("dense", n_groups=1, per_group=4)
    with pytest.raises(CostlabError, match="must be equal"):
        get(name)().fit(dense.features, dense.latency_s[:3], dense.groups)
