"""Shared test suites that plug-in authors reuse (as scikit-learn's ``check_estimator``)."""

from costlab.testing.model_checks import ALL_CHECKS, checks_for, parametrize_with_checks, run_checks
from costlab.testing.synthetic import feature_kind, make_problem, pairwise_accuracy, permute_nodes

__all__ = [
    "ALL_CHECKS",
    "checks_for",
    "feature_kind",
    "make_problem",
    "pairwise_accuracy",
    "parametrize_with_checks",
    "permute_nodes",
    "run_checks",
]
