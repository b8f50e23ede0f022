"""Workarounds for TVM 0.27 behaviour that costlab depends on.

``import tvm.s_tir.tensor_intrin`` (which ``TuneContext`` triggers) parses hundreds of
TVMScript functions, and each parse calls ``inspect.stack()``. For frames without a
source file on disk (the import machinery's), ``inspect`` scans all of
``sys.modules``: with torch, mlflow and pandas loaded, the import took minutes
instead of seconds. :func:`import_tensor_intrinsics` runs that import with a
``stack()`` that reads only the frames and their line, which is all TVM uses.
"""

from __future__ import annotations

import inspect
import linecache
import sys


def _fast_stack(context: int = 1) -> list[inspect.FrameInfo]:
    frame = sys._getframe(1)
    out = []
    while frame is not None:
        code = frame.f_code
        line = linecache.getline(code.co_filename, frame.f_lineno) if context > 0 else ""
        out.append(inspect.FrameInfo(frame, code.co_filename, frame.f_lineno, code.co_name,
                                     [line] if line else None, 0))
        frame = frame.f_back
    return out


def import_tensor_intrinsics() -> None:
    """Import ``tvm.s_tir.tensor_intrin`` quickly, whatever else is loaded."""
    if "tvm.s_tir.tensor_intrin" in sys.modules:
        return
    original = inspect.stack
    inspect.stack = _fast_stack
    try:
        import tvm.s_tir.tensor_intrin  # noqa: F401
    finally:
        inspect.stack = original
