"""Named, parameterized workloads defined in TE, and loading of a user's own file."""

from costlab.workloads._registry import (
    WORKLOADS,
    build_workload,
    load_workload_file,
    register_workload,
    structural_hash,
    workload_key,
    workload_params,
)
# Importing these modules registers the built-in workloads.
from costlab.workloads import ops as _ops  # noqa: F401,E402
from costlab.workloads import conv as _conv  # noqa: F401,E402
from costlab.workloads import nn as _nn  # noqa: F401,E402

__all__ = [
    "WORKLOADS",
    "build_workload",
    "load_workload_file",
    "register_workload",
    "structural_hash",
    "workload_key",
    "workload_params",
]
