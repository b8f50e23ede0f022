"""Every MLflow call of costlab lives here.

Layout of an experiment in MLflow:

- one parent run per experiment config name (tag ``costlab.role=parent``), holding the
  config as an artifact and its flattened values as params. Re-running the config
  resumes the same parent run;
- one child run per (workload, model, seed) (tag ``costlab.role=child``), found again
  by its tags on resume, so its curve continues with the same steps instead of
  leaving a half-finished duplicate.

Step metrics use ``step`` = number of trials measured so far. Latencies are shown in
microseconds (``_us``); every time is wall seconds (``_s``).
"""

from __future__ import annotations

import logging
import math
import os
import re
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from costlab.errors import CostlabError

PARENT, CHILD = "parent", "child"
TUNED_TARGET_TAG = "costlab.tuned_target"  # the exact target (with -mcpu) a child's records were measured with
PRETRAINING_TAG = "costlab.pretraining"  # pretrain_on: the rows the warm start was trained on, in words
RECORDED_TRIALS_TAG = "costlab.recorded_trials"  # a session cut at a lowered budget: the trials it holds
ALL_TRIALS_FAILED_TAG = "costlab.all_trials_failed"  # "true": no trial of the session measured a latency
SEARCH_EXHAUSTED_TAG = "costlab.search_exhausted_at"  # the search ran out of unmeasured candidates after N trials
STALE_CHILD = "stale-child"  # a child run whose tuning database was deleted or replaced
URL_PRINTING = "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"  # set for a tracking URI with a password


def _sqlite_path(tracking_uri: str) -> Path | None:
    """The file of a ``sqlite:///PATH`` tracking URI; None for any other URI."""
    return Path(tracking_uri[len("sqlite:///"):]) if tracking_uri.startswith("sqlite:///") else None


def _client(tracking_uri: str):
    from mlflow.tracking import MlflowClient

    # MLflow logs two timestamped INFO lines when it creates a SQLite store, amid costlab's progress,
    # and an ERROR line and two tracebacks for a database error it then raises (a full disk), which
    # costlab reports in one line
    logging.getLogger("mlflow.store.db.utils").setLevel(logging.CRITICAL)
    if redact_uri(tracking_uri) != tracking_uri:  # MLflow prints each ended run's URL, password and all
        os.environ[URL_PRINTING] = "true"
    store = _sqlite_path(tracking_uri)
    if store is None or str(store) == ":memory:":
        return MlflowClient(tracking_uri=tracking_uri)
    lock_file = store.parent / f".{store.name}.lock"
    if store.is_file() and store.stat().st_size and not lock_file.exists():  # made, and not being made
        return MlflowClient(tracking_uri=tracking_uri)
    # A new SQLite store: MLflow creates and migrates it when a process first opens it (making the
    # client does), and of two runs starting together on it, both migrated it and one failed. The
    # lock beside it is removed after; where it cannot be made, the store is opened as before.
    from filelock import FileLock

    try:
        lock = FileLock(str(lock_file))
        lock.acquire(timeout=120)
    except (OSError, TimeoutError):
        return MlflowClient(tracking_uri=tracking_uri)
    try:
        return MlflowClient(tracking_uri=tracking_uri)
    finally:
        lock.release()
        lock_file.unlink(missing_ok=True)


def _userinfo(uri: str) -> tuple[str, str | None, str] | None:
    """``(user, password, host part)`` of a URI that names a user, as the library that opens it
    reads them: an HTTP client ends the user info at the netloc, SQLAlchemy (MLflow's database
    stores) takes a password up to the last ``@`` (``/``, ``#`` and ``?`` included); None without one."""
    from urllib.parse import urlsplit

    parts = urlsplit(uri)
    if parts.scheme in ("http", "https"):
        netloc = parts.netloc
        if "@" not in netloc:
            return None
        userinfo, host = netloc.rsplit("@", 1)
    else:
        scheme, sep, rest = uri.partition("://")
        if not sep or "@" not in rest or scheme in ("sqlite", "file"):  # a path may hold '@'
            return None
        userinfo, host = rest.rsplit("@", 1)
    user, colon, password = userinfo.partition(":")
    return user, password if colon else None, host


def redact_uri(uri: str) -> str:
    """``uri`` with the password of its user info shown as ``***`` (a database or server URI
    such as ``postgresql://user:secret@host/db``), for messages and what is logged."""
    return redact_text(uri, uri)


def redact_text(text: str, uri: str) -> str:
    """``text`` (a library's error message, say) with ``uri``'s password shown as ``***`` wherever
    the URI's ``user:password@`` appears, as given or percent-decoded."""
    from urllib.parse import unquote

    found = _userinfo(uri)
    if found is None or found[1] is None:
        return text
    user, password, _ = found
    for given in {f"{user}:{password}@", f"{unquote(user)}:{unquote(password)}@"}:
        text = text.replace(given, f"{user}:***@")
    return text


def _request_with_basic_auth(url: str) -> urllib.request.Request:
    """A request for ``url``, its ``user:password@`` (which urllib cannot take in a URL, and
    MLflow's client sends as basic authentication) moved into an Authorization header."""
    import base64
    from urllib.parse import unquote, urlsplit, urlunsplit

    found = _userinfo(url)
    if found is None:
        return urllib.request.Request(url)
    user, password, host = found
    request = urllib.request.Request(urlunsplit(urlsplit(url)._replace(netloc=host)))
    token = base64.b64encode(f"{unquote(user)}:{unquote(password or '')}".encode()).decode()
    request.add_header("Authorization", f"Basic {token}")
    return request


def server_stopped_answering(err: BaseException, tracking_uri: str) -> bool:
    """Whether ``err`` says an HTTP tracking server stopped answering: MLflow's own error once its
    retries are spent ("API request to ... failed"), raised as it is or wrapped by TVM (a measure
    callback's error comes back as a RuntimeError), or requests' own."""
    if not tracking_uri.startswith(("http://", "https://")):
        return False
    import requests

    return isinstance(err, requests.exceptions.RequestException) or "API request to " in str(err)


def check_reachable(tracking_uri: str, timeout_s: float = 5.0, setting: str = "mlflow.tracking_uri") -> None:
    """Fail fast, before any tuning, if an HTTP tracking server does not answer. ``setting``
    names where the URI came from (the config's field, or ``--tracking-uri``)."""
    if tracking_uri.startswith(("http://", "https://")):
        url = tracking_uri.rstrip("/") + "/health"
        try:
            with urllib.request.urlopen(_request_with_basic_auth(url), timeout=timeout_s) as resp:
                if resp.status >= 400:
                    raise OSError(f"HTTP {resp.status}")
        except Exception as err:
            raise CostlabError(
                f"MLflow tracking server {redact_uri(tracking_uri)} is unreachable ({err}); "
                f"start it or change {setting}"
            ) from None
    try:
        _client(tracking_uri).search_experiments(max_results=1)
    except Exception as err:
        raise CostlabError(f"MLflow tracking URI {redact_uri(tracking_uri)} is not usable: "
                           f"{redact_text(str(err), tracking_uri)}") from None


def check_store_exists(tracking_uri: str) -> None:
    """For a command that only reads (``costlab compare``): refuse a local store that is not
    there, rather than create an empty one (and its directories) by reading it."""
    from urllib.parse import urlparse

    parsed = urlparse(tracking_uri)
    if parsed.scheme == "sqlite":
        path = _sqlite_path(tracking_uri)
    elif parsed.scheme in ("", "file"):
        path = Path(parsed.path if parsed.scheme == "file" else tracking_uri)
    else:
        return
    if path is None or str(path) in ("", ":memory:"):
        return
    if not path.exists():
        raise CostlabError(f"tracking URI {redact_uri(tracking_uri)}: no MLflow store there ({path} does not exist); "
                           f"`costlab run CONFIG` creates it, or name the store the experiment logged to")
    if parsed.scheme == "sqlite" and path.is_file() and path.stat().st_size == 0:  # reading would write MLflow's tables
        raise CostlabError(f"tracking URI {redact_uri(tracking_uri)}: {path} is an empty file, no MLflow store; "
                           f"`costlab run CONFIG` creates one, or name the store the experiment logged to")


def check_tracking_uri_read_only(tracking_uri: str, setting: str = "mlflow.tracking_uri") -> None:
    """What ``costlab run --dry-run`` can check of a tracking URI without writing: an HTTP server
    answers; a local store's directory exists or can be created. (Opening a SQLite store creates it.)"""
    from urllib.parse import urlparse

    from costlab.filenames import check_output_dir

    scheme = urlparse(tracking_uri).scheme
    where = f"{setting} {redact_uri(tracking_uri)}"
    if scheme in ("http", "https"):
        check_reachable(tracking_uri, setting=setting)
    elif (store := _sqlite_path(tracking_uri)) is not None:
        check_output_dir(store.parent, f"{where}: directory")
        if store.is_dir() or (store.is_file() and store.stat().st_size and not _is_sqlite_file(store)):
            raise CostlabError(f"{where}: {store} is {'a directory' if store.is_dir() else 'a file'}, not a "
                               f"SQLite database")
    elif scheme in ("", "file"):  # as MLflow says when a run opens it
        raise CostlabError(f"{where}: MLflow's file store is in maintenance mode and refuses it; use a database, "
                           f"e.g. sqlite:///mlflow.db")
    elif scheme.split("+")[0] not in MLFLOW_SCHEMES:
        raise CostlabError(f"{where}: MLflow takes no {scheme!r} URI; it takes {', '.join(MLFLOW_SCHEMES)}")


def check_store_writable(tracking_uri: str, experiment: str, setting: str = "mlflow.tracking_uri") -> None:
    """Before a run logs: the store answers and, where it is local, takes writes, and the folder
    the experiment's artifacts go to can be written. (A new store in a folder it cannot write
    spent almost 2 minutes in MLflow's retries; a read-only one, or an artifact folder it cannot
    write, failed with MLflow's traceback once the run started, and left the parent RUNNING.)"""
    from urllib.parse import urlparse

    from costlab.filenames import check_output_dir

    check_tracking_uri_read_only(tracking_uri, setting)  # an HTTP server is asked there
    where = f"{setting} {redact_uri(tracking_uri)}"
    if (store := _sqlite_path(tracking_uri)) is not None and store.is_file():
        try:
            store.open("r+b").close()
        except OSError as err:
            raise CostlabError(f"{where}: {store} is not writable ({err.strerror or err})") from None
    scheme = urlparse(tracking_uri).scheme
    if scheme not in ("http", "https"):
        check_reachable(tracking_uri, setting=setting)
    exp = _client(tracking_uri).get_experiment_by_name(experiment)
    # a new experiment's artifacts go beside a SQLite store, to ./mlruns for another database this
    # process opens itself (a server, or Databricks, keeps its own)
    own_database = scheme.split("+")[0] in ("postgresql", "mysql", "mssql")
    location = exp.artifact_location if exp is not None else (
        new_experiment_artifacts(tracking_uri, experiment) or (str(Path("mlruns").resolve()) if own_database else None))
    if location is None or urlparse(location).scheme not in ("", "file"):
        return  # a server's artifact store, or a remote one: the server writes there
    check_output_dir(urlparse(location).path if location.startswith("file:") else location,
                     f"the artifacts of MLflow experiment {experiment!r} (from {where}) go to")


MLFLOW_SCHEMES = ("sqlite", "http", "https", "postgresql", "mysql", "mssql", "databricks", "databricks-uc", "uc")


def _is_sqlite_file(path: Path) -> bool:
    with path.open("rb") as f:
        return f.read(16) == b"SQLite format 3\x00"


def new_experiment_artifacts(tracking_uri: str, experiment: str) -> str | None:
    """Where a new experiment's artifacts go: ``mlruns/<experiment>`` beside a SQLite store's
    file, wherever ``costlab`` runs from, so that a store keeps its artifacts with it (MLflow's
    default is ``./mlruns/<id>`` of the directory it runs in); None elsewhere: the store's own
    default (``./mlruns`` for another database, a server's artifact root)."""
    store = _sqlite_path(tracking_uri)
    if store is None or str(store) == ":memory:":
        return None
    folder = re.sub(r"[^A-Za-z0-9._-]", "_", experiment).lstrip(".") or "_"
    return str((store.parent / "mlruns" / folder).resolve())


def _experiment_id(client, name: str, tracking_uri: str) -> str:
    exp = client.get_experiment_by_name(name)
    if exp is None:
        return client.create_experiment(name, artifact_location=new_experiment_artifacts(tracking_uri, name))
    if exp.lifecycle_stage == "deleted":
        client.restore_experiment(exp.experiment_id)
    return exp.experiment_id


def _quoted(value: str) -> str | None:
    """``value`` as a string literal of MLflow's filter syntax; None if it has none (a
    backslash, or both quote characters: the parser would not read it back as written)."""
    if "\\" in value or ("'" in value and '"' in value):
        return None
    return f'"{value}"' if "'" in value else f"'{value}'"


WORK_DIR_TAG = "costlab.work_dir"


def _find_run(client, experiment_id: str, tags: dict[str, str]):
    """The newest run with all of ``tags``, or None."""
    runs = _find_runs(client, experiment_id, tags, max_results=5)
    return runs[0] if runs else None


def _find_runs(client, experiment_id: str, tags: dict[str, str], max_results: int = 1000) -> list:
    """The runs with all of ``tags``, newest first. A value the filter syntax cannot hold (a
    workload param with a quote, say) is matched here instead of in the query."""
    literals = {k: _quoted(v) for k, v in tags.items()}
    query = " and ".join(f"tags.`{k}` = {lit}" for k, lit in literals.items() if lit is not None)
    exact = all(lit is not None for lit in literals.values())
    runs = client.search_runs([experiment_id], filter_string=query, max_results=max_results if exact else 50000,
                              order_by=["attributes.start_time DESC"])
    return [r for r in runs if all(r.data.tags.get(k) == v for k, v in tags.items())]


def _metric_batch(values: dict[str, float], step: int, timestamp_ms: int):
    from mlflow.entities import Metric

    return [Metric(k, float(v), timestamp_ms, step) for k, v in values.items()
            if v is not None and math.isfinite(v)]


@dataclass
class ChildRun:
    """A (workload, model, seed) run and the last step already logged there."""

    run_id: str
    last_step: int
    finished: bool
    start_ms: int  # the run's start: a trial's metrics are stamped at start + its elapsed time
    replaced: str | None = None  # why the child run found was tagged stale-child and this one made instead


class ExperimentTracker:
    """The MLflow side of one ``costlab run`` invocation."""

    def __init__(self, tracking_uri: str, experiment: str):
        self.tracking_uri = tracking_uri
        self.client = _client(tracking_uri)
        self.experiment_id = _experiment_id(self.client, experiment, tracking_uri)
        self.parent_id: str | None = None
        self._running: set[str] = set()  # the child runs this process has set RUNNING and not ended
        self._creating: dict[str, str] | None = None  # the tags of the child run being found or created

    # -- parent ---------------------------------------------------------------
    def start_parent(self, name: str, params: dict[str, str], config_yaml: str) -> str:
        run = _find_run(self.client, self.experiment_id, {"costlab.role": PARENT, "costlab.name": name})
        if run is None:
            run = self.client.create_run(self.experiment_id, run_name=name,
                                         tags={"costlab.role": PARENT, "costlab.name": name})
            self._log_params(run.info.run_id, params)
        else:
            self.client.update_run(run.info.run_id, status="RUNNING")
        self.parent_id = run.info.run_id
        # config.yaml: this invocation's config (with its overrides). Each is also kept under
        # config-history/, since the parent's params are those of its first invocation only.
        self.log_text(self.parent_id, config_yaml, "config.yaml")
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        self.log_text(self.parent_id, config_yaml, f"config-history/config-{stamp}-{os.getpid()}.yaml")
        return self.parent_id

    def finish_parent(self, status: str = "FINISHED") -> None:
        if self.parent_id:
            self.client.set_terminated(self.parent_id, status=status)

    def end_running(self, status: str = "KILLED") -> None:
        """End the parent and the child runs this process has set RUNNING, with ``status``
        (Ctrl-C): those it holds, and the one it was finding or creating when interrupted (the
        store may have created it already). Each is checked in the store first, so one that was
        just ended is left as it ended. The children another process (another machine, say)
        tunes under the same parent are left alone."""
        run_ids = set(self._running)
        if self._creating is not None and (run := _find_run(self.client, self.experiment_id,
                                                            self._creating)) is not None:
            run_ids.add(run.info.run_id)
        for run_id in run_ids:
            if self.client.get_run(run_id).info.status == "RUNNING":
                self.client.set_terminated(run_id, status=status)
            self._running.discard(run_id)
        self.finish_parent(status)

    # -- children -------------------------------------------------------------
    def child(self, workload_key: str, model: str, seed: int, params: dict[str, str],
              n_recorded: int | None = None, work_dir: str | None = None) -> ChildRun:
        """The child run of (workload, model, seed) under this parent, found again on a rerun.

        ``n_recorded``: the records in the session's tuning database. A child run that has
        logged more trials than that belongs to a database that was deleted or replaced:
        it is tagged ``costlab.role = stale-child`` (kept, but no longer read as a result)
        and a new child run starts, so the new curve is not dropped as already logged. So is
        one logged with another budget (``params["trials"]``): MLflow's params cannot change,
        and `costlab compare` scores the runs of a workload at the smallest budget they logged.

        ``work_dir``: the config's work_dir as written (tagged ``costlab.work_dir``): the same
        config run from another work_dir tunes other sessions, logged to a child of their own,
        not into this one's curve (a child logged before the tag is taken as this work_dir's).
        """
        tags = {"costlab.role": CHILD, "costlab.workload": workload_key, "costlab.model": model,
                "costlab.seed": str(seed), "costlab.parent": self.parent_id or ""}
        self._creating = tags
        try:
            return self._child(tags, params, n_recorded, work_dir)
        finally:
            self._creating = None

    def _child(self, tags: dict[str, str], params: dict[str, str], n_recorded: int | None,
               work_dir: str | None) -> ChildRun:
        runs = _find_runs(self.client, self.experiment_id, tags)
        if work_dir is not None:
            runs = [r for r in runs if r.data.tags.get(WORK_DIR_TAG, work_dir) == work_dir]
            tags = {**tags, WORK_DIR_TAG: work_dir}
        run = runs[0] if runs else None
        if run is not None and work_dir is not None and WORK_DIR_TAG not in run.data.tags:
            self.client.set_tag(run.info.run_id, WORK_DIR_TAG, work_dir)
        last, stale_reason = 0, None
        if run is not None:
            # every trial logs trial_failed; best_latency_us only once one has succeeded
            last = max((m.step for key in ("trial_failed", "best_latency_us")
                        for m in self.client.get_metric_history(run.info.run_id, key)), default=0)
            logged_budget = run.data.params.get("trials")
            if n_recorded is not None and last > n_recorded:
                stale_reason = f"logged {last} trials; its tuning database now holds {n_recorded}"
            elif logged_budget is not None and logged_budget != params.get("trials", logged_budget):
                stale_reason = f"logged with a budget of {logged_budget} trials; the config now says {params['trials']}"
            if stale_reason:
                self.client.set_tag(run.info.run_id, "costlab.role", STALE_CHILD)
                self.client.set_tag(run.info.run_id, "costlab.stale_reason", stale_reason)
                run = None
        if run is None:
            name = f"{tags['costlab.workload'].split('(')[0]}-{tags['costlab.model']}-s{tags['costlab.seed']}"
            run = self.client.create_run(self.experiment_id, run_name=name,
                                         tags={**tags, "mlflow.parentRunId": self.parent_id or ""})
            self._running.add(run.info.run_id)
            self._log_params(run.info.run_id, params)
            return ChildRun(run.info.run_id, 0, False, run.info.start_time, replaced=stale_reason)
        finished = run.info.status == "FINISHED"
        if not finished:
            self.client.update_run(run.info.run_id, status="RUNNING")
            self._running.add(run.info.run_id)
        # a run interrupted between its creation and its params lacks some: log those (MLflow
        # params cannot change, so a param already there is kept as it is)
        missing = {k: v for k, v in params.items() if k[:250] not in run.data.params}
        if missing:
            self._log_params(run.info.run_id, missing)
        return ChildRun(run.info.run_id, last, finished, run.info.start_time)

    def log_trials(self, child: ChildRun, trials, flops: float, cost_model_s: float | None = None) -> None:
        """Step metrics for trials not logged yet (a resumed run continues its curve). Each is
        stamped at the run's start plus the trial's session time, so that the MLflow UI's
        relative-time axis reads the session's own clock, for a session logged long after it was
        tuned (``--recorded-only``, a fresh store) too; a trial whose time is unknown, now.
        ``cost_model_s`` (the model's update and predict seconds so far, given after a measured
        batch) is logged at the batch's last trial."""
        metrics = []
        now = int(time.time() * 1000)
        for t in trials:
            if t.index <= child.last_step:
                continue
            values = {
                "best_latency_us": t.best_latency_s * 1e6,
                "best_gflops": flops / t.best_latency_s / 1e9 if math.isfinite(t.best_latency_s) else None,
                "trial_latency_us": t.latency_s * 1e6,
                "trial_failed": float(t.failed),
                "elapsed_s": t.elapsed_s,
                "cost_model_s": cost_model_s if t is trials[-1] else None,
            }
            at = child.start_ms + int(t.elapsed_s * 1000) if math.isfinite(t.elapsed_s) else now
            metrics += _metric_batch(values, t.index, at)
            child.last_step = t.index
        for i in range(0, len(metrics), 900):  # MLflow's log_batch takes at most 1000 metrics
            self.client.log_batch(child.run_id, metrics=metrics[i:i + 900])

    def log_online_accuracy(self, child: ChildRun, points: list[tuple[int, float]]) -> None:
        now = int(time.time() * 1000)
        metrics = []
        for step, acc in points:
            metrics += _metric_batch({"online_pairwise_acc": acc}, step, now)
        if metrics:
            self.client.log_batch(child.run_id, metrics=metrics)

    def finish_child(self, child: ChildRun, final: dict[str, float], artifacts: list[Path],
                     status: str = "FINISHED", tags: dict[str, str] | None = None) -> None:
        step = child.last_step
        for key, value in (tags or {}).items():
            self.client.set_tag(child.run_id, key, value)
        self.client.log_batch(child.run_id, metrics=_metric_batch(final, step, int(time.time() * 1000)))
        for path in artifacts:
            if path is not None and Path(path).exists():
                if Path(path).is_dir():
                    self.client.log_artifacts(child.run_id, str(path), artifact_path=Path(path).name)
                else:
                    self.client.log_artifact(child.run_id, str(path))
        self.client.set_terminated(child.run_id, status=status)
        self._running.discard(child.run_id)
        child.finished = status == "FINISHED"

    def fail_child(self, child: ChildRun) -> None:
        self.client.set_terminated(child.run_id, status="FAILED")
        self._running.discard(child.run_id)

    # -- helpers --------------------------------------------------------------
    def log_text(self, run_id: str, text: str, name: str) -> None:
        self.client.log_text(run_id, text, name)

    def _log_params(self, run_id: str, params: dict[str, str]) -> None:
        from mlflow.entities import Param

        items = [Param(k[:250], str(v)[:6000]) for k, v in params.items()]
        for i in range(0, len(items), 90):
            self.client.log_batch(run_id, params=items[i:i + 90])


# -- reading runs back (costlab compare) --------------------------------------
@dataclass
class RunRecord:
    """A finished child run as read back from MLflow."""

    run_id: str
    workload: str
    model: str
    seed: int
    metrics: dict[str, float]
    curve_steps: list[int]
    curve_best_us: list[float]
    budget: int
    status: str = "FINISHED"  # MLflow's run status: FINISHED once the session ended normally
    tuned_target: str = ""  # the exact target its records were measured with ('' if not logged)
    parent_id: str = ""  # the parent run: the config (by name) that logged it
    start_time_ms: int = 0
    trial_elapsed_s: dict = field(default_factory=dict)  # step -> session seconds at that trial, every trial logged

    @property
    def curve_elapsed_s(self) -> list[float]:
        """The session seconds at each step of the curve (NaN where not logged)."""
        return [self.trial_elapsed_s.get(step, math.nan) for step in self.curve_steps]


def read_child_runs(tracking_uri: str, experiment: str) -> list[RunRecord]:
    """Every child run (one per workload, model and seed) of MLflow experiment ``experiment``:
    its tags, params and step metrics (the convergence curve), as ``costlab compare`` reads
    them. A local store that does not exist is an error, not created empty."""
    check_store_exists(tracking_uri)
    client = _client(tracking_uri)
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        names = [e.name for e in client.search_experiments()]
        raise CostlabError(f"no MLflow experiment {experiment!r} at {redact_uri(tracking_uri)}; found: {', '.join(names) or 'none'}"
                           " (an MLflow store is per machine: where the experiment's tuning databases are here, "
                           "`costlab run CONFIG --recorded-only` logs its complete sessions into this one)")
    if exp.lifecycle_stage == "deleted":  # its runs are still there, and were said to be none
        raise CostlabError(f"MLflow experiment {experiment!r} at {redact_uri(tracking_uri)} is deleted; `mlflow "
                           f"experiments restore --experiment-id {exp.experiment_id}` (with MLFLOW_TRACKING_URI set "
                           f"to the store) brings it back")
    out = []
    page = None
    while True:
        runs = client.search_runs([exp.experiment_id], filter_string="tags.`costlab.role` = 'child'",
                                  max_results=1000, page_token=page)
        for run in runs:
            tags = run.data.tags
            best = sorted(client.get_metric_history(run.info.run_id, "best_latency_us"), key=lambda m: m.step)
            elapsed = {m.step: m.value for m in client.get_metric_history(run.info.run_id, "elapsed_s")}
            out.append(RunRecord(
                run_id=run.info.run_id,
                workload=tags.get("costlab.workload", "?"),
                model=tags.get("costlab.model", "?"),
                seed=int(tags.get("costlab.seed", 0)),
                metrics=dict(run.data.metrics),
                curve_steps=[m.step for m in best],
                curve_best_us=[m.value for m in best],
                trial_elapsed_s=elapsed,
                budget=int(run.data.params.get("trials", 0) or 0),
                status=run.info.status,
                tuned_target=tags.get(TUNED_TARGET_TAG, ""),
                parent_id=tags.get("costlab.parent", ""),
                start_time_ms=run.info.start_time or 0,
            ))
        page = runs.token
        if not page:
            break
    return out


def log_figures(tracking_uri: str, parent_ids, paths: list[Path]) -> None:
    """Attach compare plots to the parent runs of the runs compared (the newest parent of the
    experiment may belong to another config sharing it)."""
    client = _client(tracking_uri)
    for parent_id in sorted({p for p in parent_ids if p}):
        for p in paths:
            client.log_artifact(parent_id, str(p), artifact_path="compare")


# -- offline training and evaluation -------------------------------------------
def _flavor_log(model, name: str) -> str | None:
    """Log the model with MLflow's own flavor where it saves a safe format (XGBoost, LightGBM);
    returns the flavor used. Not torch: MLflow's pytorch flavor pickles the whole module, and a
    pickle runs code when loaded; the GNN's state_dict is in the costlab model directory."""
    import mlflow

    booster = getattr(model, "booster_", None)
    try:
        if booster is not None and type(booster).__module__.startswith("xgboost"):
            mlflow.xgboost.log_model(booster, name=name)
            return "xgboost"
        if booster is not None and type(booster).__module__.startswith("lightgbm"):
            mlflow.lightgbm.log_model(booster, name=name)
            return "lightgbm"
    except Exception:  # the costlab model directory is logged anyway
        return None
    return None


def log_offline_run(tracking_uri: str, experiment: str, run_name: str, params: dict, metrics: dict,
                    model=None, model_dir: Path | None = None, per_task: dict | None = None) -> str:
    """One MLflow run for ``costlab train`` or ``costlab evaluate``; returns its id."""
    import mlflow

    mlflow.set_tracking_uri(tracking_uri)
    mlflow.set_experiment(experiment_id=_experiment_id(_client(tracking_uri), experiment, tracking_uri))  # a deleted one: restored
    with mlflow.start_run(run_name=run_name) as run:
        mlflow.log_params({k[:250]: str(v)[:6000] for k, v in params.items()})
        clean = {k.replace("@", "_at_"): float(v) for k, v in metrics.items()
                 if isinstance(v, (int, float)) and math.isfinite(float(v))}
        mlflow.log_metrics(clean)
        if per_task:
            mlflow.log_dict(per_task, "per_task_metrics.json")
        if model_dir is not None and Path(model_dir).exists():
            mlflow.log_artifacts(str(model_dir), artifact_path="costlab_model")
        if model is not None:
            flavor = _flavor_log(model, "model")
            if flavor:
                mlflow.set_tag("costlab.mlflow_flavor", flavor)
        return run.info.run_id
