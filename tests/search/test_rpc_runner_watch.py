"""The RPC runner names a server that left the tracker between batches (the end-to-end farm
tests run real trackers and servers; here the tracker's answers are given, to time them)."""

import warnings

import pytest

import costlab.search.runner as runner_module
from costlab.config import RunnerSpec
from costlab.search.runner import WatchedRPCRunner


class _Batchless:
    def run(self, runner_inputs):
        return []


def _runner_with_tracker_answers(monkeypatch, answers) -> WatchedRPCRunner:
    """A runner whose tracker answers, one per question, the servers in ``answers`` (None: no answer)."""
    answers = iter(answers)
    monkeypatch.setattr(runner_module, "tracker_summary", lambda tracker: None)
    monkeypatch.setattr(runner_module, "server_addresses", lambda summary, key: next(answers))
    monkeypatch.setattr(runner_module.time, "sleep", lambda s: None)
    return WatchedRPCRunner(_Batchless(), RunnerSpec(kind="rpc", tracker="h:9190", key="k"))


def test_a_server_gone_since_the_last_batch_is_named_once(monkeypatch):
    """A server whose serving process died while its forked session finished the trial left no failed
    trial, so the run named nothing and went on with a smaller farm (a CUDA/RPC audit)."""
    runner = _runner_with_tracker_answers(
        monkeypatch, [{("h", 1), ("h", 2)}, {("h", 1)}, {("h", 1)}, {("h", 1)}, None, {("h", 1)}])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        runner.run([])  # the first batch: both servers
    with pytest.warns(UserWarning, match=r"RPC server h:2 under key 'k' left the tracker since the last batch"):
        runner.run([])  # h:2 gone, and still gone 2 s later
    assert runner.servers_at_batch == {("h", 1)}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        runner.run([])  # named once
        runner.run([])  # the tracker does not answer: nothing is said, the servers known are kept
        assert runner.servers_at_batch == {("h", 1)}
        runner.run([])


def test_a_server_between_sessions_at_the_batchs_start_is_not_named(monkeypatch):
    runner = _runner_with_tracker_answers(  # h:2 back 2 s later
        monkeypatch, [{("h", 1), ("h", 2)}, {("h", 1)}, {("h", 1), ("h", 2)}])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        runner.run([])
        runner.run([])
    assert runner.servers_at_batch == {("h", 1), ("h", 2)}
