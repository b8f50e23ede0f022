"""Candidates that fail to build: MetaSchedule's UpdateCostModel never hands them to the cost
model, so a resumed session must not train on them either (the database records them as any
failure), and the online accuracy is logged at the trial count, build failures included.

A real 16-trial session (GEMM 32³, the host CPU, the real builder and runner) whose builder
fails the third candidate of each batch."""

from __future__ import annotations

import json

import pytest
from tvm.ir.utils import derived_object
from tvm.s_tir.meta_schedule.builder import BuilderResult, PyBuilder
from tvm.s_tir.meta_schedule.cost_model import PyCostModel

TRIALS, PER_ITER, FAILED_INDEX = 16, 8, 2


@derived_object
class FailThirdBuild(PyBuilder):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def build(self, build_inputs):
        results = list(self.inner.build(build_inputs))
        if len(results) > FAILED_INDEX:
            results[FAILED_INDEX] = BuilderResult(None, "injected build failure")
        return results


@derived_object
class UpdateSpy(PyCostModel):
    """Counts the candidates each ``update`` is handed."""

    def __init__(self):
        super().__init__()
        self.updates: list[int] = []

    def load(self, path):
        pass

    def save(self, path):
        pass

    def update(self, context, candidates, results):
        self.updates.append(len(candidates))

    def predict(self, context, candidates):
        return [0.0] * len(candidates)


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    from costlab.config import config_from_dict
    from costlab.search.builder import PersistentBuilder
    from costlab.search.session import run_session, session_dir

    tmp = tmp_path_factory.mktemp("build-failures")
    cfg = config_from_dict({
        "name": "build-failures", "target": "cpu", "work_dir": str(tmp / "runs"),
        "workloads": [{"name": "gemm", "params": {"M": 32, "N": 32, "K": 32}}], "cost_models": ["xgb"],
        "seeds": [0], "search": {"trials": TRIALS, "trials_per_iter": PER_ITER, "population_size": 32},
        "measure": {"number": 2, "repeat": 1, "min_repeat_ms": 1},
        "mlflow": {"tracking_uri": f"sqlite:///{tmp / 'mlflow.db'}"},
    })
    builder = PersistentBuilder(max_workers=1)
    try:
        result = run_session(cfg, cfg.workloads[0], cfg.cost_models[0], 0, builder=FailThirdBuild(builder))
    finally:
        builder.shutdown()
    return result, session_dir(cfg, cfg.workloads[0], cfg.cost_models[0], 0)


def test_the_session_state_names_the_trials_that_did_not_build(session):
    result, out = session
    assert len(result.trials) == TRIALS
    failed = [FAILED_INDEX + 1, PER_ITER + FAILED_INDEX + 1]
    assert [t.index for t in result.trials if t.build_failed] == failed
    assert json.loads((out / "costlab_session.json").read_text())["build_failed_trials"] == failed


def test_the_online_accuracy_is_logged_at_the_trial_count(session):
    result, _ = session
    # the first batch has no model to validate; the second is validated after all 16 trials
    assert [step for step, _ in result.online_accuracy] == [TRIALS]


def test_a_resumed_session_trains_on_what_the_uninterrupted_one_trained_on(session):
    from tvm.s_tir import meta_schedule as ms

    from costlab.search.session import _warm_start_from_database
    from costlab.targets import make_target
    from costlab.workloads import build_workload

    result, out = session
    mod = build_workload("gemm", {"M": 32, "N": 32, "K": 32})
    database = ms.database.JSONDatabase(work_dir=str(out), module_equality="structural")
    spy = UpdateSpy()
    _warm_start_from_database(database, out, mod, make_target("cpu"), spy, [t.index for t in result.trials
                                                                            if t.build_failed])
    assert spy.updates == [TRIALS - 2]  # as MetaSchedule handed them on: 7 of each batch of 8
    everything = UpdateSpy()
    _warm_start_from_database(database, out, mod, make_target("cpu"), everything)  # a session saved before
    assert everything.updates == [TRIALS]
