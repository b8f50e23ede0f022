"""Measurement through TVM's RPC tracker and two servers on 127.0.0.1.

The tracker and the servers run in their own process groups (they fork children
that would otherwise be left behind) and are ended as groups.
"""

from __future__ import annotations

import json
import threading
import time

import pytest

from costlab.search.farm import local_farm, stop_group
from tests.e2e.helpers import run_cli, tiny_config

pytestmark = pytest.mark.slow
KEY = "costlab-test-cpu"


@pytest.fixture(scope="module")
def farm():
    """One farm for the tests that leave it as it is (starting one takes seconds)."""
    with local_farm(2, KEY) as f:
        yield f.address, f.servers


@pytest.fixture
def own_farm():
    """A farm of the test's own, for a test that kills a server."""
    with local_farm(2, KEY) as f:
        yield f.address, f.servers


def _records(tmp):
    files = list((tmp / "runs").rglob("database_tuning_record.json"))
    return [json.loads(line) for line in files[0].read_text().splitlines()] if files else []


def test_farm_status_lists_free_servers(farm, tmp_path):
    address, _ = farm
    proc = run_cli("farm", "status", "--tracker", address, cwd=tmp_path)
    assert KEY in proc.stdout
    row = [line for line in proc.stdout.splitlines() if line.startswith(KEY)][0]
    assert row.split()[1] == "2"


@pytest.mark.parametrize("failure", ["server killed", "session crashed"])
def test_a_server_that_leaves_while_it_measures_is_named_and_the_run_goes_on(own_farm, tmp_path, failure):
    """A server killed while it measures, or whose session a kernel crashed (TVM's rpc_server then
    keeps running but leaves the tracker), took its trial as a failed kernel and left the farm
    smaller without a word; now the run names it, and goes on with the server left."""
    import os
    import signal

    import psutil

    from costlab.search.farm import server_addresses, tracker_summary

    address, servers = own_farm
    before = server_addresses(tracker_summary(address), KEY)
    trials = 16
    config = tiny_config(tmp_path, name="farm", models=("random",), trials=trials,
                         runner={"kind": "rpc", "tracker": address, "key": KEY, "session_timeout_s": 30},
                         measure={"number": 2, "repeat": 1, "min_repeat_ms": 500})  # a trial measures for 1 s
    killed = threading.Event()

    def end_it_while_it_measures():
        deadline = time.time() + 400
        while time.time() < deadline and len(_records(tmp_path)) < 8:
            time.sleep(0.1)
        server = psutil.Process(servers[0].pid)
        while time.time() < deadline:  # the server's own worker forks a process for each session
            if sessions := _sessions_of(server):
                break
            time.sleep(0.01)
        time.sleep(0.5)  # past the session's start (TVM's client retries a connection that fails then)
        if failure == "server killed":
            stop_group(servers[0])
        else:
            os.kill(sessions[0].pid, signal.SIGSEGV)
        killed.set()

    killer = threading.Thread(target=end_it_while_it_measures, daemon=True)
    killer.start()
    proc = run_cli("run", config, cwd=tmp_path, timeout=900)
    killer.join()
    assert killed.is_set()
    [(host, port)] = before - server_addresses(tracker_summary(address), KEY)
    said = " ".join(proc.stderr.split())
    assert f"RPC server {host}:{port} under key '{KEY}' left the tracker as a trial failed" in said, said[-3000:]
    records = _records(tmp_path)
    assert len(records) == trials  # every trial is recorded, the failed one too
    ok = [r for r in records if r[1][1] and r[1][1][0] < 1e9]
    assert trials - 2 <= len(ok) < trials  # the server left measured the rest


def _sessions_of(server) -> list:
    """The session processes under an RPC server (its worker's children); one that ends while it
    is looked at is left out (it made the killer thread above die once, and the test fail)."""
    import psutil

    found = []
    for child in server.children(recursive=True):
        try:
            if child.ppid() != server.pid:
                found.append(child)
        except psutil.NoSuchProcess:
            pass
    return found


def test_a_setup_that_cannot_measure_is_refused_before_any_trial(farm, tmp_path):
    """Each would have spent the budget on trials recorded as failed kernels (a key without a
    server even waited in the tracker's queue for good), or on timings of kernels built for
    another CPU than the servers'; now the run stops first, naming why."""
    address, _ = farm
    cases = [
        ({"runner": {"kind": "rpc", "tracker": address, "key": "no-such-key"}},
         f"RPC tracker {address} has no server under key 'no-such-key' (keys there: {KEY})"),
        ({"runner": {"kind": "rpc", "tracker": "127.0.0.1:1", "key": KEY}}, "RPC tracker 127.0.0.1:1 is unreachable"),
        ({"target": "h100"}, "target is CUDA but this machine has no GPU for the local runner"),
        ({"target": "h100", "runner": {"kind": "rpc", "tracker": address, "key": KEY}},
         f"target is CUDA but the RPC servers under key '{KEY}' have no GPU"),
    ]
    for i, (extra, message) in enumerate(cases):
        config = tiny_config(tmp_path, name=f"refused{i}", models=("random",), trials=8, **extra)
        started = time.time()
        proc = run_cli("run", config, cwd=tmp_path, check=False, timeout=120)
        said = " ".join((proc.stdout + proc.stderr).split())
        assert proc.returncode == 2 and message in said, said
        assert time.time() - started < 60
        assert not _records(tmp_path)  # no trial spent


def test_the_rpc_runner_measures_on_every_server_at_once(farm):
    from costlab.config import MeasureSpec, RunnerSpec
    from costlab.search.runner import make_runner

    address, _ = farm
    runner = make_runner(RunnerSpec(kind="rpc", tracker=address, key=KEY), MeasureSpec())
    assert runner.pool._threadpool._max_workers == 2  # TVM's default is 1, whatever the servers
    assert make_runner(RunnerSpec(kind="rpc", tracker=address, key=KEY, workers=3),
                       MeasureSpec()).pool._threadpool._max_workers == 3


def test_a_target_built_for_this_cpu_is_refused_on_servers_of_another(farm, monkeypatch):
    """target: cpu (and a CUDA target's default host) names this machine's CPU; on a farm of another
    CPU the kernels were built for one CPU and timed on another. The servers here run on this
    machine, so this machine is made to name another CPU; an mcpu named on purpose only warns."""
    import costlab.search.runner as runner
    from costlab.config import RunnerSpec
    from costlab.errors import CostlabError
    from costlab.targets import make_target

    address, _ = farm
    spec = RunnerSpec(kind="rpc", tracker=address, key=KEY)
    servers_cpu = runner.this_cpu()
    elsewhere = "skylake" if servers_cpu != "skylake" else "znver4"
    monkeypatch.setattr(runner, "this_cpu", lambda: elsewhere)
    with pytest.raises(CostlabError, match=f"target mcpu '{elsewhere}' is not the CPU of the RPC servers under "
                                           f"key '{KEY}' \\('{servers_cpu}'\\): code would be built for this "
                                           f"machine's CPU and run on another. Name the servers' CPU"):
        runner.check_measurable(spec, make_target({"kind": "llvm", "mcpu": elsewhere, "num-cores": 2}))
    with pytest.raises(CostlabError, match=f"target host mcpu '{elsewhere}' is not the CPU"):
        runner.check_measurable(spec, make_target({"kind": "cuda", "arch": "sm_90",
                                                   "host": {"kind": "llvm", "mcpu": elsewhere}}))
    monkeypatch.setattr(runner, "this_cpu", lambda: servers_cpu)
    with pytest.warns(UserWarning, match="target mcpu 'x86-64-v3' is not the CPU.*measuring as the config says"):
        assert runner.check_measurable(spec, make_target({"kind": "llvm", "mcpu": "x86-64-v3"})) == 2
    assert runner.check_measurable(spec, make_target("cpu")) == 2


def test_the_cpu_check_gives_up_when_every_server_turned_busy(own_farm, monkeypatch):
    """The tracker's summary said a server was free, and by the time of the request none was:
    TVM's request has no timeout, so the check waited in the tracker's queue until one freed up."""
    import gc

    from tvm import rpc

    import costlab.search.runner as runner
    from costlab.config import RunnerSpec
    from costlab.search.farm import parse_tracker
    from costlab.targets import make_target

    address, _ = own_farm
    held = [rpc.connect_tracker(*parse_tracker(address)).request(KEY, session_timeout=120) for _ in range(2)]
    with pytest.warns(UserWarning, match=f"every RPC server under key '{KEY}' is busy; the servers' CPU and GPU "
                                         "were not checked"):  # the tracker says so: nothing is asked
        assert runner.check_measurable(RunnerSpec(kind="rpc", tracker=address, key=KEY), make_target("cpu")) == 2
    monkeypatch.setattr(runner, "free_servers", lambda summary, key: 1)  # the summary, read a moment before
    started = time.time()
    with pytest.warns(UserWarning, match=f"no RPC server under key '{KEY}' answered within 10 s"):
        servers = runner.check_measurable(RunnerSpec(kind="rpc", tracker=address, key=KEY), make_target("cpu"))
    assert servers == 2 and time.time() - started < 30
    del held
    gc.collect()


@pytest.mark.parametrize("reply", [None, b"HTTP/1.0 400 Bad Request\r\n\r\n"])
def test_farm_status_on_a_port_that_is_not_a_tracker_answers_within_its_timeout(reply):
    """A port that accepts and then says nothing (or something else) is named at once; TVM's
    own client waits forever for the first."""
    import socket

    from costlab.errors import CostlabError
    from costlab.search.farm import tracker_summary

    test_over = threading.Event()
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]

        def answer():
            peer, _ = listener.accept()
            with peer:
                peer.recv(4)
                if reply is None:
                    test_over.wait(120)  # silent until the test ends: only the client's timeout ends the wait
                else:
                    peer.sendall(reply)

        threading.Thread(target=answer, daemon=True).start()
        started = time.monotonic()
        try:
            with pytest.raises(CostlabError) as raised:
                tracker_summary(f"127.0.0.1:{port}", timeout_s=1.0)
        finally:
            test_over.set()
        assert time.monotonic() - started < 60  # not the peer's 120 s (nor TVM's forever)
    said = "gave no answer as a TVM RPC tracker within 1 s" if reply is None else "answered, but not as a TVM RPC tracker"
    assert str(raised.value).startswith(f"127.0.0.1:{port} ") and said in str(raised.value), raised.value


def take_two_neighbouring_ports():
    """Listening sockets on a free port and the one after it. The port after a free one may be
    taken (by a parallel test), so try again with a new free port rather than fail."""
    import socket

    for _ in range(50):
        first = socket.socket()
        first.bind(("127.0.0.1", 0))
        second = socket.socket()
        try:
            second.bind(("127.0.0.1", first.getsockname()[1] + 1))
        except (OSError, OverflowError):  # taken, or past port 65535
            first.close()
            second.close()
            continue
        for s in (first, second):
            s.listen()
        return [first, second]
    raise AssertionError("no two neighbouring free ports on 127.0.0.1 in 50 tries")


def test_a_farm_whose_tracker_cannot_start_says_so_at_once(monkeypatch):
    """Its port taken between free_port and the tracker's start: the tracker exits, and the farm
    waited its whole start timeout (180 s) before saying only that it did not come up."""
    import costlab.search.farm as farm_module
    from costlab.errors import CostlabError

    taken = take_two_neighbouring_ports()
    port = taken[0].getsockname()[1]
    monkeypatch.setattr(farm_module, "free_port", lambda: port)
    start = time.monotonic()
    try:
        with pytest.raises(CostlabError, match=rf"`python -m tvm.exec.rpc_tracker --host 127.0.0.1 --port {port} .*` "
                                               r"exited with status \d+"):
            with local_farm(1, KEY, start_timeout_s=120):
                pass
    finally:
        for s in taken:
            s.close()
    assert time.monotonic() - start < 60


@pytest.mark.parametrize("outage", ["server", "tracker", "frozen"])
def test_a_farm_that_stops_measuring_stops_the_run_and_records_no_failed_trial(tmp_path, outage):
    """With its only server gone, a run waited in the tracker's queue without end, and on a
    frozen server too; with its tracker gone, every later trial took a minute and was recorded as
    a failed kernel. Now the run stops, says why, records nothing of the batch in flight, and the
    same command resumes."""
    import os
    import signal
    import subprocess

    from mlflow.tracking import MlflowClient

    from tests.e2e.helpers import COSTLAB

    trials = 32
    with local_farm(1, KEY) as farm:
        limits = {"session_timeout_s": 5, "queue_timeout_s": 5} if outage == "frozen" else {}
        config = tiny_config(tmp_path, name="outage", models=("random",), trials=trials,
                             runner={"kind": "rpc", "tracker": farm.address, "key": KEY, **limits})
        proc = subprocess.Popen([*COSTLAB, "run", str(config)], cwd=tmp_path, start_new_session=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.time() + 300
            while len(_records(tmp_path)) < 8:  # the first batch is measured
                assert proc.poll() is None and time.time() < deadline, "the run never measured its first batch"
                time.sleep(0.2)
            if outage == "frozen":  # still registered with the tracker, answering nothing
                os.killpg(farm.servers[0].pid, signal.SIGSTOP)
            else:
                stop_group(farm.servers[0] if outage == "server" else farm.tracker)
            _, stderr = proc.communicate(timeout=120)  # the tracker is asked every 10 s
        finally:
            if proc.poll() is None:
                stop_group(proc)
        said = " ".join(stderr.split())
        assert proc.returncode == 2, said[-3000:]
        why = {"server": f"RPC tracker {farm.address} has no server under key '{KEY}' (keys there: none)",
               "tracker": f"RPC tracker {farm.address} is unreachable",
               "frozen": "a measurement got no result in "}[outage]
        assert f"the RPC farm stopped measuring: {why}" in said and "Traceback" not in said, said[-3000:]
        before = _records(tmp_path)
        assert 8 <= len(before) < trials
        assert all(r[1][1] and r[1][1][0] < 1e9 for r in before)  # no trial recorded as a failed kernel
        client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
        runs = client.search_runs([client.get_experiment_by_name("outage").experiment_id])
        assert sorted(r.info.status for r in runs) == ["KILLED", "KILLED"]  # not left RUNNING
        if outage == "server":  # the farm measures again: the same command resumes
            from costlab.search.farm import free_servers, tracker_summary

            farm.start_server()
            deadline = time.time() + 120
            while not free_servers(tracker_summary(farm.address), KEY):
                assert time.time() < deadline, "the new server never registered"
                time.sleep(0.5)
            run_cli("run", config, cwd=tmp_path, timeout=600)
            after = _records(tmp_path)
            assert len(after) == trials and after[:len(before)] == before
            assert all(r[1][1] and r[1][1][0] < 1e9 for r in after)


@pytest.mark.parametrize("tracker", ["127.0.0.1:0", "127.0.0.1:99999"])
def test_farm_status_refuses_a_port_out_of_range(tmp_path, tracker):
    """It said 'unreachable: Connection refused', where a config with the same value is refused."""
    proc = run_cli("farm", "status", "--tracker", tracker, cwd=tmp_path, check=False)
    assert proc.returncode == 2 and f"tracker '{tracker}': the port must be 1..65535" in " ".join(proc.stderr.split())
