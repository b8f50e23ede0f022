"""An example user workload file; a config loads it with
``workload_files: [experiments/workloads/my_op.py]`` (paths are relative to the directory
costlab runs in).

Any Python file works the same way: import ``register_workload`` from
``costlab.workloads``, decorate a factory whose parameters all have defaults, and
return a ``tvm.IRModule`` with one PrimFunc named ``main`` built with ``tvm.te``
(inputs first, the output last).
"""

import tvm
from tvm import te

from costlab.workloads import register_workload


@register_workload("bias_relu_rowsum")
def bias_relu_rowsum(M: int = 256, N: int = 512, dtype: str = "float32"):
    """Y[i] = sum_j relu(X[i, j] + bias[j]): an elementwise stage feeding a row reduction.

    Inputs X: [M, N], bias: [N]; output Y: [M] (all ``dtype``).
    """
    X = te.placeholder((M, N), dtype, name="X")
    bias = te.placeholder((N,), dtype, name="bias")
    act = te.compute((M, N), lambda i, j: te.max(X[i, j] + bias[j], te.const(0, dtype)), name="act")
    j = te.reduce_axis((0, N), name="j")
    Y = te.compute((M,), lambda i: te.sum(act[i, j], axis=j), name="Y")
    return tvm.IRModule({"main": te.create_prim_func([X, bias, Y])})
