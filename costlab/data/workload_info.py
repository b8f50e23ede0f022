"""Readable descriptions of database workloads: name, operator family, key.

Operator family heuristic (:func:`guess_family`), first match wins, on the lower-cased
names of the PrimFunc's blocks (and the costlab workload name when a sidecar gives one):

====================  ==============================================================
family                when
====================  ==============================================================
conv2d_winograd       a name contains ``winograd``
conv2d_transpose      ``conv2d_transpose`` or ``conv_transpose``
depthwise_conv2d      ``depthwise``
conv3d / conv1d       ``conv3d`` / ``conv1d``
conv2d                ``conv`` (``conv2d_nchw``, ``conv2d_nhwc``, ...)
batch_matmul          ``batch_matmul``
matmul                ``matmul``, ``dense``, ``gemm`` or ``gemv``
pool                  ``pool`` (max, avg, adaptive)
softmax               ``softmax``
norm                  ``layer_norm``, ``rms_norm``, ``batch_norm``, ``group_norm``,
                      with or without the underscore
layout_transform      ``layout_transform`` or ``transpose``
norm                  no name matched; a reduction block sums squares (``x * x``, as
                      RMSNorm's sum of squares and LayerNorm's variance do)
contraction           no name matched; a reduction block multiplies values
reduction             no name matched; a block has a reduction axis
injective             otherwise (element-wise, reshape, copy)
====================  ==============================================================

Related families (:data:`RELATED_FAMILIES`): families whose loop nests have the same
shape, for a warm start whose dataset holds no other workload of the tuned one's family.
A contraction (SwiGLU's projections) is a matmul with something around it; norms and
softmax reduce along a row and then rescale it; convolutions differ in layout and
window, not in loop structure.

The workload key is the sidecar's ``workload_key`` for costlab-produced databases,
otherwise ``<name>[<shapes>]#<structural hash>``, for example
``conv2d_nchw[1x256x14x14,512x256x1x1,1x512x1x1,1x512x7x7]#8466022533928318066``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

_RULES: list[tuple[str, tuple[str, ...]]] = [
    ("conv2d_winograd", ("winograd",)),
    ("conv2d_transpose", ("conv2d_transpose", "conv_transpose")),
    ("depthwise_conv2d", ("depthwise",)),
    ("conv3d", ("conv3d",)),
    ("conv1d", ("conv1d",)),
    ("conv2d", ("conv",)),
    ("batch_matmul", ("batch_matmul",)),
    ("matmul", ("matmul", "dense", "gemm", "gemv")),
    ("pool", ("pool",)),
    ("softmax", ("softmax",)),
    ("norm", ("layer_norm", "layernorm", "rms_norm", "rmsnorm", "batch_norm", "batchnorm", "group_norm", "groupnorm")),
    ("layout_transform", ("layout_transform", "transpose")),
]
FAMILIES = [f for f, _ in _RULES] + ["contraction", "reduction", "injective"]

_RELATED_GROUPS = [
    ("matmul", "batch_matmul", "contraction"),
    ("norm", "softmax", "reduction"),
    ("conv2d", "conv1d", "conv3d", "depthwise_conv2d", "conv2d_winograd", "conv2d_transpose"),
]
RELATED_FAMILIES: dict[str, tuple[str, ...]] = {
    family: tuple(f for f in group if f != family) for group in _RELATED_GROUPS for family in group
}


@dataclass(frozen=True)
class BlockInfo:
    name: str
    has_reduction: bool
    multiplies: bool  # a Mul node in the block body (contraction-like)
    squares: bool = False  # a Mul of a value by itself (a sum of squares: a norm)


@dataclass(frozen=True)
class WorkloadInfo:
    """What the dataset stores about one workload."""

    shash: str
    name: str
    family: str
    key: str
    params: dict  # sidecar ``workload_params``, or shapes/dtypes/blocks of the PrimFunc


def block_infos(mod) -> list[BlockInfo]:
    """The blocks of ``mod["main"]`` (other than ``root``), in program order."""
    import tvm_ffi
    from tvm import tirx
    from tvm.s_tir import SBlock

    func = mod["main"]
    blocks: list = []

    def visit(node):
        if isinstance(node, SBlock) and node.name_hint != "root":
            blocks.append(node)

    tvm_ffi.structural_walk(func.body, visit, order="pre")
    infos = []
    for block in blocks:
        muls: list = []
        tvm_ffi.structural_walk(block.body, lambda n: muls.append(n) if isinstance(n, tirx.Mul) else None, order="pre")
        reduction = any(int(iv.iter_type) == int(tirx.IterVar.CommReduce) for iv in block.iter_vars)
        squares = any(tvm_ffi.structural_equal(m.a, m.b) for m in muls)
        infos.append(BlockInfo(str(block.name_hint), reduction, bool(muls), squares))
    return infos


def guess_family(block_names: list[str], extra_names: list[str] | None = None,
                 blocks: list[BlockInfo] | None = None) -> tuple[str, str]:
    """``(family, anchor_name)`` by the rules in this module's docstring."""
    names = [n.lower() for n in (extra_names or [])] + [n.lower() for n in block_names]
    originals = list(extra_names or []) + list(block_names)
    for family, keywords in _RULES:
        for name, original in zip(names, originals):
            if any(k in name for k in keywords):
                return family, original
    for b in blocks or []:
        if b.has_reduction and b.squares:
            return "norm", b.name
    for b in blocks or []:
        if b.has_reduction and b.multiplies:
            return "contraction", b.name
    for b in blocks or []:
        if b.has_reduction:
            return "reduction", b.name
    last = (block_names or originals or ["main"])[-1]
    return "injective", last


def param_summary(mod) -> list[dict]:
    """``[{"name", "shape", "dtype"}]`` of the PrimFunc's tensor parameters."""
    func = mod["main"]
    out = []
    for p in func.params:
        shape = getattr(p, "shape", None)
        if shape is None:
            continue
        try:
            dims = [int(d) for d in shape]
        except (TypeError, ValueError):
            dims = [str(d) for d in shape]
        out.append({"name": str(p.name), "shape": dims, "dtype": str(getattr(p, "dtype", ""))})
    return out


def describe_workload(shash: str, mod, meta: dict | None = None) -> WorkloadInfo:
    """Name, family, key and params of a workload; ``meta`` is the costlab.json sidecar."""
    blocks = block_infos(mod)
    extra = [str(meta["workload_name"])] if meta and meta.get("workload_name") else []
    family, anchor = guess_family([b.name for b in blocks], extra, blocks)
    params_list = param_summary(mod)
    if meta and meta.get("workload_key"):
        name = str(meta.get("workload_name") or anchor)
        params = meta.get("workload_params") or {}
        key = str(meta["workload_key"])
    else:
        name = anchor
        shapes = []
        for p in params_list:
            text = "x".join(str(d) for d in p["shape"]) if p["shape"] else "scalar"
            if p["dtype"] and p["dtype"] != "float32":
                text += f":{p['dtype']}"
            shapes.append(text)
        key = f"{name}[{','.join(shapes)}]#{shash}"
        params = {"args": params_list, "blocks": [b.name for b in blocks]}
    return WorkloadInfo(shash=str(shash), name=name, family=family, key=key, params=params)


def target_summary(target_json: dict | None) -> str:
    """A short target label: ``cuda sm_80``, ``llvm znver4 2 cores``,
    ``llvm znver4 -avx512f 2 cores``, or ``none``.

    The core count and the CPU features (``mattr``) are part of it because a kernel's latency
    depends on them: the same schedule timed with 2 and with 16 cores, or with and without
    AVX-512, is two tasks, not one, when a dataset's records are ranked. The features are named
    in the order given: LLVM applies them in order, and a setting changes the features it
    implies (``+avx512f,-avx2`` leaves neither, ``-avx2,+avx512f`` both)."""
    if not target_json:
        return "none"
    kind = str(target_json.get("kind", "?"))
    detail = target_json.get("arch") or target_json.get("mcpu") or ""
    mattr = target_json.get("mattr") or []
    mattr = mattr if isinstance(mattr, str) else ",".join(str(a) for a in mattr)
    cores = target_json.get("num-cores")
    cores = f"{cores} core{'' if cores == 1 else 's'}" if cores else ""
    return " ".join(str(part) for part in (kind, detail, mattr, cores) if part)


def canonical_json(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))
