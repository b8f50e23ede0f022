"""File and directory names made from workload keys and other labels."""

from __future__ import annotations

SAFE_PUNCTUATION = "-_.=,"


def safe_file_name(label: str) -> str:
    """``label`` with every character other than letters, digits and ``-_.=,`` replaced by ``_``:
    ``gemm(M=128,N=128)`` becomes ``gemm_M=128,N=128_``. Tuning databases, plots and reports
    are named with it, so a name maps to the same file everywhere."""
    return "".join(c if c.isalnum() or c in SAFE_PUNCTUATION else "_" for c in label)
