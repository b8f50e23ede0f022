"""The same tiny run against a real ``mlflow server`` on 127.0.0.1, backed by
a real PostgreSQL server (``.ci/start-postgres``; CI starts it and sets
``COSTLAB_TEST_POSTGRES_URI``, otherwise the fixture starts its own)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from costlab.search.farm import free_port, stop_group
from tests.e2e.helpers import run_cli, tiny_config

pytestmark = pytest.mark.slow


START_POSTGRES = Path(__file__).resolve().parents[2] / ".ci" / "start-postgres"


@pytest.fixture(scope="module")
def backend_store(tmp_path_factory):
    """A PostgreSQL database URI (CI's server, or a throwaway one started here); sqlite only
    where PostgreSQL cannot be started at all."""
    if os.environ.get("COSTLAB_TEST_POSTGRES_URI"):
        yield os.environ["COSTLAB_TEST_POSTGRES_URI"]
        return
    pg_dir = tempfile.mkdtemp(prefix="costlab-pg-")
    proc = subprocess.run([str(START_POSTGRES), pg_dir, str(free_port())], capture_output=True, text=True)
    if proc.returncode != 0:
        subprocess.run([str(START_POSTGRES), "--stop", pg_dir], check=False)  # a half-started server
        shutil.rmtree(pg_dir, ignore_errors=True)
        print(f"PostgreSQL could not start, testing the server on sqlite: {proc.stderr[-500:]}")
        yield f"sqlite:///{tmp_path_factory.mktemp('server-db') / 'server.db'}"
        return
    yield proc.stdout.strip()
    subprocess.run([str(START_POSTGRES), "--stop", pg_dir], check=False)  # stops it and removes pg_dir


@pytest.fixture(scope="module")
def mlflow_server(backend_store, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("server")
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port),
         "--backend-store-uri", backend_store,
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
    stop_group(proc)  # the server forks workers: end the whole group


def test_run_against_mlflow_server(tmp_path, mlflow_server, backend_store):
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
    if not backend_store.startswith("postgresql"):  # said, not passed: the PostgreSQL part did not run
        pytest.skip("PostgreSQL could not start (see the captured output): the server was tested on sqlite")
    import psycopg  # the curve lives in PostgreSQL's tables

    with psycopg.connect(backend_store) as db:
        (n,) = db.execute("SELECT count(*) FROM metrics WHERE run_uuid = %s AND key = 'best_latency_us'",
                          (child.info.run_id,)).fetchone()
    assert n == 8


def test_unreachable_server_fails_before_tuning(tmp_path):
    port = free_port()  # nothing listens there
    config = tiny_config(tmp_path, name="nowhere", models=("random",), trials=8,
                         tracking_uri=f"http://127.0.0.1:{port}")
    started = time.time()
    proc = run_cli("run", config, cwd=tmp_path, check=False)
    assert proc.returncode == 2
    assert "unreachable" in proc.stderr
    assert not (tmp_path / "runs").exists()  # nothing was tuned
    assert time.time() - started < 120


def _start_server(store: str, port: int, cwd: Path) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port),
         "--backend-store-uri", store, "--artifacts-destination", str(cwd / "artifacts"), "--workers", "1"],
        cwd=cwd, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                return proc
        except OSError:
            assert proc.poll() is None and time.time() < deadline, "mlflow server did not start"
            time.sleep(0.5)


def test_a_server_that_stops_answering_mid_run_stops_it_with_a_message_and_a_rerun_logs_all(tmp_path):
    """The server killed while the first session measured: costlab waited through MLflow's retries,
    then ended in some 1,400 lines of chained tracebacks, its other combinations never tuned and
    nothing said of the records; its clean-up calls each waited through the retries again."""
    import json

    port, store = free_port(), f"sqlite:///{tmp_path / 'server.db'}"
    url = f"http://127.0.0.1:{port}"
    config = tiny_config(tmp_path, name="outage", models=("random", "tvm-xgb"), trials=16, tracking_uri=url)
    server = _start_server(store, port, tmp_path)
    env = dict(os.environ, PYTHONUNBUFFERED="1", MLFLOW_HTTP_REQUEST_MAX_RETRIES="0",
               MLFLOW_HTTP_REQUEST_TIMEOUT="10")
    run = subprocess.Popen([sys.executable, "-m", "costlab", "run", str(config)], cwd=tmp_path, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for line in run.stdout:
            if "[1/2]" in line and "8/16 trials" in line:  # the first batch is logged: the server goes
                stop_group(server)
                break
        stopped = time.time()
        out, err = run.communicate(timeout=300)
        waited_s = time.time() - stopped
    finally:
        if run.poll() is None:
            run.kill()
        stop_group(server)
    assert run.returncode == 2, out[-2000:] + err[-2000:]
    assert waited_s < 60, waited_s  # no clean-up call waiting on the server again
    said = " ".join(err.split())
    assert f"MLflow tracking server {url} stopped answering while [1/2] gemm · random · seed 0 was logged" in said
    assert "every measured record is safe in" in said and "Traceback" not in err, err[-3000:]
    session = next((tmp_path / "runs").glob("gemm*/random/seed0"))
    state = json.loads((session / "costlab_session.json").read_text())
    assert state["trials"] >= 8 and len((session / "database_tuning_record.json").read_text().splitlines()) >= 8

    server = _start_server(store, port, tmp_path)  # back, on the same store
    try:
        run_cli("run", config, cwd=tmp_path)
        client = MlflowClient(tracking_uri=url)
        runs = client.search_runs([client.get_experiment_by_name("outage").experiment_id])
        children = [r for r in runs if r.data.tags.get("costlab.role") == "child"]
        steps = [sorted(m.step for m in client.get_metric_history(c.info.run_id, "best_latency_us"))
                 for c in children]
    finally:
        stop_group(server)
    assert sorted(r.data.tags["costlab.model"] for r in children) == ["random", "tvm-xgb"]
    assert {r.info.status for r in runs} == {"FINISHED"}
    assert steps == [list(range(1, 17))] * 2


def test_a_password_in_the_tracking_uri_reaches_the_server_and_is_never_logged(tmp_path, mlflow_server):
    """``http://user:password@host`` is how MLflow's client takes basic authentication: the
    reachability check refused it (urllib takes no user info), and the password was logged as a
    param, in config.yaml, in the printed compare command and in the compare report."""
    secret = "s3cretPW"
    uri = mlflow_server.replace("http://", f"http://alice:{secret}@")
    config = tiny_config(tmp_path, name="with-password", models=("random",), trials=4, tracking_uri=uri)
    ran = run_cli("run", config, cwd=tmp_path)
    compared = run_cli("compare", "with-password", "--tracking-uri", uri, "--out", tmp_path / "report", cwd=tmp_path)
    client = MlflowClient(tracking_uri=mlflow_server)
    exp = client.get_experiment_by_name("with-password")
    (parent,) = client.search_runs([exp.experiment_id], filter_string="tags.`costlab.role` = 'parent'")
    assert parent.data.params["mlflow.tracking_uri"] == mlflow_server.replace("http://", "http://alice:***@")
    logged = [client.download_artifacts(parent.info.run_id, "config.yaml", str(tmp_path))]
    logged += [p for p in (tmp_path / "report").rglob("*") if p.is_file() and p.suffix == ".md"]
    assert len(logged) == 2
    for text in [ran.stdout, ran.stderr, compared.stdout, compared.stderr, *(Path(p).read_text() for p in logged)]:
        assert secret not in text
    assert "alice:***@" in ran.stdout and "alice:***@" in Path(logged[1]).read_text()
    assert "(with the password for ***)" in " ".join(ran.stdout.split())  # the Compare-with line, to paste


def test_stopping_the_throwaway_postgresql_removes_its_folder(tmp_path):
    """Each test run (and each CI run) left its PostgreSQL folder in /tmp, about 45 MB."""
    pg_dir = Path(tempfile.mkdtemp(prefix="costlab-pg-"))  # as the fixture's (the server's user cannot enter tmp_path)
    try:
        started = subprocess.run([str(START_POSTGRES), str(pg_dir), str(free_port())], capture_output=True, text=True)
        if started.returncode != 0:
            pytest.skip(f"PostgreSQL could not start here: {(started.stderr or started.stdout)[-300:]}")
        assert (pg_dir / "data" / "PG_VERSION").is_file()
        subprocess.run([str(START_POSTGRES), "--stop", str(pg_dir)], check=True)
        assert not pg_dir.exists()
    finally:
        subprocess.run([str(START_POSTGRES), "--stop", str(pg_dir)], check=False)
        shutil.rmtree(pg_dir, ignore_errors=True)
    (tmp_path / "other").mkdir()  # a folder it did not fill is left alone
    subprocess.run([str(START_POSTGRES), "--stop", str(tmp_path / "other")], check=True)
    assert (tmp_path / "other").is_dir()
