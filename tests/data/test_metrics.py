"""Metrics on hand-made examples whose answers are worked out in the comments."""

import math

import numpy as np
import pytest

from costlab.data import metrics as m

INF = math.inf


def test_top1_perfect_and_inverted_model():
    lat = [1.0, 2.0, 4.0]
    groups = ["a"] * 3
    perfect = [3.0, 2.0, 1.0]  # higher score = faster
    assert m.top_k_score(lat, perfect, groups, 1) == pytest.approx(1.0)
    inverted = [1.0, 2.0, 3.0]  # picks the 4 s program: 1 / 4
    assert m.top_k_score(lat, inverted, groups, 1) == pytest.approx(0.25)
    # top-3 covers everything, so even the inverted model finds the best
    assert m.top_k_score(lat, inverted, groups, 3) == pytest.approx(1.0)


def test_top_k_sums_over_tasks_with_weights():
    # task a: best 1, model picks 2; task b: best 10, model picks 10.
    lat = [1.0, 2.0, 10.0, 20.0]
    scores = [0.0, 1.0, 1.0, 0.0]
    groups = ["a", "a", "b", "b"]
    # (1 + 10) / (2 + 10)
    assert m.top_k_score(lat, scores, groups, 1) == pytest.approx(11 / 12)
    # weight a by 3: (3*1 + 10) / (3*2 + 10)
    assert m.top_k_score(lat, scores, groups, 1, weights={"a": 3}) == pytest.approx(13 / 16)


def test_failures_excluded_by_default_or_penalized_as_tenset():
    lat = [1.0, INF, 1e10, 3.0]  # 1e10 is MetaSchedule's failure marker
    scores = [0.0, 3.0, 2.0, 1.0]
    g = ["a"] * 4
    # excluded: the model ranks 3.0 above 1.0 among working programs
    assert m.top_k_score(lat, scores, g, 1) == pytest.approx(1 / 3)
    # TenSet: a failed pick counts as best / 1e-5
    assert m.top_k_score(lat, scores, g, 1, failures="penalize") == pytest.approx(1e-5)
    assert m.top_k_score(lat, scores, g, 2, failures="penalize") == pytest.approx(1e-5)
    assert m.top_k_score(lat, scores, g, 3, failures="penalize") == pytest.approx(1 / 3)
    assert m.top_k_score(lat, scores, g, 4, failures="penalize") == pytest.approx(1.0)
    # peak: excluded -> throughputs [1/3, 1]; penalized -> [0, 0, 1/3, 1]
    assert m.peak_score(lat, scores, g, 2) == pytest.approx((1 / 3 + 1) / 2)
    assert m.peak_score(lat, scores, g, 2, failures="penalize") == pytest.approx(0.0)
    # failed-pick rate always sees the failures
    assert m.failed_pick_rate(lat, scores, g, 1) == 1.0
    assert m.failed_pick_rate(lat, scores, g, 3) == 0.0
    with pytest.raises(ValueError, match="failures"):
        m.top_k_score(lat, scores, g, 1, failures="best")


def test_a_zero_latency_is_a_failure_not_an_infinitely_fast_kernel():
    lat, scores, g = [0.0, 2.0, 1.0], [2.0, 1.0, 0.0], ["a"] * 3
    assert m.top_k_score(lat, scores, g, 1) == pytest.approx(0.5)  # the 0.0 pick is excluded: 1.0 / 2.0
    assert m.pairwise_accuracy(lat, scores, g) == 0.0  # only (2.0, 1.0) is a valid pair, ranked wrong
    assert m.failed_pick_rate(lat, scores, g, 1) == 1.0


def test_task_without_success_is_skipped_and_counted():
    lat = [1.0, 2.0, INF, INF]
    scores = [1.0, 0.0, 5.0, 4.0]
    groups = ["ok", "ok", "dead", "dead"]
    res = m.ranking_metrics(lat, scores, groups)
    assert res.top1 == pytest.approx(1.0)
    assert res.skipped_tasks == ["dead"]
    assert res.n_tasks == 1 and res.n_skipped_tasks == 1 and res.n_records == 4
    assert "dead" not in res.per_task
    pen = m.ranking_metrics(lat, scores, groups, failures="penalize")
    assert pen.skipped_tasks == ["dead"] and pen.top1 == pytest.approx(1.0)


def test_nan_score_is_worst():
    lat = [1.0, 2.0]
    assert m.top_k_score(lat, [np.nan, 0.0], ["a", "a"], 1) == pytest.approx(0.5)


def test_equal_scores_are_worth_a_random_pick_among_them_not_the_record_order():
    """TenSet breaks ties by record order: a constant prediction scored whatever the database's
    order happened to put first (here 3.0 s, or 1.0 s with the rows the other way round)."""
    for lat in ([3.0, 1.0, 2.0], [1.0, 2.0, 3.0]):
        assert m.top_k_score(lat, [0.0] * 3, ["a"] * 3, 1) == pytest.approx(1 / 2)  # mean pick: 2 s
        assert m.top_k_score(lat, [0.0] * 3, ["a"] * 3, 2) == pytest.approx(3 / 4)  # mean best of two: 4/3 s
        # running max of throughput 1/3, 1, 1/2 picked at random: 11/18, then 5/6, then 1
        assert m.task_peak_score(lat, [0.0] * 3, 3) == pytest.approx((11 / 18 + 5 / 6 + 1) / 3)
    # a tie behind a distinct first pick: 3 s, then a random one of 1 s and 2 s
    assert m.task_top_k_latency([3.0, 1.0, 2.0], [1.0, 0.0, 0.0], 2) == pytest.approx(1.5)
    assert m.task_top_k_latency([3.0, 1.0, 2.0], [1.0, np.nan, np.nan], 2) == pytest.approx(1.5)  # NaN: tied worst


def test_tie_expectations_equal_the_mean_over_every_order_of_the_ties():
    import itertools

    rng = np.random.default_rng(0)
    for _ in range(20):
        lat = rng.choice([1.0, 1.5, 2.0, 3.0, INF], size=6)
        lat[0] = 1.2  # a success
        scores = rng.choice([0.0, 1.0, 2.0], size=6)
        for k in (1, 2, 3, 6):
            tops, peaks = [], []
            for order in itertools.permutations(range(6)):  # every tie order equally likely
                rank = np.asarray(order)[np.argsort(-scores[list(order)], kind="stable")]
                finite = lat[np.isfinite(lat)]
                picks = np.minimum(lat[rank[:k]], finite.min() / m.THROUGHPUT_FLOOR)
                tops.append(picks.min())
                tp = np.where(np.isfinite(lat), finite.min() / lat, 0.0)[rank[:k]]
                peaks.append(np.maximum.accumulate(tp).mean())
            assert m.task_top_k_latency(lat, scores, k) == pytest.approx(np.mean(tops))
            assert m.task_peak_score(lat, scores, k) == pytest.approx(np.mean(peaks))


def test_task_mean_top_k_score_weighs_every_task_alike():
    """TenSet's top-k score is a ratio of sums: a task 1000x slower decides it alone."""
    lat = [1.0, 2.0, 1000.0, 1001.0]
    scores = [0.0, 1.0, 1.0, 0.0]  # a: picks 2 s (0.5 of the best); b: picks the best
    r = m.ranking_metrics(lat, scores, ["a", "a", "b", "b"], ks=(1,))
    assert r.top_k[1] == pytest.approx(1001 / 1002)
    assert r.task_mean_top_k[1] == pytest.approx((0.5 + 1) / 2)
    assert r.as_dict()["task_mean_top1_score"] == pytest.approx(0.75)


def test_a_reference_latency_must_be_measured():
    for bad in (INF, np.nan, 0.0, -1.0):
        with pytest.raises(ValueError, match="reference latency must be a finite positive"):
            m.t95([INF, INF], bad)
        with pytest.raises(ValueError, match="reference latency must be a finite positive"):
            m.convergence_auc([1.0], bad)


def test_ks_given_as_whole_floats_work():
    r = m.ranking_metrics([1.0, 2.0], [1.0, 0.0], ["a", "a"], ks=(2.0,))
    assert r.top_k == {2: pytest.approx(1.0)}
    for bad in ((0,), (1.5,), (True,), ("1",)):
        with pytest.raises(ValueError, match="ks must be whole numbers"):
            m.ranking_metrics([1.0], [1.0], ["a"], ks=bad)


def test_peak_score_is_mean_of_running_max():
    # throughputs best/lat: [1, 0.5, 0.25]; picks by score: 0.25, 1, 0.5
    lat = [1.0, 2.0, 4.0]
    scores = [2.0, 1.0, 3.0]
    # running max: 0.25, 1, 1 -> mean 0.75
    assert m.task_peak_score(lat, scores, 3) == pytest.approx(0.75)
    assert m.task_peak_score(lat, scores, 1) == pytest.approx(0.25)
    # failure has throughput 0
    assert m.task_peak_score([1.0, INF], [0.0, 1.0], 2) == pytest.approx(0.5)  # a failure is 0


def test_peak_score_weighted_by_records():
    # task a (2 records): peak@1 = 1; task b (4 records): peak@1 = 0.5
    lat = [1.0, 2.0, 1.0, 2.0, 2.0, 2.0]
    scores = [1.0, 0.0, 0.0, 1.0, 0.0, 0.0]
    groups = ["a", "a", "b", "b", "b", "b"]
    assert m.peak_score(lat, scores, groups, 1) == pytest.approx((2 * 1 + 4 * 0.5) / 6)


def test_pairwise_accuracy_counts_ordered_pairs():
    lat = [1.0, 2.0, 3.0, 4.0]
    # scores order 1 > 2 > 4 > 3 in speed: of 6 pairs, only (3, 4) is wrong
    scores = [4.0, 3.0, 1.0, 2.0]
    acc, n = m.task_pairwise_accuracy(lat, scores)
    assert n == 6 and acc == pytest.approx(5 / 6)
    assert m.pairwise_accuracy(lat, [4, 3, 2, 1], ["a"] * 4) == pytest.approx(1.0)
    assert m.pairwise_accuracy(lat, [1, 2, 3, 4], ["a"] * 4) == pytest.approx(0.0)


def test_pairwise_ties():
    # equal latencies are left out; equal scores count one half
    acc, n = m.task_pairwise_accuracy([1.0, 1.0, 2.0], [5.0, 1.0, 1.0])
    # pairs with distinct latency: (0,2) correct, (1,2) score tie -> 0.5
    assert n == 2 and acc == pytest.approx(0.75)
    # a constant model is at chance whatever the record order
    acc, _ = m.task_pairwise_accuracy([3.0, 1.0, 2.0, 5.0], [0.0] * 4)
    assert acc == pytest.approx(0.5)


def test_pairwise_failure_handling():
    lat = [1.0, 2.0, INF]
    scores = [1.0, 0.0, 5.0]  # ranks the failure first
    # excluded: only (1.0, 2.0) counts and it is right
    assert m.pairwise_accuracy(lat, scores, ["a"] * 3) == pytest.approx(1.0)
    # penalized: the failure is slowest, so both pairs with it are wrong -> 1/3
    assert m.pairwise_accuracy(lat, scores, ["a"] * 3, failures="penalize") == pytest.approx(1 / 3)
    with pytest.raises(ValueError):
        m.pairwise_accuracy(lat, scores, ["a"] * 3, failures="best")


def test_pairwise_weighted_by_records_used():
    # task a: 3 records, all right (1.0); task b: 2 records, wrong (0.0)
    lat = [1.0, 2.0, 3.0, 1.0, 2.0]
    scores = [3.0, 2.0, 1.0, 0.0, 1.0]
    groups = ["a", "a", "a", "b", "b"]
    assert m.pairwise_accuracy(lat, scores, groups) == pytest.approx(3 / 5)


def test_kendall_tau():
    lat = [1.0, 2.0, 3.0, 4.0]
    assert m.kendall_tau(lat, [4, 3, 2, 1], ["a"] * 4) == pytest.approx(1.0)
    assert m.kendall_tau(lat, [1, 2, 3, 4], ["a"] * 4) == pytest.approx(-1.0)
    # one discordant pair out of six: (5 - 1) / 6
    assert m.kendall_tau(lat, [4, 3, 1, 2], ["a"] * 4) == pytest.approx(4 / 6)
    assert m.kendall_tau(lat, [0, 0, 0, 0], ["a"] * 4) == 0.0
    # a task whose latencies are all equal has nothing to rank: left out, as pairwise accuracy does
    tied = [2.0, 2.0, 2.0, 2.0]
    assert m.kendall_tau(lat + tied, [4, 3, 2, 1] * 2, ["a"] * 4 + ["b"] * 4) == pytest.approx(1.0)
    assert m.pairwise_accuracy(lat + tied, [4, 3, 2, 1] * 2, ["a"] * 4 + ["b"] * 4) == pytest.approx(1.0)
    # failures excluded by default
    assert m.kendall_tau([1.0, 2.0, INF], [2, 1, 9], ["a"] * 3) == pytest.approx(1.0)


def test_ranking_metrics_as_dict():
    res = m.ranking_metrics([1.0, 2.0, 4.0], [3, 2, 1], ["a"] * 3)
    d = res.as_dict()
    assert d["top1_score"] == pytest.approx(1.0)
    assert d["top5_score"] == pytest.approx(1.0)
    assert d["pairwise_accuracy"] == pytest.approx(1.0)
    assert d["kendall_tau"] == pytest.approx(1.0)
    assert d["peak_score@1"] == pytest.approx(1.0)
    assert res.per_task["a"]["top1_latency_s"] == pytest.approx(1.0)
    assert d["failed_pick_rate@1"] == 0.0 and res.failures == "exclude"


def test_pairwise_large_task_is_chunked():
    rng = np.random.default_rng(0)
    lat = rng.uniform(1, 2, size=1500)
    acc, n = m.task_pairwise_accuracy(lat, -lat)
    assert acc == pytest.approx(1.0) and n == 1500 * 1499 // 2


def test_best_so_far_and_t95():
    lat = [4.0, INF, 2.0, 1.1, 1.0]
    assert list(m.best_so_far(lat)) == [4.0, 4.0, 2.0, 1.1, 1.0]
    # 95% of reference 1.0 means latency <= 1/0.95 = 1.0526: reached at trial 5
    assert m.t95(lat, 1.0) == 5
    # 90%: latency <= 1.111: trial 4
    assert m.t90(lat, 1.0) == 4
    # never reached -> budget + 1
    assert m.t95([4.0, 3.0], 1.0) == 3
    assert m.t95([4.0, 3.0], 1.0, budget=10) == 11
    # budget cuts the run short
    assert m.t90(lat, 1.0, budget=3) == 4
    # failures only
    assert m.t95([INF, INF], 1.0) == 3
    # the threshold is speed: 1.052 is within 1/0.95, 1.06 is not
    assert (m.t95([1.052], 1.0), m.t95([1.06], 1.0)) == (1, 2)


def test_convergence_auc():
    # normalized: 0 (failure), 0.5, 1, 1 -> mean 0.625
    lat = [INF, 2.0, 1.0, 3.0]
    assert m.convergence_auc(lat, 1.0) == pytest.approx(0.625)
    # shorter run than budget keeps its last value: 0, .5, 1, 1, 1, 1 -> 4.5 / 6
    assert m.convergence_auc(lat, 1.0, budget=6) == pytest.approx(4.5 / 6)
    # beating the reference is capped at 1
    assert m.convergence_auc([0.5], 1.0) == pytest.approx(1.0)
    np.testing.assert_allclose(m.normalized_curve([2.0, 1.0], 1.0, budget=1), [0.5])


def test_ranking_metrics_refuse_a_top_k_below_one():
    with pytest.raises(ValueError, match=r"ks must be whole numbers >= 1, not \(0,\)"):
        m.ranking_metrics([1.0, 2.0], [0.0, 1.0], ["a", "a"], ks=(0,))


def test_a_failed_pick_among_equal_scores_counts_as_its_chance():
    lat = [1.0, INF, INF, 2.0]
    assert m.failed_pick_rate(lat, [0.0, 0.0, 0.0, 0.0], ["a"] * 4, 1) == pytest.approx(0.5)
    assert m.failed_pick_rate(lat, [0.0, 0.0, 0.0, 0.0], ["a"] * 4, 2) == pytest.approx(1 / 6)  # both of 6 pairs
    assert m.failed_pick_rate(lat, [0.0, 1.0, 1.0, 0.0], ["a"] * 4, 2) == 1.0
    per_task = m.ranking_metrics(lat, [0.0] * 4, ["a"] * 4, ks=(1,), failures="penalize").per_task
    assert per_task["a"]["top1_pick_failed"] == pytest.approx(0.5)
