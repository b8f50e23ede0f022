"""``per_store``: TVM's ``PerStoreFeature`` pooled into one vector per candidate.

MetaSchedule's ``PerStoreFeature`` gives one row of 164 values per buffer store of
the (lightly lowered) program; the row count varies (1–2 for a CPU matmul, 4 for a
CUDA one). This extractor pools the rows of each candidate: ``sum.<f>``,
``mean.<f>`` and ``max.<f>`` for each of the 164 features ``<f>``, then
``n_stores`` (the row count). A candidate without stores gets zeros.

Units: nearly all of TVM's values are ``log2(1 + x)`` of a count, a size in bytes
or an extent in iterations (``slog`` in TVM's per_store_feature.cc); the one-hot
flags (``*.kPos*``, ``B<i>.acc_type.*``, ``B<i>.reuse_type.*``, ``is_gpu``) are 0/1.
``sum`` therefore adds log-values (it is TVM's own pack-sum), ``mean`` and ``max``
keep their unit. The 164 names follow TVM's order:

- group 1 (57): arithmetic ops per store (``float_mad`` ... ``select_op``; counts
  over the loop nest), vectorize/unroll/parallel annotations (number, product and
  innermost length of annotated loops, position one-hot), ``is_gpu`` and the
  lengths of ``blockIdx.*``, ``threadIdx.*``, ``vthread``;
- group 2 (90): for the 5 buffers touched most (``B0`` ... ``B4``): access type,
  bytes, unique bytes, cache lines, unique lines, reuse type, reuse distance in
  iterations and bytes, reuse count, the four ``*_d_reuse_ct`` ratios, stride;
- group 3 (10): the arithmetic-intensity curve (FLOPs / bytes) sampled at 10 points;
- group 4 (4): allocation size (bytes) and products of loop extents around it;
- group 5 (3): product of the outer loops' extents, number of loops, auto-unroll
  max step.
"""

from __future__ import annotations

import numpy as np

from costlab.features._base import EXTRACTORS, FeatureExtractor, Features

_POS = ["kPosNone", "kPosInnerSpatial", "kPosMiddleSpatial", "kPosOuterSpatial", "kPosInnerReduce",
        "kPosMiddleReduce", "kPosOuterReduce", "kPosMixed"]


def _tvm_names() -> list[str]:
    names = ["float_mad", "float_addsub", "float_mul", "float_divmod", "float_cmp", "float_mathfunc",
             "float_otherfunc", "int_mad", "int_addsub", "int_mul", "int_divmod", "int_cmp", "int_mathfunc",
             "int_otherfunc", "bool_op", "select_op"]
    for kind in ("vec", "unroll", "parallel"):
        names += [f"{kind}_num", f"{kind}_prod", f"{kind}_len"] + [f"{kind}_type.{p}" for p in _POS]
    names += ["is_gpu", "blockIdx_x_len", "blockIdx_y_len", "blockIdx_z_len", "threadIdx_x_len",
              "threadIdx_y_len", "threadIdx_z_len", "vthread_len"]
    for i in range(5):
        names += [f"B{i}.{n}" for n in (
            "acc_type.kRead", "acc_type.kWrite", "acc_type.kReadWrite", "bytes", "unique_bytes", "lines",
            "unique_lines", "reuse_type.kLoopMultipleRead", "reuse_type.kSerialMultipleReadWrite",
            "reuse_type.kNoReuse", "reuse_dis_iter", "reuse_dis_bytes", "reuse_ct", "bytes_d_reuse_ct",
            "unique_bytes_d_reuse_ct", "lines_d_reuse_ct", "unique_lines_d_reuse_ct", "stride")]
    names += [f"arith_intensity_curve_{i}" for i in range(10)]
    names += ["alloc_size", "alloc_prod", "alloc_outer_prod", "alloc_inner_prod"]
    names += ["outer_prod", "num_loops", "auto_unroll_max_step"]
    return names


TVM_FEATURE_NAMES = _tvm_names()
assert len(TVM_FEATURE_NAMES) == 164


@EXTRACTORS.register("per_store")
class PerStoreFeatures(FeatureExtractor):
    """TVM's PerStoreFeature rows pooled by sum, mean and max, plus the row count."""

    name = "per_store"
    version = 1
    kind = "dense"

    @property
    def feature_names(self) -> list[str]:
        return ([f"sum.{n}" for n in TVM_FEATURE_NAMES] + [f"mean.{n}" for n in TVM_FEATURE_NAMES]
                + [f"max.{n}" for n in TVM_FEATURE_NAMES] + ["n_stores"])

    def extract(self, context, candidates) -> Features:
        from tvm.s_tir.meta_schedule.feature_extractor import PerStoreFeature

        d = len(TVM_FEATURE_NAMES)
        out = np.zeros((len(candidates), 3 * d + 1), dtype=np.float32)
        if candidates:
            tensors = PerStoreFeature().extract_from(context, list(candidates))
            for i, t in enumerate(tensors):
                rows = t.numpy()
                if rows.shape[0] == 0:
                    continue
                out[i, :d] = rows.sum(axis=0)
                out[i, d:2 * d] = rows.mean(axis=0)
                out[i, 2 * d:3 * d] = rows.max(axis=0)
                out[i, 3 * d] = rows.shape[0]
        return Features(self.schema, dense=out)
