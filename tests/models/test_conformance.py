"""Every registered cost model (plug-ins included) passes the shared conformance suite."""

from costlab.models import MODELS
from costlab.testing.model_checks import parametrize_with_checks


@parametrize_with_checks({name: MODELS.factory(name) for name in MODELS.names()})
def test_conformance(model_factory, check):
    check(model_factory)
