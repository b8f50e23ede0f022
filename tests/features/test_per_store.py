"""per_store: pooling of TVM's PerStoreFeature rows."""

from __future__ import annotations

import numpy as np

import costlab.features as F
from tests.features.conftest import sampled


def test_pooling_matches_the_raw_rows(target):
    from tvm.s_tir.meta_schedule.feature_extractor import PerStoreFeature

    context, candidates = sampled(target)
    pooled = F.get("per_store").extract(context, candidates).dense
    raw = [t.numpy() for t in PerStoreFeature().extract_from(context, candidates)]
    for row, rows in zip(pooled, raw):
        assert row[-1] == rows.shape[0] >= 1
        assert np.allclose(row[:164], rows.sum(axis=0), rtol=1e-6)
        assert np.allclose(row[164:328], rows.mean(axis=0), rtol=1e-6)
        assert np.allclose(row[328:492], rows.max(axis=0), rtol=1e-6)
    names = F.get("per_store").feature_names
    is_gpu = pooled[:, names.index("max.is_gpu")]
    assert np.all(is_gpu == (1.0 if target == "h100" else 0.0))
