"""Workarounds for TVM 0.27 behaviour that costlab depends on.

``import tvm.s_tir.tensor_intrin`` (which ``TuneContext`` triggers) parses hundreds of
TVMScript functions, and each parse calls ``inspect.stack()``. For frames without a
source file on disk (the import machinery's), ``inspect`` scans all of
``sys.modules``: with torch, mlflow and pandas loaded, the import took minutes
instead of seconds. :func:`import_tensor_intrinsics` runs that import with a
``stack()`` that reads only the frames and their line, which is all TVM uses.
"""

from __future__ import annotations

import contextlib
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


_INTRINSICS = "tvm.s_tir.tensor_intrin"
# the CPU modules of the package, imported by its __init__ when TVM has LLVM (as TVM 0.27 lists them)
_CPU_INTRINSIC_MODULES = ("arm_cpu", "x86", "rocm", "hexagon", "riscv_cpu")


def import_tensor_intrinsics(cuda: bool = True) -> None:
    """Import (register) TVM's tensor intrinsics quickly, whatever else is loaded.

    ``cuda=False`` registers the CPU ones only: the CUDA module is about 70% of the
    import's seconds, and a CPU target's schedule rules and traces name none of its
    intrinsics. The package is then put in ``sys.modules`` without running its
    ``__init__`` (which would import them all), so TVM's own ``import
    tvm.s_tir.tensor_intrin`` in ``TuneContext`` finds it and does nothing; a later call
    with ``cuda=True`` adds the CUDA ones.
    """
    import importlib
    import importlib.util

    wanted = [f"{_INTRINSICS}.{name}" for name in _CPU_INTRINSIC_MODULES if _llvm_enabled()]
    if cuda:
        wanted.append(f"{_INTRINSICS}.cuda")
    if all(name in sys.modules for name in wanted):
        return
    original = inspect.stack
    inspect.stack = _fast_stack
    try:
        if _INTRINSICS not in sys.modules:
            import tvm.s_tir

            package = importlib.util.module_from_spec(importlib.util.find_spec(_INTRINSICS))
            sys.modules[_INTRINSICS] = package  # registered, its __init__ not run
            tvm.s_tir.tensor_intrin = package
        for name in wanted:
            importlib.import_module(name)
    finally:
        inspect.stack = original


def _llvm_enabled() -> bool:
    from tvm.runtime import enabled

    return bool(enabled("llvm"))


@contextlib.contextmanager
def unnamed_log_handlers_detached():
    """Detach the unnamed handlers of MetaSchedule's logger for a ``tune_tir`` call, and put them
    back after it.

    ``tune_tir`` configures its loggers with ``logging.config.dictConfig``, listing every handler
    of ``tvm.s_tir.meta_schedule`` by name, and fails on a handler without one
    (``'NoneType' object has no attribute 'format'``). pytest 9 attaches its unnamed log-capture
    handlers to that logger once a first session has made it non-propagating, so a second
    session in one process failed under pytest.
    """
    import logging

    tvm_logger = logging.getLogger("tvm.s_tir.meta_schedule")
    unnamed = [h for h in tvm_logger.handlers if h.get_name() is None]
    for handler in unnamed:
        tvm_logger.removeHandler(handler)
    try:
        yield
    finally:
        for handler in unnamed:
            tvm_logger.addHandler(handler)
