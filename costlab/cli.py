"""The ``costlab`` command line: thin typer commands over the library.

Every user-facing error is a :class:`CostlabError`: one clear message on stderr and
exit status 2, never a traceback.
"""

from __future__ import annotations

import shlex
import sys
import warnings
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console

from costlab.errors import CostlabError
from costlab.tracking import redact_uri

PYTHON_WARNING_FORMAT = warnings.formatwarning

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="costlab: learned cost models for TVM MetaSchedule.")
# Tables stay readable in log files and CI output, where there is no terminal width.
console = Console(width=None if sys.stdout.isatty() else 160)
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 160, soft_wrap=True)  # an error: one line


MAX_SEED = 2**32 - 1  # numpy's and the models' seeds


def _named_experiment(name: str) -> str:
    """``--experiment``, checked before any work (MLflow refused an empty name after it)."""
    if not name.strip():
        raise typer.BadParameter(f"{name!r}: an MLflow experiment needs a name")
    return name


@app.command()
def run(
    config: Path = typer.Argument(..., help="experiment YAML"),
    overrides: Optional[List[str]] = typer.Argument(None, help="dotted overrides, e.g. search.trials=64"),
    dry_run: bool = typer.Option(False, "--dry-run", help="check CONFIG and print what each combination would "
                                 "do (new, resume, complete, refused); tune nothing, write nothing"),
    recorded_only: bool = typer.Option(False, "--recorded-only", help="log only the complete sessions of CONFIG's "
                                       "work directory (e.g. into a fresh MLflow store) and tune nothing; the "
                                       "other combinations are listed and left as they are"),
):
    """Tune every (workload × cost model × seed) of CONFIG and log to MLflow."""
    from costlab.config import load_config
    from costlab.experiment import run_experiment

    cfg = load_config(config, overrides or [])
    if dry_run:
        _print_plan(cfg, recorded_only)
        return
    console.print(f"[bold]costlab run[/] {cfg.name}: {len(cfg.workloads)} workload(s) × "
                  f"{len(cfg.cost_models)} model(s) × {len(cfg.seeds)} seed(s), "
                  f"{cfg.search.trials} trials each → MLflow {redact_uri(cfg.mlflow.tracking_uri)} "
                  f"(experiment {cfg.experiment_name!r})" + (", recorded sessions only" if recorded_only else ""))
    outcomes = run_experiment(cfg, console, recorded_only=recorded_only)
    failed = [o for o in outcomes if o.status == "failed"]
    skipped = sum(o.status == "skipped" for o in outcomes)
    failed_trials = sum(o.failed_trials for o in outcomes if o.status != "failed")
    shown_uri = redact_uri(cfg.mlflow.tracking_uri)
    console.print(f"done: {len(outcomes) - len(failed)} combination(s) ok"
                  + (f" ({skipped} complete and logged before: skipped)" if skipped else "")
                  + f", {len(failed)} failed"
                  + (f" ({failed_trials} trial(s) of the ok ones failed to build or run: said above)"
                     if failed_trials else "") + ". "
                  f"Compare with: costlab compare {shlex.quote(cfg.experiment_name)} --tracking-uri "
                  f"{shlex.quote(shown_uri)}"
                  + (" (with the password for ***)" if shown_uri != cfg.mlflow.tracking_uri else ""))
    if failed:
        raise typer.Exit(1)


def _print_plan(cfg, recorded_only: bool = False) -> None:
    from rich.table import Table

    from costlab.experiment import check_some_session_complete, estimate_seconds_left, lock_is_held, plan_experiment
    from costlab.filenames import check_output_dir
    from costlab.tracking import check_tracking_uri_read_only
    from costlab.workloads import workload_key

    plans = plan_experiment(cfg)
    if recorded_only:  # as run_experiment: only the complete sessions are logged, the others left as they are
        untouched = [plan for *_, plan in plans if plan.action != "complete"]
    table = Table(title=f"costlab run {cfg.name} --dry-run{' --recorded-only' if recorded_only else ''}: "
                        f"work_dir {cfg.work_path}")
    for column in ("#", "workload", "model", "seed", "what it would do"):
        table.add_column(column)
    for n, (workload, model, seed, plan) in enumerate(plans, start=1):
        said = plan.describe()
        if recorded_only:
            said = f"logged: {said}" if plan.action == "complete" else f"left untuned (--recorded-only): {said}"
        table.add_row(str(n), workload_key(workload.name, workload.params), model.display_name, str(seed), said)
    console.print(table)
    if lock_is_held(cfg.work_path):
        console.print(f"[yellow]note:[/] another costlab run is working in work_dir {cfg.work_path} now (its lock is "
                      "held): this plan is of the records as they are at this moment, and a run started now would be "
                      "refused until it ends", highlight=False)
    check_tracking_uri_read_only(cfg.mlflow.tracking_uri)
    check_output_dir(cfg.work_path, "field work_dir")
    if recorded_only:
        check_some_session_complete(cfg, plans)
        console.print(f"{len(plans)} combination(s): {len(plans) - len(untouched)} complete, to be logged to MLflow "
                      f"{redact_uri(cfg.mlflow.tracking_uri)}; {len(untouched)} left untuned. Nothing was tuned or written.")
        return
    count = {action: sum(plan.action == action for *_, plan in plans)
             for action in ("new", "resume", "complete", "refused")}
    left = sum(plan.trials_left for *_, plan in plans)
    seconds, unknown = estimate_seconds_left(plans)
    if not left:
        estimate = ""
    elif unknown == sum(plan.trials_left > 0 for *_, plan in plans):
        estimate = " (no recorded session of these workloads to estimate the time by)"
    else:
        estimate = (f", about {_duration(seconds)} at the seconds per trial of this work_dir's recorded sessions "
                    "of the same workload and model, else of the same workload"
                    + (f" ({unknown} combination(s) without any not counted)" if unknown else ""))
    if left:  # what run_experiment checks first, before the counts (an RPC farm is not asked)
        from costlab.experiment import check_can_measure
        from costlab.targets import make_target

        check_can_measure(cfg, make_target(cfg.target), ask_farm=False)
    console.print(f"{len(plans)} combination(s): {count['new']} new, {count['resume']} to resume, "
                  f"{count['complete']} complete, {count['refused']} refused; {left} trial(s) left to measure"
                  f"{estimate}. Nothing was tuned or written.")
    if left and cfg.runner.kind == "rpc":  # `costlab run` asks it before the first trial, and may refuse there
        console.print(f"The RPC farm was not asked (tracker {cfg.runner.tracker}, key {cfg.runner.key!r}): "
                      f"`costlab farm status --tracker {cfg.runner.tracker}` lists its servers, and the run "
                      f"checks them before its first trial", highlight=False)
    if count["refused"]:
        raise typer.Exit(2)


def _duration(seconds: float) -> str:
    """``42 s``, ``17 min`` or ``3.5 h``."""
    if seconds < 60:
        return f"{max(seconds, 1):.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"


def _redacted_argument(arg: str) -> str:
    """A command-line argument with a URI's password shown as ``***`` (``--opt=URI`` too)."""
    option, eq, value = arg.partition("=")
    return f"{option}={redact_uri(value)}" if eq and option.startswith("--") else redact_uri(arg)


@app.command()
def compare(
    experiment: str = typer.Argument(..., help="MLflow experiment name"),
    tracking_uri: str = typer.Option("sqlite:///mlflow.db", help="MLflow tracking URI"),
    out: Path = typer.Option(Path("experiments/results"), help="where the report (OUT/EXPERIMENT.md) and its plots (OUT/EXPERIMENT/) go"),
    reference_experiment: Optional[str] = typer.Option(
        None, help="an experiment whose runs also count for the reference latency (e.g. a long run)"),
    baseline: Optional[str] = typer.Option(
        None, help="the model (label) every ratio is taken against (default: tvm-xgb, MetaSchedule's own), "
                   "e.g. the control of a lever"),
):
    """Final best latency, T95/T90 (trials to 95%/90% of the best known), AUC and wall time."""
    import os
    import shlex
    import sys

    from costlab.filenames import check_output_dir, safe_file_name
    from costlab.report.compare import (compare_experiment, comparison_report, log_comparison_plots,
                                        print_comparison)
    from costlab.tracking import check_reachable, check_store_exists

    check_output_dir(out, "--out")
    check_store_exists(tracking_uri)
    check_reachable(tracking_uri, setting="--tracking-uri")
    result = compare_experiment(tracking_uri, experiment, out, reference_experiment, baseline)
    print_comparison(result, console)
    report = Path(out) / f"{safe_file_name(experiment)}.md"  # an MLflow name may hold '/'; its plots' folder too
    report.parent.mkdir(parents=True, exist_ok=True)
    command = shlex.join(["costlab", *map(_redacted_argument, sys.argv[1:])])  # a report may be committed
    text = comparison_report(result, command, Path(out))
    if report.is_file() and _findings(report.read_text()) != _findings(text):  # another store's or state's: kept
        previous = report.with_name(f"{report.stem}.previous.md")
        os.replace(report, previous)
        err_console.print(f"[yellow]note:[/] the report that was at {report} is kept as {previous}", highlight=False)
    report.write_text(text)
    console.print(f"report: {report}")
    failed = log_comparison_plots(result, tracking_uri)
    if failed:
        err_console.print(f"[yellow]note:[/] the plots are in {Path(out) / safe_file_name(experiment)} but were not "
                          f"attached to the MLflow parent run(s) {', '.join(result.parent_ids)}: {failed}",
                          highlight=False)


@app.command()
def features():
    """List the feature extractors and their dimensions."""
    from rich.table import Table

    import costlab.features as feats

    table = Table("name", "kind", "dimensions", "version")
    for name in feats.available():
        ex = feats.get(name)
        table.add_row(name, ex.kind, str(len(ex.feature_names)), str(ex.version))
    console.print(table)


@app.command()
def models():
    """List the registered cost models (built-in and plug-ins)."""
    from rich.table import Table

    import costlab.models as m

    table = Table("name", "default features", "hyper-parameters")
    for name in m.available():
        cls = m.get(name)
        try:
            model = cls()  # default_features may depend on the hyper-parameters (a property)
            params, features = model.get_params(), getattr(model, "default_features", "?")
        except Exception:  # noqa: BLE001  (a plug-in that needs arguments is still listed)
            params, features = {}, getattr(cls, "default_features", "?")
        table.add_row(name, str(features) if isinstance(features, str) else "?",
                      ", ".join(f"{k}={v}" for k, v in params.items()))
    console.print(table)
    if "tvm-xgb" in m.available():
        console.print("tvm-xgb's hyper-parameters apply to costlab train; in a tuning config it is TVM's own "
                      "XGBModel with TVM's settings and takes no params", highlight=False)
    for why in m.MODELS.load_failures().values():
        err_console.print(why, style="red", markup=False, highlight=False)


dataset_app = typer.Typer(help="Datasets built from MetaSchedule tuning databases.")
app.add_typer(dataset_app, name="dataset")


def _progress_printer():
    """A ``progress(stage, done, total)`` callback that prints a line every few percent."""
    last = {}

    def progress(stage: str, done: int, total: int) -> None:
        step = max(1, total // 20)
        if done == total or done - last.get(stage, -step) >= step:
            last[stage] = done
            console.print(f"  {stage}: {done}/{total}", highlight=False)

    return progress


def _findings(report: str) -> list[str]:
    """A comparison report's lines but those that change with every run of the same comparison
    (the date it was produced, the machine's load)."""
    return [line for line in report.splitlines() if not line.startswith(("Produced by ", "Report written on"))]


@dataset_app.command("build")
def dataset_build(
    db: List[Path] = typer.Option(..., "--db", help="a MetaSchedule database directory (repeatable)"),
    out: Path = typer.Option(..., help="the dataset directory, e.g. datasets/NAME: new or empty"),
    force: bool = typer.Option(False, "--force", help="replace the dataset already in --out (other files stay)"),
    features: List[str] = typer.Option([], "--features", help="also fill this extractor's feature cache "
                                       "(repeatable): its extraction is the traces' replay check, so they are "
                                       "replayed once, not once here and again at the first training"),
):
    """Turn tuning databases into a dataset (parquet): one row per measured record."""
    from costlab.data.dataset import META_FILE, build_dataset, dataset_features
    from costlab.features import get as get_extractor
    from costlab.filenames import check_output_dir, check_replaceable_dir

    check_output_dir(out, "--out")
    for one in db:
        if out.resolve() == one.resolve():
            raise CostlabError(f"--out {out}: is also a --db; a dataset goes in a directory of its own")
    check_replaceable_dir(out, "--out", META_FILE, "costlab dataset", force)
    for name in features:  # named before any work (the build checks them again)
        try:
            get_extractor(name)
        except CostlabError as err:
            raise CostlabError(f"--features {name}: {err}") from None
    summary = build_dataset(db, out, progress=_progress_printer(), features=features)
    console.print(str(summary), highlight=False)
    for name in dict.fromkeys(features):
        _, rows = dataset_features(out, name)  # the cache just written
        console.print(f"features {name}: {len(rows)} of {summary.n_rows} rows, cached", highlight=False)


def _split_rows(df, split: str, fold: int, seed: int, test_fraction: float, dataset=None, k: int = 5):
    """(train rows, test rows) of fold ``fold`` of a workload split of the dataset ``df``
    (read from ``dataset``, which errors name; ``k``: kfold's folds); ``none``: all rows train."""
    import numpy as np

    from costlab.data.splits import make_splits

    _check_split(split)
    rows = df["row"].to_numpy()
    if split == "none":
        return rows, rows[:0]
    try:
        splits = make_splits(df, split, seed=seed, test_fraction=test_fraction, k=k)
    except CostlabError as err:
        where = f"dataset {dataset}: " if dataset is not None else ""
        raise CostlabError(f"{where}--split {split}: {err} (--split none uses every row)") from None
    if not 0 <= fold < len(splits):
        raise CostlabError(f"--fold {fold}: split {split!r} has folds 0..{len(splits) - 1}")
    train_mask, test_mask = splits[fold].masks(len(df))
    return rows[np.asarray(train_mask)], rows[np.asarray(test_mask)]


def _check_split_options(split: str | None, fold: int | None, test_fraction: float | None) -> None:
    """``--split``, ``--fold`` and ``--test-fraction`` as given (None: not given), before any work."""
    _check_split(split)
    if test_fraction is not None and not 0 < test_fraction < 1:
        raise CostlabError(f"--test-fraction {test_fraction:g}: must be between 0 and 1, both exclusive")
    if split == "none" and fold:
        raise CostlabError(f"--fold {fold}: --split none has no folds (it takes every row)")


def _say_unrankable_test_workloads(df, test_rows) -> None:
    """Warn about test workloads with fewer than two successful records: nothing to rank there."""
    test = df.set_index("row").loc[test_rows]
    ok = test[test["status"] == "ok"].groupby("workload_key").size()
    thin = sorted(w for w in set(test["workload_key"]) if ok.get(w, 0) < 2)
    if thin:
        err_console.print(f"[yellow]warning:[/] {len(thin)} of the {test['workload_key'].nunique()} test workload(s) "
                          f"have fewer than 2 successful records, so nothing to rank: {', '.join(thin)} (another "
                          f"split seed or fold picks others)", highlight=False)


def _check_split(split: str | None) -> None:
    if split is not None and split not in _split_names():
        raise CostlabError(f"--split {split!r}: must be one of {', '.join(_split_names())}")


def _held_out_workloads(configs: list[Path]) -> dict[str, str]:
    """The workloads of the experiment configs given to ``--hold-out``: key -> structural hash."""
    from costlab.config import load_config
    from costlab.workloads import build_workload, structural_hash, workload_key

    held = {}
    for config in configs:
        try:
            workloads = load_config(config).workloads
        except CostlabError as err:
            said = str(err)
            raise CostlabError(f"--hold-out {said}" if said.startswith(f"{config}:") else
                               f"--hold-out {config}: {said}") from None
        held.update({workload_key(w.name, w.params): structural_hash(build_workload(w.name, w.params))
                     for w in workloads})
    return held


def _drop_workloads(df, rows, keys, hashes=()):
    """``rows`` of the dataset ``df`` without the records of workloads ``keys`` or of structural
    ``hashes`` (under any key: :func:`~costlab.data.splits.same_workload`), and how many were dropped."""
    import numpy as np

    from costlab.data.splits import same_workload

    workloads = same_workload(df["workload_key"], df["workload_hash"])
    named = (df["workload_key"].isin(set(keys)) | df["workload_hash"].astype(str).isin(set(hashes))).to_numpy()
    held = df.loc[np.isin(workloads, np.unique(workloads[named])), "row"].to_numpy()
    kept = rows[~np.isin(rows, held)]
    return kept, len(rows) - len(kept)


TRAINED_TRACES_FILE = "costlab-train-traces.npy"
TRAINING_RECORD = "costlab-train.json"  # what costlab train trained the model on


def _say_rows_without_features(n_missing: int, n_rows: int, features: str, done: str) -> None:
    if n_missing:
        err_console.print(f"[yellow]warning:[/] {n_missing} of the {n_rows} rows have no {features!r} features "
                          f"(their trace did not replay, or the extractor refused it): {done} without them", highlight=False)


def _trace_digests(df, rows):
    """A 64-bit digest of each of ``rows``' (workload hash, trace). ``costlab train`` keeps those of
    the rows it trained on beside the model, so that ``evaluate`` checks any dataset's rows against
    them: the training dataset rebuilt (with more records), moved or gone."""
    import hashlib

    import numpy as np

    these = df.set_index("row").loc[rows]
    return np.fromiter(
        (int.from_bytes(hashlib.blake2b(f"{h}\n{t}".encode(), digest_size=8).digest(), "little")
         for h, t in zip(these["workload_hash"].astype(str), these["trace"])), dtype=np.uint64, count=len(rows))


SPLIT_HELP = "none, holdout, kfold, leave-one-family-out or leave-one-task-out (by workload, never by record)"


@app.command()
def train(
    dataset: Path = typer.Option(..., help="dataset directory"),
    model: str = typer.Option(..., help="a registered model name (costlab models)"),
    out: Path = typer.Option(..., help="the trained model's directory: new or empty"),
    force: bool = typer.Option(False, "--force", help="replace the model already in --out"),
    features: Optional[str] = typer.Option(None, help="feature extractor(s); default: the model's own"),
    split: str = typer.Option("holdout", help=SPLIT_HELP),
    fold: int = typer.Option(0, help="which fold of the split to train on"),
    test_fraction: float = typer.Option(0.2, help="held-out workload fraction (holdout)"),
    seed: int = typer.Option(0, min=0, max=MAX_SEED, help="seeds the model (and the split, unless --split-seed)"),
    split_seed: Optional[int] = typer.Option(None, min=0, max=MAX_SEED, help="seeds the split; default: --seed"),
    k: int = typer.Option(5, "--k", help="kfold: the number of folds"),
    param: Optional[List[str]] = typer.Option(None, help="a hyper-parameter, KEY=VALUE (YAML value)"),
    hold_out: Optional[List[Path]] = typer.Option(
        None, help="an experiment config whose workloads are left out of training (to pretrain for it)"),
    tracking_uri: str = typer.Option("sqlite:///mlflow.db"),
    experiment: str = typer.Option("costlab-offline", callback=_named_experiment),
):
    """Train a model offline on a dataset's training workloads and log it to MLflow."""
    import json
    import shutil

    import numpy as np

    from costlab.config import apply_overrides
    from costlab.data.dataset import load_dataset, load_metadata
    from costlab.data.offline import check_features_fit_model, default_features, train_model
    from costlab.models import MODELS, check_model_params
    from costlab.filenames import check_output_dir, check_replaceable_dir
    from costlab.models._common import META_FILE, save_model
    from costlab.tracking import check_tracking_uri_read_only, log_offline_run

    check_output_dir(out, "--out")
    if out.is_symlink():  # replaced in place: the link still names the new model (rmtree refuses a link)
        out = out.resolve()
    check_output_dir(out.parent, "the folder of --out")  # the model is written there, then moved in
    check_replaceable_dir(out, "--out", META_FILE, "costlab model", force)
    _check_split_options(split, fold, test_fraction)
    check_tracking_uri_read_only(tracking_uri, setting="--tracking-uri")  # the store is made when logging
    params = apply_overrides({}, list(param or []), label="--param", example="num_leaves=31")
    if features is not None and not features.strip():
        raise CostlabError("--features '': names no feature extractor (leave it out for the model's own)")
    if params and model in MODELS:  # an unknown --model is named by what follows
        try:
            check_model_params(model, params)
        except CostlabError as err:
            raise CostlabError(f"--param {' '.join(param)}: {err}") from None
    try:
        check_features_fit_model(model, features or default_features(model, params))
    except CostlabError as err:
        raise CostlabError(f"--features {features}: {err}" if features else str(err)) from None
    held_out = _held_out_workloads(hold_out or [])  # its configs checked before the dataset is read
    df = load_dataset(dataset)
    dataset_id = load_metadata(dataset).get("dataset_id")  # None: built before costlab kept one
    split_seed = seed if split_seed is None else split_seed
    train_rows, test_rows = _split_rows(df, split, fold, split_seed, test_fraction, dataset, k)
    _say_unrankable_test_workloads(df, test_rows)
    if held_out:
        train_rows, dropped = _drop_workloads(df, train_rows, held_out, held_out.values())
        console.print(f"held out {dropped} record(s) of the workloads of {', '.join(map(str, hold_out))}")
    result = train_model(dataset, model, features, params=params, rows=train_rows, seed=seed,
                         progress=_progress_printer())
    _say_rows_without_features(result.n_rows_without_features, len(train_rows), result.features, "trained")
    written = _new_dir_beside(out)  # moved to --out once whole: no half-written or mixed model
    try:
        save_model(result.model, written)
        np.save(written / TRAINED_TRACES_FILE, _trace_digests(df, result.rows), allow_pickle=False)
        (written / TRAINING_RECORD).write_text(json.dumps({
            "dataset": str(dataset), "dataset_path": str(Path(dataset).resolve()),
            "dataset_id": dataset_id, "split": split, "fold": fold, "seed": seed,
            "split_seed": split_seed, "k": k, "test_fraction": test_fraction, "features": result.features, "n_train": result.n_train,
            "n_test_rows": int(len(test_rows)), "held_out_workloads": sorted(held_out),
            "held_out_hashes": sorted(set(held_out.values())),
            "trained_workload_hashes": sorted(set(df.set_index("row").loc[result.rows, "workload_hash"].astype(str))),
        }, indent=1))
        _move_into_place(written, out)
    finally:
        if written.exists():
            shutil.rmtree(written)
    run_id = log_offline_run(
        tracking_uri, experiment, f"train-{model}",
        {"dataset": dataset, "model": model, "features": result.features, "split": split, "fold": fold,
         "seed": seed, "split_seed": split_seed, "k": k, **{f"model.{name}": v for name, v in result.params.items()}},
        {"train_time_s": result.train_time_s, "n_train": result.n_train, "n_tasks": result.n_tasks},
        model=result.model, model_dir=out)
    console.print(f"trained {model} on {result.n_train} records of {result.n_tasks} task(s) with "
                  f"{result.features!r} features in {result.train_time_s:.1f} s → {out} (MLflow run {run_id})")
    if len(test_rows):  # what `costlab evaluate --model OUT` on this dataset scores by default
        tested = sorted(df.set_index("row").loc[test_rows, "workload_key"].unique())
        shown = ", ".join(tested[:5]) + (f" and {len(tested) - 5} more" if len(tested) > 5 else "")
        console.print(f"held out ({split} split, fold {fold}): {len(test_rows)} records of {len(tested)} "
                      f"workload(s), which `costlab evaluate --model {out}` scores: {shown}", highlight=False)


def _new_dir_beside(out: Path) -> Path:
    """A new, empty, hidden directory in ``out``'s parent (created), to be renamed to ``out``."""
    import tempfile

    out.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".partial", dir=out.parent))


def _move_into_place(written: Path, out: Path) -> None:
    """Replace ``out`` (absent, empty, or a model that ``--force`` replaces) with ``written``."""
    import shutil

    if out.is_dir():
        shutil.rmtree(out)
    written.rename(out)


def _training_record(model_dir: Path) -> dict | None:
    """The model's ``costlab-train.json`` (what ``costlab train`` trained it on), or None. JSON
    since 2026-12-07, YAML before: read as YAML, which reads both. A record written before
    ``split_seed`` and ``k`` were kept gets what its split used: ``seed``, and 5 folds."""
    import yaml

    record_file = Path(model_dir) / TRAINING_RECORD
    if not record_file.is_file():
        return None
    try:
        record = yaml.safe_load(record_file.read_text())
    except yaml.YAMLError as err:
        raise CostlabError(f"{record_file}: not valid JSON ({' '.join(str(err).split())})") from None
    missing = [key for key in ("dataset", "split", "fold", "seed", "test_fraction")
               if not isinstance(record, dict) or key not in record]
    if missing:
        raise CostlabError(f"{record_file}: not what costlab train writes (no {', '.join(missing)}); "
                           f"move it away to evaluate without it")
    for field, fits, expected in _TRAINING_RECORD_FIELDS:
        if field in record and not fits(record[field]):
            raise CostlabError(f"{record_file}: field {field}: {expected} (value: {record[field]!r}); "
                               f"move the file away to evaluate without it")
    record.setdefault("split_seed", record["seed"])
    record.setdefault("k", 5)
    return record


def _split_names() -> tuple[str, ...]:
    from costlab.data.splits import SPLIT_KINDS

    return ("none", *SPLIT_KINDS)


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


_TRAINING_RECORD_FIELDS = (  # (field, check, what costlab train writes), for the fields evaluate reads
    ("split", lambda v: v in _split_names(), "none, holdout, kfold, leave-one-family-out or leave-one-task-out"),
    ("fold", lambda v: _is_int(v) and v >= 0, "a fold number (0 or more)"),
    ("seed", _is_int, "an integer"),
    ("split_seed", lambda v: v is None or _is_int(v), "an integer"),
    ("k", lambda v: _is_int(v) and v >= 2, "a number of folds (2 or more)"),
    ("test_fraction", lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v < 1,
     "a fraction between 0 and 1"),
    ("held_out_workloads", lambda v: v is None or (isinstance(v, list) and all(isinstance(x, str) for x in v)),
     "a list of workload keys"),
    ("held_out_hashes", lambda v: v is None or (isinstance(v, list) and all(isinstance(x, (str, int)) for x in v)),
     "a list of structural hashes"),
    ("trained_workload_hashes",
     lambda v: v is None or (isinstance(v, list) and all(isinstance(x, (str, int)) for x in v)),
     "a list of structural hashes"),
)


def _training_dataset(record: dict, model_dir: Path, dataset: Path) -> tuple[Path | None, str]:
    """The dataset the model was trained on: ``dataset`` when its id is the recorded one, else the
    recorded path (absolute; or relative to the working directory or to a directory above the
    model's, where ``costlab train`` ran); None if it is nowhere. A dataset found there with another
    id (rebuilt since) is not it. Second: what to warn about it ("" when it is verified)."""
    from costlab.data.dataset import load_metadata

    recorded_id = record.get("dataset_id")
    if recorded_id and recorded_id == load_metadata(dataset).get("dataset_id"):
        return Path(dataset), ""
    candidates = [Path(record["dataset_path"])] if record.get("dataset_path") else []
    if record.get("dataset"):
        recorded = Path(str(record["dataset"]))
        candidates += [recorded] if recorded.is_absolute() else [
            Path.cwd() / recorded, *(above / recorded for above in Path(model_dir).resolve().parents)]
    found = list(dict.fromkeys(c for c in candidates if (c / "records.parquet").is_file()))
    if not found:
        return None, "which is not found here: whether it saw these rows is not checked"
    if not recorded_id:  # a record written before costlab kept the id
        return found[0], (f"it records no dataset_id (written before costlab kept one), so {found[0]} is taken "
                          f"for it unverified: if that was rebuilt since, the check of the rows it saw is wrong")
    same = [c for c in found if load_metadata(c).get("dataset_id") == recorded_id]
    if same:
        return same[0], ""
    return None, (f"{', '.join(map(str, found))} holds another dataset now (rebuilt since: dataset_id {recorded_id} "
                  f"when trained): whether it saw these rows is not checked")


def _training_rows(df, record: dict):
    """The rows of ``df`` a model was trained on, from its ``costlab-train.json`` ``record``."""
    train_rows, _ = _split_rows(df, record["split"], record["fold"], record["split_seed"], record["test_fraction"],
                                k=record["k"])
    return _drop_workloads(df, train_rows, record.get("held_out_workloads") or [],
                           record.get("held_out_hashes") or [])[0]


def _trained_workloads(record: dict | None, train_df) -> set[str] | None:
    """The structural hashes of the workloads a model trained on: from its costlab-train.json,
    else from its training dataset when that is here (None: unknown)."""
    if record and record.get("trained_workload_hashes") is not None:
        return {str(h) for h in record["trained_workload_hashes"]}
    if record and train_df is not None:
        rows = _training_rows(train_df, record)
        return set(train_df.set_index("row").loc[rows, "workload_hash"].astype(str))
    return None


def _workloads_trained_on(df, test_rows, trained_hashes: set[str] | None) -> list[str]:
    """The keys of the workloads of ``test_rows`` whose structural hash is in ``trained_hashes``."""
    if not trained_hashes or not len(test_rows):
        return []
    test = df.set_index("row").loc[test_rows]
    return sorted(set(test.loc[test["workload_hash"].astype(str).isin(trained_hashes), "workload_key"]))


@app.command()
def evaluate(
    dataset: Path = typer.Option(..., help="dataset directory"),
    model: Path = typer.Option(..., help="a trained model directory (costlab train --out)"),
    split: Optional[str] = typer.Option(None, help=SPLIT_HELP + "; evaluates the test part. Default: the split "
                                        "the model was trained with on this dataset (costlab-train.json), else holdout"),
    fold: Optional[int] = typer.Option(None, help="default: as trained on this dataset, else 0"),
    test_fraction: Optional[float] = typer.Option(None, help="default: as trained on this dataset, else 0.2"),
    seed: Optional[int] = typer.Option(None, min=0, max=MAX_SEED,
                                       help="the split's seed; default: as trained on this dataset, else 0"),
    k: Optional[int] = typer.Option(None, "--k", help="kfold's folds; default: as trained on this dataset, else 5"),
    allow_training_rows: bool = typer.Option(
        False, help="score the test rows even if the model was trained on some of them (refused otherwise)"),
    failures: str = typer.Option("exclude", help="exclude: rank the working programs only; penalize: failed "
                                 "records stay, as slowest (TenSet's top-k caps them at 1e5 x the best)"),
    repeats: str = typer.Option("each", help="each: rank every measured row; mean: one row per task and trace, "
                                "its latency the mean of its successful timings (a schedule measured several "
                                "times otherwise sets the best latency by its luckiest timing)"),
    tracking_uri: str = typer.Option("sqlite:///mlflow.db"),
    experiment: str = typer.Option("costlab-offline", callback=_named_experiment),
):
    """TenSet's top-k scores, pairwise accuracy and Kendall τ on what the model did not train on.

    That is its held-out workloads, or with --split none every trace it did not train on.
    """
    import numpy as np
    from rich.table import Table

    from costlab.data.dataset import load_dataset
    from costlab.data.metrics import FAILURE_MODES
    from costlab.data.offline import REPEAT_MODES, evaluate_model
    from costlab.models._common import load_model
    from costlab.tracking import check_tracking_uri_read_only, log_offline_run

    if failures not in FAILURE_MODES:
        raise CostlabError(f"--failures: must be one of {', '.join(FAILURE_MODES)} (value: {failures!r})")
    if repeats not in REPEAT_MODES:
        raise CostlabError(f"--repeats: must be one of {', '.join(REPEAT_MODES)} (value: {repeats!r})")
    _check_split_options(split, fold, test_fraction)
    check_tracking_uri_read_only(tracking_uri, setting="--tracking-uri")  # the store is made when logging
    fitted = load_model(model)
    df = load_dataset(dataset)
    record = _training_record(model)
    train_dir, unchecked = _training_dataset(record, model, dataset) if record else (None, "")
    same = train_dir is not None and train_dir.resolve().samefile(Path(dataset).resolve())
    train_df = (df if same else load_dataset(train_dir)) if train_dir is not None else None
    chosen = {"split": split, "fold": fold, "test_fraction": test_fraction, "seed": seed, "k": k}
    defaults = ({**record, "seed": record["split_seed"]} if same
                else {"split": "holdout", "fold": 0, "test_fraction": 0.2, "seed": 0, "k": 5})
    split, fold, test_fraction, seed, k = (value if value is not None else defaults[key]
                                           for key, value in chosen.items())
    _, test_rows = _split_rows(df, split, fold, seed, test_fraction, dataset, k)
    if split == "none":
        test_rows = df["row"].to_numpy()
    traces_file = Path(model) / TRAINED_TRACES_FILE
    if traces_file.is_file():  # the digests of the (workload, trace) pairs it trained on
        try:
            trained = np.load(traces_file, allow_pickle=False)
        except (OSError, ValueError) as err:
            why = "not the plain array costlab writes" if "pickle" in str(err) else str(err)  # not "load it unsafely"
            raise CostlabError(f"{traces_file}: damaged ({why}); move it away to evaluate without the "
                               f"check of training rows") from None
    else:  # a model trained before costlab kept its traces, or saved another way
        if record is None:
            err_console.print(f"[yellow]warning:[/] {model} has no costlab-train.json (what costlab train writes): "
                              f"whether it was trained on these rows is not checked", highlight=False)
        elif unchecked:
            err_console.print(f"[yellow]warning:[/] {model} was trained on {record.get('dataset')!r} (its "
                              f"costlab-train.json); {unchecked}", highlight=False)
        # an older model: the digests of its training rows, from its dataset
        trained = (_trace_digests(train_df, _training_rows(train_df, record)) if train_df is not None
                   else np.zeros(0, dtype=np.uint64))
    seen = test_rows[np.isin(_trace_digests(df, test_rows), trained)]
    trained_on = (f"its costlab-train.json: dataset {record.get('dataset')}, split {record['split']}, fold "
                  f"{record['fold']}, seed {record['split_seed']}, test fraction {record['test_fraction']}"
                  if record else f"its {TRAINED_TRACES_FILE}")
    if split == "none" and len(seen) and not allow_training_rows:  # no split: every row the model did not see
        test_rows, seen = test_rows[~np.isin(test_rows, seen)], seen[:0]
        if not len(test_rows):
            raise CostlabError(f"{model} was trained on every trace of {dataset} ({trained_on}): "
                               f"nothing held out to evaluate on; pass --allow-training-rows to score them")
        console.print(f"left out {len(df) - len(test_rows)} of the {len(df)} rows: traces {model} was trained on "
                      f"(--split none scores the others)", highlight=False)
    if len(seen):
        what = (f"{len(seen)} of the {len(test_rows)} test rows ({split} split, fold {fold}, seed {seed}, test "
                f"fraction {test_fraction}) are traces {model} was trained on ({trained_on})")
        advice = ("evaluate with the split it was trained with (the default on that dataset)" if same else
                  "this is not the dataset it was trained on, so no split of it is its training split: "
                  "--split none scores every row it did not train on")
        if not allow_training_rows:
            raise CostlabError(f"{what}; {advice}, or pass --allow-training-rows to score them anyway")
        err_console.print(f"[yellow]warning:[/] {what}; scored anyway (--allow-training-rows)", highlight=False)
    # after the refusal above: a workload whose test rows are the very traces it trained on is said there
    known = _workloads_trained_on(df, test_rows[~np.isin(test_rows, seen)], _trained_workloads(record, train_df))
    if known:
        err_console.print(f"[yellow]warning:[/] {len(known)} of the test workloads {'was' if len(known) == 1 else 'were'} "
                          f"in {model}'s training set (it trained on other traces of them): {', '.join(known)}; their "
                          f"scores are not held-out scores", highlight=False)
    _say_unrankable_test_workloads(df, test_rows)
    result = evaluate_model(fitted, dataset, rows=test_rows, failures=failures, repeats=repeats,
                            progress=_progress_printer())
    n_nan = int(np.isnan(result.scores).sum())
    if n_nan:
        err_console.print(f"[yellow]warning:[/] {n_nan} of the model's {len(result.scores)} predictions are NaN: "
                          f"ranked as tied for last (a random order of them)", highlight=False)
    elif len(result.scores) > 1 and np.all(result.scores == result.scores[0]):
        err_console.print(f"[yellow]warning:[/] the model predicts {result.scores[0]:g} for every row: its ranking "
                          f"is a random order (equal scores are scored as one)", highlight=False)
    if not result.metrics.n_tasks:
        raise CostlabError(f"none of the {result.metrics.n_skipped_tasks} test task(s) of {dataset} ({split} split, "
                           f"fold {fold}) has a successful record: nothing to rank, nothing logged")
    _say_rows_without_features(result.n_rows_without_features, len(test_rows), result.features, "scored")
    m = result.metrics
    table = Table("task", "records", "score@1", "score@5", "pairwise", "Kendall τ",
                  title=f"{model} on {dataset} ({split} split, fold {fold}; failed records: {failures}; "
                        f"repeated traces: {repeats})",
                  caption="score@k: TenSet's average peak score@k (the running best throughput of the model's k "
                          "top picks, averaged over the k; equal scores count as a random order of them); the "
                          "'all' row averages the tasks weighted by their records, as TenSet does")
    for task, row in sorted(m.per_task.items()):
        table.add_row(task, str(row.get("n_records", "")),
                      *(f"{row.get(k, float('nan')):.3f}" for k in ("peak_score@1", "peak_score@5", "pairwise_accuracy", "kendall_tau")))
    in_table = sum(row["n_records"] for row in m.per_task.values())
    table.add_row("[bold]all", str(in_table),
                  *(f"{v:.3f}" for v in (m.peak.get(1, float("nan")), m.peak.get(5, float("nan")),
                                         m.pairwise_accuracy, m.kendall_tau)))
    console.print(table)
    left_out = m.n_records - in_table
    console.print(f"scored {m.n_records} record(s) of {m.n_tasks + m.n_skipped_tasks} task(s)"
                  + (f"; {left_out} of them are not in the table: failed records (--failures {failures}) and the "
                     f"records of tasks without a success" if left_out else ""), highlight=False)
    console.print(f"TenSet's top-k score (Σ best latency / Σ latency of the best of the top k, so a slow task "
                  f"weighs more): top-1 {m.top1:.3f}, top-5 {m.top5:.3f}; the mean over tasks of best / top-k "
                  f"latency: top-1 {m.task_mean_top_k.get(1, float('nan')):.3f}, "
                  f"top-5 {m.task_mean_top_k.get(5, float('nan')):.3f}", highlight=False)
    console.print(", ".join(f"failed-pick rate@{k}: {v:.3f}" for k, v in m.failed_pick_rate.items())
                  + " (tasks whose k top picks all failed)", highlight=False)
    if m.skipped_tasks:
        console.print(f"skipped {m.n_skipped_tasks} task(s) without a successful record: {', '.join(m.skipped_tasks)}")
    log_offline_run(tracking_uri, experiment, f"evaluate-{fitted.name}",
                    {"dataset": dataset, "model_dir": model, "split": split, "fold": fold, "seed": seed, "k": k,
                     "test_fraction": test_fraction, "failures": failures, "repeats": repeats,
                     "training_rows_scored": len(seen), "trained_workloads_scored": len(known)},
                    result.as_dict(), per_task=m.per_task)


farm_app = typer.Typer(help="The RPC measurement farm (TVM's tracker and servers).")
app.add_typer(farm_app, name="farm")


@farm_app.command("status")
def farm_status(tracker: str = typer.Option(..., help="HOST:PORT of the RPC tracker")):
    """Print the tracker's queue (free and pending servers per key) and its servers."""
    from costlab.search.farm import format_summary, tracker_summary

    console.print(format_summary(tracker_summary(tracker)), highlight=False)


def _said_warning(message, category, filename, lineno, line=None) -> str:
    """costlab's own warnings as ``warning: MESSAGE``; Python's format (with the file, line and
    source line) for those of other packages."""
    if category is UserWarning and "costlab" in Path(filename).parts:
        return f"warning: {message}\n"
    return PYTHON_WARNING_FORMAT(message, category, filename, lineno, line)


def main() -> None:
    """Console entry point: CostlabError -> message and exit status 2; costlab's warnings as
    ``warning: ...`` lines, without the source line Python shows."""
    warnings.formatwarning = _said_warning
    try:
        app(standalone_mode=True)
    except CostlabError as err:
        from rich.markup import escape

        err_console.print(f"[red]error:[/] {escape(str(err))}", highlight=False)
        sys.exit(err.exit_code)
