"""Every registered cost model (plug-ins included) passes the shared conformance suite."""

from functools import partial

from costlab.models import MODELS
from costlab.testing.model_checks import parametrize_with_checks

# Smaller training budgets than the defaults keep this file within the test-time budget on
# two shared cores; the checks themselves are the same.
LIGHTER = {
    "gnn": {"max_epochs": 20},
    "ensemble": {"n_members": 3},
}


def _factory(name: str):
    cls = MODELS.factory(name)
    return partial(cls, **LIGHTER[name]) if name in LIGHTER else cls


@parametrize_with_checks({name: _factory(name) for name in MODELS.names()})
def test_conformance(model_factory, check):
    check(model_factory)
