"""Measurement through TVM's RPC tracker and two servers on 127.0.0.1.

The tracker and the servers run in their own process groups (they fork children
that would otherwise be left behind) and are ended as groups.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from costlab.search.farm import free_servers, tracker_summary
from tests.e2e.helpers import COSTLAB, run_cli, tiny_config
from tests.e2e.test_mlflow_server import _free_port

pytestmark = pytest.mark.slow
KEY = "costlab-test-cpu"


def _start(args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", *args], start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _stop(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


@pytest.fixture
def farm():
    port = _free_port()
    tracker = _start(["tvm.exec.rpc_tracker", "--host", "127.0.0.1", "--port", str(port),
                      "--port-end", str(port + 1)])
    servers = []
    for _ in range(2):
        p = _free_port()
        servers.append(_start(["tvm.exec.rpc_server", "--host", "127.0.0.1", "--port", str(p),
                               "--port-end", str(p + 1), "--tracker", f"127.0.0.1:{port}", "--key", KEY]))
    address = f"127.0.0.1:{port}"
    deadline = time.time() + 180
    while True:
        try:
            if free_servers(tracker_summary(address), KEY) == 2:
                break
        except Exception:
            pass
        assert time.time() < deadline, "the RPC farm did not come up"
        time.sleep(1)
    yield address, servers
    for proc in [*servers, tracker]:
        _stop(proc)


def _records(tmp):
    files = list((tmp / "runs").rglob("database_tuning_record.json"))
    return [json.loads(line) for line in files[0].read_text().splitlines()] if files else []


def test_farm_status_lists_free_servers(farm, tmp_path):
    address, _ = farm
    proc = run_cli("farm", "status", "--tracker", address, cwd=tmp_path)
    assert KEY in proc.stdout
    row = [line for line in proc.stdout.splitlines() if line.startswith(KEY)][0]
    assert row.split()[1] == "2"


def test_run_through_farm_survives_a_dead_server(farm, tmp_path):
    address, servers = farm
    trials = 16
    config = tiny_config(tmp_path, name="farm", models=("random",), trials=trials,
                         runner={"kind": "rpc", "tracker": address, "key": KEY, "session_timeout_s": 30})
    killed = threading.Event()

    def kill_one_server_after_first_batch():
        deadline = time.time() + 400
        while time.time() < deadline and len(_records(tmp_path)) < 8:
            time.sleep(0.2)
        _stop(servers[0])
        killed.set()

    killer = threading.Thread(target=kill_one_server_after_first_batch, daemon=True)
    killer.start()
    run_cli("run", config, cwd=tmp_path, timeout=900)
    killer.join()
    assert killed.is_set()
    records = _records(tmp_path)
    assert len(records) == trials  # every trial is recorded, the failed ones too
    run_secs = [r[1][1] for r in records]
    ok = [s for s in run_secs if s and s[0] < 1e9]
    assert len(ok) >= trials // 2  # the surviving server measured the rest
