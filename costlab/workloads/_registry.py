"""The registry of named, parameterized workloads, and loading a user's own file.

A workload factory takes keyword parameters and returns a TE-defined
``tvm.IRModule`` with one PrimFunc named ``main``. Register one with::

    from costlab.workloads import register_workload

    @register_workload("my_op")
    def my_op(n: int = 128, dtype: str = "float32"):
        ...  # build with tvm.te
        return tvm.IRModule({"main": te.create_prim_func([...])})

A user file (``workload_files:`` in a config) is plain Python that calls
``register_workload``; costlab imports it before it validates workload names.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import math
import re
import sys
from pathlib import Path
from typing import Any, Callable

from costlab.errors import CostlabError
from costlab.registry import NameTaken, Registry

WORKLOADS: Registry[Callable[..., Any]] = Registry("workload")


def register_workload(name: str):
    """Decorator: register a factory ``(**params) -> tvm.IRModule`` under ``name``."""
    return WORKLOADS.register(name)


MAX_EXTENT = 2**31 - 1  # TE shapes are int32: a larger one fails deep in TVM


def _check_value(name: str, key: str, value, default) -> None:
    """A parameter must have its default's type: integer parameters are whole numbers, at
    least 1 for a size or stride (a default of 1 or more), at least 0 for a padding (``pad*``)
    or a parameter whose default is 0; none over ``MAX_EXTENT``. TVM crashes, rather than
    raises, on some bad shapes such as None, and a stride of 0 divides by zero."""
    def bad(expected: str) -> CostlabError:
        return CostlabError(f"workload {name!r}: parameter {key!r} must be {expected} (value {value!r})")

    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise bad("true or false")
    elif isinstance(default, int):
        least = 0 if key.lower().startswith("pad") or default < 1 else 1
        if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= MAX_EXTENT:
            raise bad(f"a whole number from {least} to {MAX_EXTENT}")
    elif isinstance(default, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise bad("a finite number")
    elif isinstance(default, str):
        if not isinstance(value, str):
            raise bad("a string")
    elif default is None and value is not None and not isinstance(value, (str, int, float)):
        raise bad("a string, a number or null")


def workload_params(name: str, params: dict | None) -> dict:
    """The full parameters of a workload: its defaults overridden by ``params``.

    Raises CostlabError naming an unknown parameter.
    """
    factory = WORKLOADS.factory(name)
    sig = inspect.signature(factory)
    full = {k: p.default for k, p in sig.parameters.items() if p.default is not inspect.Parameter.empty}
    for key, value in (params or {}).items():
        if key not in sig.parameters:
            raise CostlabError(
                f"workload {name!r} has no parameter {key!r} (value {value!r}); "
                f"its parameters: {', '.join(sig.parameters)}"
            )
        _check_value(name, key, value, sig.parameters[key].default)
        full[key] = value
    missing = [k for k in sig.parameters if k not in full]
    if missing:
        raise CostlabError(f"workload {name!r} needs parameter(s) {', '.join(missing)}")
    return full


def workload_key(name: str, params: dict | None) -> str:
    """A stable, readable key such as ``gemm(M=128,N=128,K=128,dtype=float32)``."""
    full = workload_params(name, params)
    inner = ",".join(f"{k}={json.dumps(v) if not isinstance(v, str) else v}"
                     for k, v in full.items() if v is not None)
    return f"{name}({inner})"


def build_workload(name: str, params: dict | None = None):
    """The IRModule of workload ``name`` with ``params``; a clear error if building fails."""
    full = workload_params(name, params)
    try:
        mod = WORKLOADS.factory(name)(**full)
    except CostlabError:
        raise
    except Exception as err:
        raise CostlabError(f"workload {name!r} with params {full} failed to build: {err}") from err
    import tvm

    if not (isinstance(mod, tvm.IRModule) and "main" in [gv.name_hint for gv in mod.get_global_vars()]):
        raise CostlabError(f"workload {name!r} with params {full}: its factory returned {type(mod).__name__}, "
                           f"not an IRModule with a 'main' function (e.g. tvm.IRModule({{'main': te.create_prim_func(...)}}))")
    from tvm.s_tir.meta_schedule.arg_info import ArgInfo

    main = mod["main"]
    try:
        args = ArgInfo.from_prim_func(main)  # static shapes (MetaSchedule tunes no other)
    except Exception:  # noqa: BLE001  (a symbolic shape: TVM's own error comes where it matters)
        args = []
    for param, arg in zip(main.params, args):  # a size < 1 (conv2d's P, say) fails mid-run
        dims = [int(d) for d in arg.shape]
        if any(d < 1 for d in dims):
            raise CostlabError(f"workload {name!r} with params {full}: tensor {param.name} would have shape "
                               f"{dims}; every extent must be at least 1")
        if not _compilable_dtype(str(arg.dtype)):  # TVM builds float33 here; every trial then fails to compile
            raise CostlabError(f"workload {name!r} with params {full}: tensor {param.name} has dtype "
                               f"'{arg.dtype}', which no target compiles (floats: 16, 32 or 64 bits, or bfloat16; "
                               f"ints: 1, 4, 8, 16, 32 or 64)")
    bools = [param.name for param, arg in zip(main.params, args) if str(arg.dtype) == "bool"]
    if bools:  # a mask builds; arithmetic on bool passes here and fails every trial's build
        try:
            tvm.tirx.build(mod, target="llvm")  # unscheduled: milliseconds
        except Exception as err:  # noqa: BLE001  (TVM's own error, named below)
            last = str(err).strip().splitlines()[-1] if str(err).strip() else type(err).__name__
            raise CostlabError(f"workload {name!r} with params {full}: tensor(s) {', '.join(bools)} are bool, and "
                               f"its kernel does not compile even unscheduled (arithmetic on bool, say; TVM: "
                               f"{last[:200]})") from None
    return mod


_SIZED_DTYPE = re.compile(r"(float|bfloat|int|uint)(\d+)")
_COMPILABLE_BITS = {"float": {16, 32, 64}, "bfloat": {16}, "int": {1, 4, 8, 16, 32, 64}, "uint": {1, 4, 8, 16, 32, 64}}


def _compilable_dtype(dtype: str) -> bool:
    """False for a scalar dtype of a size no code generator has (``float33``); other names
    (``bool``, ``float8_e4m3fn``, vector lanes) are left to TVM."""
    sized = _SIZED_DTYPE.fullmatch(dtype)
    return sized is None or int(sized.group(2)) in _COMPILABLE_BITS[sized.group(1)]


def structural_hash(mod) -> str:
    """``mod``'s structural hash as a MetaSchedule database writes it (the first field of
    ``Workload.as_json()``): a dataset's ``workload_hash``."""
    from tvm.s_tir import meta_schedule as ms

    return str(ms.database.Workload(mod).as_json()[0])


def load_workload_file(path: str | Path) -> list[str]:
    """Import a user's Python file that registers workloads; return the names it added."""
    path = Path(path)
    if not path.is_file():
        raise CostlabError(f"workload file {path} " + ("is a directory, not a Python file" if path.is_dir()
                                                        else "does not exist"))
    module_name = f"costlab_user_workloads_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise CostlabError(f"workload file {path} is not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    before = WORKLOADS.factories()
    try:
        spec.loader.exec_module(module)
    except Exception as err:
        del sys.modules[module_name]
        WORKLOADS.restore(before)
        if isinstance(err, NameTaken):  # another file's or a built-in's name (the same file loaded again may)
            raise CostlabError(f"workload file {path} registers a name that is taken: {err.name!r} (from "
                               f"{_owner(err.holder_module)}); give its workloads other names") from None
        raise CostlabError(f"workload file {path} raised {type(err).__name__}: {err}") from err
    defined = [n for n in WORKLOADS.names() if getattr(WORKLOADS.factory(n), "__module__", "") == module_name]
    if not defined:
        raise CostlabError(
            f"workload file {path} defines no workload; decorate a factory with "
            f"@costlab.workloads.register_workload('name')"
        )
    return defined


def _owner(module_name: str) -> str:
    """Where a registered workload came from, in words."""
    if module_name.startswith("costlab_user_workloads_"):
        return "another workload file"
    return "costlab's built-in workloads" if module_name.startswith("costlab.") else f"module {module_name}"
