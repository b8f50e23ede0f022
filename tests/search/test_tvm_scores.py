"""Scores reach MetaSchedule above 0: its evolutionary search sets every score below 0 to 0."""

from __future__ import annotations

import numpy as np
import pytest

from costlab.search.adapter import TVM_SCORE_FLOOR, CostlabCostModel, tvm_scores
from costlab.search.timing import PhaseTimer


def test_tvm_scores_keep_the_order_above_zero_and_the_positive_scores():
    rng = np.random.default_rng(0)
    for raw in (rng.normal(0.0, 2.0, 512), rng.normal(-5.0, 1.0, 512), np.array([-600.0, -1.0, 0.0, 1e-9, 3.0])):
        mapped = tvm_scores(raw)
        order = np.argsort(raw)
        assert (mapped > 0).all()
        assert (np.diff(mapped[order]) > 0).all()  # the same order, no ties
        positive = raw > 0
        np.testing.assert_allclose(mapped[positive], raw[positive] + TVM_SCORE_FLOOR, rtol=0, atol=1e-12)
        assert mapped[~positive].max() <= TVM_SCORE_FLOOR
    placeholder = tvm_scores(np.array([-1e30, -3.0]))  # the adapter's score for a failed prediction
    assert placeholder[0] == 0.0 and placeholder[1] > 0.0


class AllBelowZero:
    """Stands in for a ranking model that scores a whole population below 0 (as a pretrained
    LambdaRank ensemble did for SwiGLU's first batch): distinct scores, -2 < score < -1."""

    def __init__(self):
        self.calls = []

    def predict(self, features):
        x = np.asarray(features.dense, dtype="float64")
        scores = -1.0 - np.modf(x @ np.sqrt(np.arange(2, x.shape[1] + 2)) * 0.6180339887)[0] ** 2
        self.calls.append(scores)
        return scores


def metaschedule_picks(mode: str):
    """The 8 candidates MetaSchedule's evolutionary search sends to measurement (no mutation,
    no random picks: the 8 it scored best), with the scores of its one population."""
    from tvm.s_tir import meta_schedule as ms

    from costlab._tvm import import_tensor_intrinsics
    from costlab.features import get as get_extractor
    from costlab.targets import make_target
    from costlab.workloads import build_workload

    import_tensor_intrinsics()
    strategy = ms.search_strategy.EvolutionarySearch(population_size=64, init_measured_ratio=0.0,
                                                     init_min_unmeasured=64, genetic_num_iters=0, eps_greedy=0.0)
    context = ms.TuneContext(mod=build_workload("gemm", {"M": 64, "N": 64, "K": 64}), target=make_target("cpu"),
                             space_generator="post-order-apply", search_strategy=strategy, num_threads=1,
                             rand_state=0)
    model, extractor = AllBelowZero(), get_extractor("trace")
    adapter = CostlabCostModel(model, extractor, "gemm", PhaseTimer(), pretrained=True, scores=mode)
    context.pre_tuning(max_trials=8, num_trials_per_iter=8, design_spaces=context.generate_design_space(),
                       database=ms.database.MemoryDatabase(), cost_model=adapter)
    candidates = list(context.generate_measure_candidates())
    (population,) = model.calls
    picked = model.predict(extractor.extract(context, candidates))
    return np.sort(picked)[::-1], np.sort(np.unique(population))[::-1][:8]


def test_metaschedule_measures_the_best_scored_candidates_when_all_score_below_zero():
    picked, best = metaschedule_picks("ordered")
    np.testing.assert_allclose(picked, best, rtol=0, atol=1e-12)


def test_raw_scores_below_zero_tie_in_metaschedule():
    # What every costlab run before 2026-12-02 got (tvm_scores: raw): TVM clamps the scores
    # to 0, keeps the first candidates it met, and the model's order is lost.
    picked, best = metaschedule_picks("raw")
    assert picked.min() < best.min()


def test_the_adapter_refuses_an_unknown_score_mode():
    with pytest.raises(ValueError, match="'ordered' or 'raw'"):
        CostlabCostModel(AllBelowZero(), None, "t", PhaseTimer(), scores="clamped")
