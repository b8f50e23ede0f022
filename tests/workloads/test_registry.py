"""Workload keys, parameter errors, and loading a user's own workload file."""

from __future__ import annotations

import inspect
import re
import textwrap
from pathlib import Path

import numpy as np
import pytest
import tvm
from tvm.target import Target

from costlab.errors import CostlabError
from costlab.workloads import WORKLOADS, build_workload, load_workload_file, workload_key, workload_params

EXAMPLE_FILE = Path(__file__).resolve().parents[2] / "experiments" / "workloads" / "my_op.py"


@pytest.fixture
def restore_registry():
    """Undo any registration a test makes, so user workloads do not leak into other tests."""
    saved = WORKLOADS.factories()
    yield
    WORKLOADS.restore(saved)


def test_builtin_names():
    expected = {
        "gemm", "batch_matmul", "conv2d_nchw", "conv2d_nhwc", "rmsnorm", "layernorm",
        "softmax", "swiglu", "swiglu_merged", "attention", "reduce_sum",
    }
    assert expected <= set(WORKLOADS.names())


def test_every_param_has_a_default_and_builds_main():
    for name in ["gemm", "reduce_sum"]:  # cheap ones; all are built in test_numerics
        mod = build_workload(name)
        assert isinstance(mod, tvm.IRModule)
        assert [gv.name_hint for gv in mod.get_global_vars()] == ["main"]
    for name in WORKLOADS.names():
        sig = inspect.signature(WORKLOADS.factory(name))
        defaults = {k: p.default for k, p in sig.parameters.items()}
        assert inspect.Parameter.empty not in defaults.values(), name  # every parameter has a default
        # raises if any parameter lacks a default; otherwise it is exactly the factory's defaults, in order
        full = workload_params(name, None)
        assert list(full) == list(sig.parameters), name
        assert full == defaults, name


def test_workload_key_is_stable():
    assert workload_key("gemm", {"M": 64, "N": 32, "K": 16}) == "gemm(M=64,N=32,K=16,dtype=float32)"
    assert workload_key("gemm", {"dtype": "float16", "out_dtype": "float32"}) == (
        "gemm(M=128,N=128,K=128,dtype=float16,out_dtype=float32)"
    )
    assert workload_key("rmsnorm", None) == "rmsnorm(M=128,N=256,eps=1e-05,dtype=float32)"
    # Parameter order in the request and spelling out defaults do not change the key.
    assert workload_key("gemm", {"K": 16, "M": 64, "N": 32}) == workload_key(
        "gemm", {"M": 64, "N": 32, "K": 16, "dtype": "float32", "out_dtype": None}
    )
    assert workload_key("gemm", {"M": 64}) != workload_key("gemm", {"M": 65})


def test_unknown_parameter_is_named():
    with pytest.raises(CostlabError, match=r"'gemm' has no parameter 'L'") as info:
        workload_params("gemm", {"M": 8, "L": 3})
    assert "M, N, K, dtype, out_dtype" in str(info.value)
    with pytest.raises(CostlabError, match="'Z'"):
        build_workload("softmax", {"Z": 1})


@pytest.mark.parametrize("name, params, match", [
    ("gemm", {"M": None}, "'M' must be a whole number from 1 to 2147483647 (value None)"),  # TVM segfaulted on this
    ("gemm", {"M": 0}, "'M' must be a whole number from 1 to 2147483647 (value 0)"),
    ("gemm", {"M": 2**63}, "'M' must be a whole number from 1 to 2147483647 (value 9223372036854775808)"),
    ("conv2d_nchw", {"stride": 0}, "'stride' must be a whole number from 1"),  # it divided by zero
    ("conv2d_nchw", {"padding": -1}, "'padding' must be a whole number from 0 to 2147483647 (value -1)"),
    ("layernorm", {"dtype": "int32"}, "'dtype' must be a floating-point type such as float32, float16 or bfloat16 "
                                      "(value 'int32')"),  # built, and every trial failed to compile: no int sqrt
    ("softmax", {"dtype": "uint8"}, "'dtype' must be a floating-point type"),
    ("attention", {"dtype": "bool"}, "'dtype' must be a floating-point type"),
    ("gemm", {"N": -4}, "'N' must be a whole number"),
    ("gemm", {"K": 2.0}, "'K' must be a whole number"),
    ("gemm", {"K": True}, "'K' must be a whole number"),
    ("gemm", {"dtype": 32}, "'dtype' must be a string"),
    ("rmsnorm", {"eps": float("nan")}, "'eps' must be a finite number"),
    ("gemm", {"out_dtype": [1]}, "'out_dtype' must be a string, a number or null"),
])
def test_parameter_of_the_wrong_type_is_a_clean_error(name, params, match):
    with pytest.raises(CostlabError, match=match.replace("(", r"\(").replace(")", r"\)")):
        build_workload(name, params)


def test_zero_padding_is_valid():
    params = {"N": 2, "C": 3, "H": 9, "W": 8, "K": 4, "R": 3, "S": 2, "stride": 2, "padding": 0}
    mod = build_workload("conv2d_nchw", params)
    n, c, h, w, k, r, s, stride = (params[key] for key in ("N", "C", "H", "W", "K", "R", "S", "stride"))
    # no padding: the output is (H - R) // stride + 1 high and (W - S) // stride + 1 wide
    want_shape = [n, k, (h - r) // stride + 1, (w - s) // stride + 1]
    main = mod["main"]
    shapes = [[int(d) for d in p.shape] for p in main.params]
    assert shapes == [[n, c, h, w], [k, c, r, s], want_shape]
    # numerically: a valid (unpadded) strided convolution, in plain numpy loops
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, c, h, w)).astype("float32")
    wt = rng.standard_normal((k, c, r, s)).astype("float32")
    want = np.zeros(want_shape)
    for p in range(want_shape[2]):
        for q in range(want_shape[3]):
            window = x[:, :, p * stride : p * stride + r, q * stride : q * stride + s].astype(np.float64)
            want[:, :, p, q] = np.einsum("ncrs,kcrs->nk", window, wt.astype(np.float64))
    lib = tvm.compile(mod, target=Target({"kind": "llvm"}))
    y = tvm.runtime.tensor(np.zeros(want_shape, "float32"))
    lib["main"](tvm.runtime.tensor(x), tvm.runtime.tensor(wt), y)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-4, atol=1e-4)


def test_unknown_workload_lists_names():
    with pytest.raises(CostlabError, match="unknown workload 'gemmm'.*gemm"):
        build_workload("gemmm")


def test_user_file_registers_and_builds(tmp_path, restore_registry):
    path = tmp_path / "user_ops.py"
    path.write_text(textwrap.dedent('''
        import tvm
        from tvm import te
        from costlab.workloads import register_workload

        @register_workload("user_scale")
        def user_scale(N: int = 16, dtype: str = "float32"):
            """Y = 2 * X."""
            X = te.placeholder((N,), dtype, name="X")
            Y = te.compute((N,), lambda i: X[i] * te.const(2, dtype), name="Y")
            return tvm.IRModule({"main": te.create_prim_func([X, Y])})
    '''))
    assert load_workload_file(path) == ["user_scale"]
    assert "user_scale" in WORKLOADS
    assert workload_key("user_scale", {"N": 8}) == "user_scale(N=8,dtype=float32)"
    mod = build_workload("user_scale", {"N": 8})
    assert [int(d) for d in mod["main"].params[0].shape] == [8]


def test_user_file_that_raises(tmp_path, restore_registry):
    path = tmp_path / "broken.py"
    path.write_text("from costlab.workloads import register_workload\nraise RuntimeError('boom here')\n")
    with pytest.raises(CostlabError) as info:
        load_workload_file(path)
    msg = str(info.value)
    assert str(path) in msg and "RuntimeError" in msg and "boom here" in msg


def test_user_file_with_syntax_error(tmp_path, restore_registry):
    path = tmp_path / "typo.py"
    path.write_text("def f(:\n")
    with pytest.raises(CostlabError, match="SyntaxError") as info:
        load_workload_file(path)
    assert str(path) in str(info.value)


def test_user_file_that_defines_nothing(tmp_path, restore_registry):
    path = tmp_path / "empty.py"
    path.write_text("x = 1\n")
    with pytest.raises(CostlabError, match="defines no workload") as info:
        load_workload_file(path)
    assert str(path) in str(info.value) and "register_workload" in str(info.value)


def test_missing_user_file(tmp_path):
    with pytest.raises(CostlabError, match="does not exist"):
        load_workload_file(tmp_path / "nope.py")


def test_user_factory_failure_is_a_costlab_error(tmp_path, restore_registry):
    path = tmp_path / "bad_factory.py"
    path.write_text(textwrap.dedent('''
        from costlab.workloads import register_workload

        @register_workload("user_bad")
        def user_bad(N: int = 4):
            raise ValueError("negative size")
    '''))
    load_workload_file(path)
    with pytest.raises(CostlabError, match="'user_bad'.*negative size"):
        build_workload("user_bad")


def test_a_factory_that_returns_no_irmodule_is_refused_when_built(tmp_path, restore_registry):
    """It passed --dry-run and then crashed the run with TVM's 'Check failed: (ptr != nullptr)'."""
    path = tmp_path / "returns_none.py"
    path.write_text(textwrap.dedent('''
        from costlab.workloads import register_workload

        @register_workload("user_none")
        def user_none(N: int = 4):
            return None
    '''))
    load_workload_file(path)
    with pytest.raises(CostlabError, match=r"workload 'user_none' with params \{'N': 4\}: its factory returned "
                                           r"NoneType, not an IRModule with a 'main' function"):
        build_workload("user_none")


@pytest.mark.parametrize("name, params, shape", [
    ("conv2d_nchw", {"H": 2, "W": 2, "R": 5, "S": 5, "padding": 0}, "-2"),  # the output is H - R + 1 high
])
def test_a_tensor_with_an_extent_below_one_is_refused_when_built(name, params, shape):
    with pytest.raises(CostlabError, match=rf"workload '{name}' .*would have shape \[.*{re.escape(shape)}.*\]; "
                                           r"every extent must be at least 1"):
        build_workload(name, params)


def test_example_file_loads_builds_and_runs(restore_registry):
    assert load_workload_file(EXAMPLE_FILE) == ["bias_relu_rowsum"]
    mod = build_workload("bias_relu_rowsum", {"M": 6, "N": 10})
    lib = tvm.compile(mod, target=Target({"kind": "llvm"}))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 10)).astype("float32")
    b = rng.standard_normal(10).astype("float32")
    y = tvm.runtime.tensor(np.zeros(6, "float32"))
    lib["main"](tvm.runtime.tensor(x), tvm.runtime.tensor(b), y)
    np.testing.assert_allclose(y.numpy(), np.maximum(x + b, 0).sum(1), rtol=1e-5, atol=1e-5)


def test_a_dtype_no_target_compiles_is_refused_when_built():
    """gemm with float33 built, and every trial of its run then failed to compile."""
    with pytest.raises(CostlabError, match=r"workload 'gemm' with params .*: tensor A has dtype 'float33', "
                                           r"which no target compiles"):
        build_workload("gemm", {"M": 8, "N": 8, "K": 8, "dtype": "float33"})
    for dtype in ("float16", "bfloat16", "int8"):
        mod = build_workload("gemm", {"M": 8, "N": 8, "K": 8, "dtype": dtype})
        main = mod["main"]
        a, b = main.params[:2]
        assert (str(a.dtype), str(b.dtype)) == (dtype, dtype)
        assert [int(d) for d in a.shape] == [8, 8] and [int(d) for d in b.shape] == [8, 8]
        assert tvm.compile(mod, target=Target({"kind": "llvm"}))["main"] is not None, dtype  # a target compiles it


def test_arithmetic_on_bool_is_refused_when_built_and_a_bool_mask_is_not(tmp_path, restore_registry):
    """gemm with dtype bool passed the load and the dry run, then every trial failed in LLVM's codegen
    (found by a bad-input audit)."""
    with pytest.raises(CostlabError, match=r"workload 'gemm' with params .*: tensor\(s\) A, B, C are bool, and its "
                                           r"kernel does not compile even unscheduled \(arithmetic on bool, say; TVM: "):
        build_workload("gemm", {"M": 8, "N": 8, "K": 8, "dtype": "bool"})
    path = tmp_path / "masked.py"
    path.write_text(textwrap.dedent('''
        import tvm
        from tvm import te
        from costlab.workloads import register_workload

        @register_workload("user_masked")
        def user_masked(N: int = 16):
            """Y = X where MASK, else 0."""
            X = te.placeholder((N,), "float32", name="X")
            mask = te.placeholder((N,), "bool", name="MASK")
            Y = te.compute((N,), lambda i: tvm.tirx.Select(mask[i], X[i], tvm.tirx.const(0, "float32")), name="Y")
            return tvm.IRModule({"main": te.create_prim_func([X, mask, Y])})
    '''))
    load_workload_file(path)
    assert str(build_workload("user_masked", {"N": 8})["main"].params[1].dtype) == "bool"


def test_a_user_file_may_not_take_a_registered_name(tmp_path, restore_registry):
    """A file registering 'gemm' replaced the built-in without a word; one file's name taken by a
    second file at another path did the same. The same file loaded again is fine."""
    builtin_gemm = WORKLOADS.factory("gemm")
    shadow = tmp_path / "shadow.py"
    shadow.write_text("from costlab.workloads import register_workload\n"
                      "@register_workload('gemm')\ndef gemm(M: int = 4):\n    return None\n")
    with pytest.raises(CostlabError, match=r"workload file .*shadow.py registers a name that is taken: 'gemm' "
                                           r"\(from costlab's built-in workloads\)"):
        load_workload_file(shadow)
    assert WORKLOADS.factory("gemm") is builtin_gemm
    first, second = tmp_path / "a" / "ops.py", tmp_path / "b" / "ops.py"
    for path in (first, second):
        path.parent.mkdir()
        path.write_text("from costlab.workloads import register_workload\n"
                        "@register_workload('user_twice')\ndef user_twice(N: int = 4):\n    return None\n")
    assert load_workload_file(first) == ["user_twice"]
    assert load_workload_file(first) == ["user_twice"]  # reloaded
    factory = WORKLOADS.factory("user_twice")
    with pytest.raises(CostlabError, match=r"'user_twice' \(from another workload file\)"):
        load_workload_file(second)
    assert WORKLOADS.factory("user_twice") is factory
