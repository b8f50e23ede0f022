"""The same tiny run against a real ``mlflow server`` on 127.0.0.1, backed by sqlite and by
a real PostgreSQL server (``.ci/start-postgres``; CI starts it and sets
``COSTLAB_TEST_POSTGRES_URI``, otherwise the fixture starts its own)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import tempfile
import urllib.request
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from tests.e2e.helpers import run_cli, tiny_config

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


START_POSTGRES = Path(__file__).resolve().parents[2] / ".ci" / "start-postgres"


@pytest.fixture(scope="module")
def postgres_uri():
    """A PostgreSQL database URI: CI's server, or a throwaway one started here."""
    if os.environ.get("COSTLAB_TEST_POSTGRES_URI"):
        yield os.environ["COSTLAB_TEST_POSTGRES_URI"]
        return
    pg_dir = tempfile.mkdtemp(prefix="costlab-pg-")
    proc = subprocess.run([str(START_POSTGRES), pg_dir, str(_free_port())],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"could not start PostgreSQL (set COSTLAB_TEST_POSTGRES_URI): {proc.stderr[-500:]}")
    yield proc.stdout.strip()
    subprocess.run([str(START_POSTGRES), "--stop", pg_dir], check=False)


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def mlflow_server(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("server")
    if request.param == "postgresql":
        backend = request.getfixturevalue("postgres_uri")
    else:
        backend = f"sqlite:///{tmp / 'server.db'}"
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port),
         "--backend-store-uri", backend,
         "--artifacts-destination", str(tmp / "artifacts"), "--workers", "1"],
        cwd=tmp, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 120
    while True:
        try:
            with urllib.request.urlopen(url + "/health", timeout=2):
                break
        except OSError:
            assert proc.poll() is None, "mlflow server exited"
            assert time.time() < deadline, "mlflow server did not start"
            time.sleep(0.5)
    yield url
    os.killpg(proc.pid, signal.SIGKILL)  # the server forks workers: end the whole group
    proc.wait(timeout=60)


def test_run_against_mlflow_server(tmp_path, mlflow_server):
    config = tiny_config(tmp_path, name="served", models=("random",), trials=8,
                         tracking_uri=mlflow_server)
    run_cli("run", config, cwd=tmp_path)
    client = MlflowClient(tracking_uri=mlflow_server)
    exp = client.get_experiment_by_name("served")
    (child,) = client.search_runs([exp.experiment_id], filter_string="tags.`costlab.role` = 'child'")
    steps = [m.step for m in client.get_metric_history(child.info.run_id, "best_latency_us")]
    assert sorted(steps) == list(range(1, 9))
    names = {a.path for a in client.list_artifacts(child.info.run_id)}
    assert "database_tuning_record.json" in names


def test_unreachable_server_fails_before_tuning(tmp_path):
    port = _free_port()  # nothing listens there
    config = tiny_config(tmp_path, name="nowhere", models=("random",), trials=8,
                         tracking_uri=f"http://127.0.0.1:{port}")
    started = time.time()
    proc = run_cli("run", config, cwd=tmp_path, check=False)
    assert proc.returncode == 2
    assert "unreachable" in proc.stderr
    assert not (tmp_path / "runs").exists()  # nothing was tuned
    assert time.time() - started < 120
