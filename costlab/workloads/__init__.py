"""Named, parameterized workloads defined in TE, and loading of a user's own file."""

from costlab.workloads._registry import (
    WORKLOADS,
    build_workload,
    load_workload_file,
    register_workload,
    workload_key,
    workload_params,
)
from costlab.workloads import ops as _ops  # noqa: F401  (registers the built-in workloads)

__all__ = [
    "WORKLOADS",
    "build_workload",
    "load_workload_file",
    "register_workload",
    "workload_key",
    "workload_params",
]
