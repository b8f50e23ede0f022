"""``costlab evaluate`` scores what the model did not see: it takes the split ``costlab train``
recorded for the same dataset, and refuses test rows the model was trained on."""

import json
import re

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from costlab.cli import _split_rows, app
from costlab.data.dataset import build_dataset, load_dataset
from costlab.errors import CostlabError
from tests.data.helpers import make_gemm_db


def test_evaluate_takes_the_training_split_and_refuses_training_rows(tmp_path, monkeypatch):
    db = make_gemm_db(tmp_path / "db", sizes=(16, 32, 48, 64))
    build_dataset([db.path], tmp_path / "ds")
    df = load_dataset(tmp_path / "ds")
    mlflow = ["--tracking-uri", f"sqlite:///{tmp_path}/mlflow.db"]
    cli = CliRunner()

    def run(*args):
        return cli.invoke(app, [*args, *mlflow], env={"COLUMNS": "300"})

    monkeypatch.chdir(tmp_path)  # train as a user does, with paths relative to where it runs
    trained = run("train", "--dataset", "ds", "--model", "xgb", "--features", "per_store",
                  "--split", "holdout", "--test-fraction", "0.5", "--seed", "3", "--out", "m")
    assert trained.exit_code == 0, trained.output
    train_rows, test_rows = _split_rows(df, "holdout", 0, 3, 0.5)
    assert len(test_rows) == 12 and not np.isin(test_rows, train_rows).any()

    def records_scored(result) -> int:
        return int(re.search(r"scored (\d+) record\(s\) of", result.output).group(1))

    default = run("evaluate", "--dataset", str(tmp_path / "ds"), "--model", str(tmp_path / "m"))
    assert default.exit_code == 0, default.output
    assert "(holdout split, fold 0;" in " ".join(default.output.split()) and records_scored(default) == len(test_rows)

    unseen = run("evaluate", "--dataset", str(tmp_path / "ds"), "--model", str(tmp_path / "m"), "--split", "none")
    assert unseen.exit_code == 0, unseen.output
    assert records_scored(unseen) == len(test_rows)  # no split: every row it was not trained on

    wider = ["evaluate", "--dataset", str(tmp_path / "ds"), "--model", str(tmp_path / "m"), "--test-fraction", "0.75"]
    refused = run(*wider)
    assert isinstance(refused.exception, CostlabError), refused.output
    message = str(refused.exception)
    assert re.match(r"\d+ of the 18 test rows \(holdout split, fold 0, seed 3, test fraction 0.75\) are traces "
                    r".*m was trained on \(its costlab-train.json: dataset .*ds, split holdout, fold 0, seed 3, test "
                    r"fraction 0.5\); evaluate with the split it was trained with \(the default on that dataset\), or "
                    r"pass --allow-training-rows to score them anyway$", message), message
    allowed = run(*wider, "--allow-training-rows")
    assert allowed.exit_code == 0, allowed.output
    assert "scored anyway (--allow-training-rows)" in " ".join(allowed.output.split())
    assert records_scored(allowed) == 18

    # another dataset holding the same measurements (a superset, as cpu-v2 holds cpu-v1's): the
    # traces the model trained on are found there too, by workload and trace
    extra = make_gemm_db(tmp_path / "db2", sizes=(80,))
    build_dataset([db.path, extra.path], tmp_path / "ds2")
    superset = run("evaluate", "--dataset", str(tmp_path / "ds2"), "--model", str(tmp_path / "m"), "--split", "none")
    assert superset.exit_code == 0, superset.output
    assert records_scored(superset) == 24 - 12 + 6  # the 12 test rows of the first, and the new workload's 6
    assert "left out 12 of the 30 rows: traces" in " ".join(superset.output.split())
    assert "were in" not in superset.output  # the trained workloads' rows are all left out

    # a model trained before costlab kept its traces (costlab-train-traces.npy): from another
    # directory, its record ("ds", relative to where train ran) is still found, by the dataset's id,
    # and for a record written before costlab kept the id, above the model
    (tmp_path / "m" / "costlab-train-traces.npy").unlink()
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    record_file = tmp_path / "m" / "costlab-train.json"
    record = yaml.safe_load(record_file.read_text())
    assert record["dataset"] == "ds" and record["dataset_id"]
    for older in (False, True):
        if older:
            record_file.write_text(yaml.safe_dump({k: v for k, v in record.items()
                                                   if k not in ("dataset_id", "dataset_path")}))
        again = run(*wider)
        assert isinstance(again.exception, CostlabError) and "are traces" in str(again.exception), again.output


def test_evaluate_checks_the_traces_the_model_trained_on_in_a_dataset_rebuilt_in_place(tmp_path):
    """A dataset rebuilt where it was, with more databases (experiments/build_cpu_dataset.sh adds the
    later ones), has another id and another split: evaluate took the new dataset's split for the
    model's training rows, and scored traces it trained on. Those are now kept beside the model."""
    import shutil

    db = make_gemm_db(tmp_path / "db", sizes=(16, 32, 48, 64))
    build_dataset([db.path], tmp_path / "ds")
    mlflow = ["--tracking-uri", f"sqlite:///{tmp_path}/mlflow.db"]
    cli = CliRunner()

    def run(*args):
        return cli.invoke(app, [*args, *mlflow], env={"COLUMNS": "300"})

    trained = run("train", "--dataset", str(tmp_path / "ds"), "--model", "xgb", "--features", "per_store",
                  "--split", "holdout", "--test-fraction", "0.5", "--seed", "3", "--out", str(tmp_path / "m"))
    assert trained.exit_code == 0, trained.output
    train_rows, _ = _split_rows(load_dataset(tmp_path / "ds"), "holdout", 0, 3, 0.5)
    shutil.rmtree(tmp_path / "ds")
    build_dataset([db.path, make_gemm_db(tmp_path / "db2", sizes=(80, 96)).path], tmp_path / "ds")
    rebuilt = load_dataset(tmp_path / "ds")
    unseen = run("evaluate", "--dataset", str(tmp_path / "ds"), "--model", str(tmp_path / "m"), "--split", "none")
    assert unseen.exit_code == 0, unseen.output
    scored = int(re.search(r"scored (\d+) record\(s\) of", unseen.output).group(1))
    assert len(rebuilt) == 36 and len(train_rows) == 12
    assert scored == 36 - 12  # every row but the traces it trained on

    # a split of the rebuilt dataset is not the training split: a test workload it trained on is refused,
    # and the advice is --split none, not "the split it was trained with"
    trained_workloads = set(rebuilt.set_index("row").loc[train_rows, "workload_hash"].astype(str))  # first db first
    refused = 0
    for fold in range(rebuilt["workload_hash"].nunique()):
        one = run("evaluate", "--dataset", str(tmp_path / "ds"), "--model", str(tmp_path / "m"),
                  "--split", "leave-one-task-out", "--fold", str(fold))
        if one.exit_code != 0:
            refused += 1
            assert "this is not the dataset it was trained on" in str(one.exception), one.output
            assert "--split none scores every row it did not train on" in str(one.exception)
    assert refused == len(trained_workloads) == 2

    # a model trained before costlab kept its traces: the rebuilt dataset is not taken for its own
    (tmp_path / "m" / "costlab-train-traces.npy").unlink()
    older = run("evaluate", "--dataset", str(tmp_path / "ds"), "--model", str(tmp_path / "m"), "--split", "none")
    assert older.exit_code == 0, older.output
    said = " ".join(older.output.split())
    assert "holds another dataset now (rebuilt since: dataset_id" in said and "is not checked" in said, said
    # and one whose record predates dataset ids: whatever is found there is taken, and said to be unverified
    record_file = tmp_path / "m" / "costlab-train.json"
    record = yaml.safe_load(record_file.read_text())
    record_file.write_text(yaml.safe_dump({k: v for k, v in record.items() if k not in ("dataset_id", "dataset_path")}))
    oldest = run("evaluate", "--dataset", str(tmp_path / "ds"), "--model", str(tmp_path / "m"), "--split", "none")
    said = " ".join(oldest.output.split())
    assert oldest.exit_code == 0 and "records no dataset_id" in said and "is taken for it unverified" in said, said


def test_evaluate_warns_when_a_model_has_no_training_record(tmp_path):
    """A model saved through the Python API, or copied without its costlab-train.json, was scored
    without a word on whatever rows it was given."""
    db = make_gemm_db(tmp_path / "db", sizes=(16, 32))
    build_dataset([db.path], tmp_path / "ds")
    common = ["--dataset", str(tmp_path / "ds"), "--tracking-uri", f"sqlite:///{tmp_path}/mlflow.db"]
    cli = CliRunner()
    assert cli.invoke(app, ["train", "--model", "random", "--out", str(tmp_path / "m"), *common]).exit_code == 0
    (tmp_path / "m" / "costlab-train.json").unlink()
    # the traces it trained on are still beside it: checked with them (--split none: the rows it did not see)
    unseen = cli.invoke(app, ["evaluate", "--model", str(tmp_path / "m"), "--split", "none", *common],
                        env={"COLUMNS": "300"})
    assert unseen.exit_code == 0, unseen.output
    n_train = len(_split_rows(load_dataset(tmp_path / "ds"), "holdout", 0, 0, 0.2)[0])
    assert 0 < n_train < 12 and re.search(rf"scored {12 - n_train} record\(s\) of", unseen.output), unseen.output
    (tmp_path / "m" / "costlab-train-traces.npy").unlink()
    shown = cli.invoke(app, ["evaluate", "--model", str(tmp_path / "m"), *common], env={"COLUMNS": "300"})
    assert shown.exit_code == 0, shown.output
    assert ("has no costlab-train.json (what costlab train writes): whether it was trained on these rows is not "
            "checked") in " ".join(shown.output.split())


def test_train_and_evaluate_say_how_many_rows_have_no_features(tmp_path):
    """A row whose trace no longer replays has no features: it was left out without a word."""
    import pandas as pd

    db = make_gemm_db(tmp_path / "db", sizes=(16, 32))
    build_dataset([db.path], tmp_path / "ds")
    records = tmp_path / "ds" / "records.parquet"
    df = pd.read_parquet(records)
    df.loc[df["row"] == 3, "trace"] = '[[["NoSuchInstruction", [], [], []]], []]'
    df.to_parquet(records)
    common = ["--dataset", str(tmp_path / "ds"), "--tracking-uri", f"sqlite:///{tmp_path}/mlflow.db"]
    cli = CliRunner()
    trained = cli.invoke(app, ["train", "--model", "xgb", "--features", "per_store", "--split", "none",
                               "--out", str(tmp_path / "m"), *common], env={"COLUMNS": "300"})
    assert trained.exit_code == 0, trained.output
    assert f"1 of the {len(df)} rows have no 'per_store' features" in " ".join(trained.output.split())
    scored = cli.invoke(app, ["evaluate", "--model", str(tmp_path / "m"), "--split", "none", "--allow-training-rows",
                              *common], env={"COLUMNS": "300"})
    assert scored.exit_code == 0, scored.output
    assert f"1 of the {len(df)} rows have no 'per_store' features" in " ".join(scored.output.split())


def test_evaluate_failure_modes(tmp_path):
    """Failed records excluded (the default) or kept as slowest; the failed-pick rate is printed."""
    db = make_gemm_db(tmp_path / "db", sizes=(16, 32))
    build_dataset([db.path], tmp_path / "ds")
    mlflow = ["--tracking-uri", f"sqlite:///{tmp_path}/mlflow.db"]
    cli = CliRunner()
    common = ["--dataset", str(tmp_path / "ds"), "--split", "none", *mlflow]
    assert cli.invoke(app, ["train", "--model", "random", "--out", str(tmp_path / "m"), *common]).exit_code == 0
    n_failed = sum(lat is None for lat in db.latencies)
    assert 0 < n_failed < db.n_records
    in_table = {}  # the records each mode ranks: the table's "all" row
    for mode in (None, "exclude", "penalize"):  # None: no --failures, the default
        chosen = [] if mode is None else ["--failures", mode]
        shown = cli.invoke(app, ["evaluate", "--model", str(tmp_path / "m"), "--allow-training-rows",
                                 *chosen, *common], env={"COLUMNS": "300"})
        assert shown.exit_code == 0, shown.output
        said = " ".join(shown.output.split())
        assert f"failed records: {mode or 'exclude'}; repeated traces: each)" in said
        assert re.search(r"failed-pick rate@1: \d\.\d{3}, failed-pick rate@5: \d\.\d{3}", shown.output)
        # every test record is scored; a failed one is in the table only when it is kept (as the slowest)
        assert int(re.search(r"scored (\d+) record\(s\) of", said).group(1)) == db.n_records, said
        in_table[mode] = int(re.search(r"^\W*all\W+(\d+)\W", shown.output, re.MULTILINE).group(1))
        left_out = re.search(r"; (\d+) of them are not in the table: failed records", said)
        assert (int(left_out.group(1)) if left_out else 0) == db.n_records - in_table[mode], said
    assert in_table == {None: db.n_records - n_failed, "exclude": db.n_records - n_failed, "penalize": db.n_records}
    bad = cli.invoke(app, ["evaluate", "--model", str(tmp_path / "m"), "--failures", "drop", *common])
    assert str(bad.exception) == "--failures: must be one of exclude, penalize (value: 'drop')"
    merged = cli.invoke(app, ["evaluate", "--model", str(tmp_path / "m"), "--allow-training-rows", "--repeats",
                              "mean", *common], env={"COLUMNS": "300"})
    assert merged.exit_code == 0 and "repeated traces: mean)" in " ".join(merged.output.split()), merged.output
    bad = cli.invoke(app, ["evaluate", "--model", str(tmp_path / "m"), "--repeats", "median", *common])
    assert str(bad.exception) == "--repeats: must be one of each, mean (value: 'median')"


def test_evaluate_names_a_damaged_training_record_or_trace_digest_file_of_the_model(tmp_path):
    import subprocess
    import sys

    db = make_gemm_db(tmp_path / "db", sizes=(16, 32))
    build_dataset([db.path], tmp_path / "ds")
    common = ["--dataset", str(tmp_path / "ds"), "--split", "none", "--tracking-uri", f"sqlite:///{tmp_path}/mlflow.db"]
    cli = CliRunner()
    assert cli.invoke(app, ["train", "--model", "random", "--out", str(tmp_path / "m"), *common]).exit_code == 0
    record, traces = tmp_path / "m" / "costlab-train.json", tmp_path / "m" / "costlab-train-traces.npy"
    whole = record.read_text()
    saved = json.loads(whole)  # JSON, as the name says (it was YAML)
    damaged = [("{split: [", "not valid JSON ("),
               ("[1, 2]", "not what costlab train writes (no dataset, split, fold, seed, test_fraction)")]
    damaged += [(json.dumps({**saved, field: value}), f"field {field}: {expected} (value: {value!r})")
                for field, value, expected in [  # each a traceback, or an error naming an option not given
                    ("fold", "x", "a fold number (0 or more)"), ("test_fraction", "abc", "a fraction between 0 and 1"),
                    ("split_seed", "zero", "an integer"), ("split", "holdoutt", "none, holdout, kfold, leave-one-family-out or leave-one-task-out")]]
    for text, said in damaged:
        record.write_text(text)
        done = cli.invoke(app, ["evaluate", "--model", str(tmp_path / "m"), *common])
        assert isinstance(done.exception, CostlabError) and str(done.exception).startswith(f"{record}: {said}"), done.output
    record.write_text(yaml.safe_dump(saved))  # as costlab wrote it before 2026-12-07: still read (its split: none)
    read = cli.invoke(app, ["evaluate", "--model", str(tmp_path / "m"), *common])
    assert "was trained on every trace of" in str(read.exception), read.output
    record.write_text(whole)
    traces.write_bytes(traces.read_bytes()[:70])
    # through the console entry point: the error is one line on stderr however long, exit status 2
    shown = subprocess.run([sys.executable, "-m", "costlab", "evaluate", "--model", str(tmp_path / "m"), *common],
                           capture_output=True, text=True)
    assert shown.returncode == 2 and shown.stderr.count("\n") == 1, shown.stderr
    assert shown.stderr.startswith(f"error: {traces}: damaged (") and len(shown.stderr) > 160, shown.stderr
    for damaged in (b"not an array", None):  # numpy said of the first: "you can load it unsafely"
        if damaged is None:
            np.save(traces, np.array([{"a": 1}], dtype=object), allow_pickle=True)
        else:
            traces.write_bytes(damaged)
        said = cli.invoke(app, ["evaluate", "--model", str(tmp_path / "m"), *common])
        assert str(said.exception).startswith(f"{traces}: damaged (not the plain array costlab writes); move it "
                                              "away"), said.output


def test_evaluate_says_which_test_workloads_the_model_trained_on_other_traces_of(tmp_path):
    """--split none on another dataset scores every trace the model did not see, and a workload
    it trained on (other traces of it) counted as held out without a word."""
    build_dataset([make_gemm_db(tmp_path / "db", sizes=(16, 32)).path], tmp_path / "ds")
    build_dataset([make_gemm_db(tmp_path / "db2", sizes=(32, 16, 48)).path], tmp_path / "ds2")  # other traces
    mlflow = ["--tracking-uri", f"sqlite:///{tmp_path}/mlflow.db"]
    cli = CliRunner()
    trained = cli.invoke(app, ["train", "--dataset", str(tmp_path / "ds"), "--model", "random", "--split", "none",
                               "--out", str(tmp_path / "m"), *mlflow])
    assert trained.exit_code == 0, trained.output
    record = yaml.safe_load((tmp_path / "m" / "costlab-train.json").read_text())
    assert len(record["trained_workload_hashes"]) == 2

    def warned(result) -> str:
        said = " ".join(result.output.split())
        assert result.exit_code == 0, said
        return re.search(r"warning: (\d+) of the test workloads were in .*m's training set \(it trained on other "
                         r"traces of them\): ([^;]*); their scores are not held-out scores", said)

    found = warned(cli.invoke(app, ["evaluate", "--dataset", str(tmp_path / "ds2"), "--model", str(tmp_path / "m"),
                                    "--split", "none", *mlflow], env={"COLUMNS": "300"}))
    assert found and found.group(1) == "2" and "C[16x16" in found.group(2) and "C[32x32" in found.group(2)
    assert "48x48" not in found.group(2)
    # a model trained before costlab kept the workloads: taken from its training dataset
    record_file = tmp_path / "m" / "costlab-train.json"
    record_file.write_text(yaml.safe_dump({k: v for k, v in record.items() if k != "trained_workload_hashes"}))
    found = warned(cli.invoke(app, ["evaluate", "--dataset", str(tmp_path / "ds2"), "--model", str(tmp_path / "m"),
                                    "--split", "none", *mlflow], env={"COLUMNS": "300"}))
    assert found and found.group(1) == "2"


def test_a_fold_of_the_very_traces_trained_on_is_refused_without_the_other_traces_warning(tmp_path):
    """Evaluated on a fold it trained on, evaluate first warned that the model "trained on other
    traces" of the test workload, then refused because it trained on these very traces (found by a
    new-user audit)."""
    build_dataset([make_gemm_db(tmp_path / "db", sizes=(16, 32)).path], tmp_path / "ds")
    common = ["--dataset", str(tmp_path / "ds"), "--split", "leave-one-task-out",
              "--tracking-uri", f"sqlite:///{tmp_path}/mlflow.db"]
    cli = CliRunner()
    trained = cli.invoke(app, ["train", "--model", "random", "--fold", "0", "--out", str(tmp_path / "m"), *common])
    assert trained.exit_code == 0, trained.output
    refused = cli.invoke(app, ["evaluate", "--model", str(tmp_path / "m"), "--fold", "1", *common],
                         env={"COLUMNS": "300"})
    assert isinstance(refused.exception, CostlabError) and "are traces" in str(refused.exception), refused.output
    assert "other traces" not in refused.output, refused.output
    scored = cli.invoke(app, ["evaluate", "--model", str(tmp_path / "m"), "--fold", "1", "--allow-training-rows",
                              *common], env={"COLUMNS": "300"})
    said = " ".join(scored.output.split())
    assert scored.exit_code == 0 and "scored anyway (--allow-training-rows)" in said, said
    assert "other traces" not in said, said


def test_the_split_has_its_own_seed_and_kfold_its_own_k_both_kept_for_evaluate(tmp_path):
    """One --seed set both the split and the model, and kfold was fixed at 5 folds (refused on 4 workloads)."""
    build_dataset([make_gemm_db(tmp_path / "db", sizes=(16, 32, 48, 64)).path], tmp_path / "ds")
    mlflow = ["--tracking-uri", f"sqlite:///{tmp_path}/mlflow.db"]
    cli = CliRunner()
    common = ["--dataset", str(tmp_path / "ds"), *mlflow]
    five = cli.invoke(app, ["train", "--model", "random", "--split", "kfold", "--out", str(tmp_path / "m5"), *common])
    assert "k-fold needs 2 <= k <= number of workloads (4), got k=5" in str(five.exception)
    trained = cli.invoke(app, ["train", "--model", "random", "--split", "kfold", "--k", "4", "--fold", "2",
                               "--seed", "1", "--split-seed", "7", "--out", str(tmp_path / "m"), *common])
    assert trained.exit_code == 0, trained.output
    record = yaml.safe_load((tmp_path / "m" / "costlab-train.json").read_text())
    assert (record["seed"], record["split_seed"], record["k"], record["fold"]) == (1, 7, 4, 2)
    evaluated = cli.invoke(app, ["evaluate", "--model", str(tmp_path / "m"), *common], env={"COLUMNS": "300"})
    assert evaluated.exit_code == 0, evaluated.output  # fold 2 of 4, split seed 7: its own test workload
    _, test_rows = _split_rows(load_dataset(tmp_path / "ds"), "kfold", 2, 7, 0.2, k=4)
    assert f"scored {len(test_rows)} record(s) of 1 task(s)" in evaluated.output
    # train named what it held out, which that evaluate scored (it said only what it trained on)
    assert (f"held out (kfold split, fold 2): {len(test_rows)} records of 1 workload(s), which `costlab evaluate "
            f"--model {tmp_path / 'm'}` scores: C[") in " ".join(trained.output.split())
    other = cli.invoke(app, ["evaluate", "--model", str(tmp_path / "m"), "--seed", "1", *common])
    assert other.exit_code != 0 and "are traces" in str(other.exception)  # the model's seed is not the split's


def test_a_test_part_without_a_successful_record_is_said_not_scored_as_nan(tmp_path):
    """A leave-one-task-out fold of a workload whose every trial failed gave NaN metrics and exit status 0."""
    build_dataset([make_gemm_db(tmp_path / "db", sizes=(16, 32)).path,
                   make_gemm_db(tmp_path / "bad", sizes=(48,), failed=range(6)).path], tmp_path / "ds")
    df = load_dataset(tmp_path / "ds")
    fold = sorted(df["task_key"].unique()).index(next(t for t in df["task_key"].unique() if "48x48" in t))
    mlflow = ["--tracking-uri", f"sqlite:///{tmp_path}/mlflow.db"]
    cli = CliRunner()
    common = ["--dataset", str(tmp_path / "ds"), "--split", "leave-one-task-out", "--fold", str(fold), *mlflow]
    trained = cli.invoke(app, ["train", "--model", "random", "--out", str(tmp_path / "m"), *common],
                         env={"COLUMNS": "300"})
    assert trained.exit_code == 0, trained.output
    assert re.search(r"warning: 1 of the 1 test workload\(s\) have fewer than 2 successful records, so nothing to "
                     r"rank: C\[48x48", " ".join(trained.output.split())), trained.output
    evaluated = cli.invoke(app, ["evaluate", "--model", str(tmp_path / "m"), *common])
    assert isinstance(evaluated.exception, CostlabError), evaluated.output
    assert "none of the 1 test task(s) of" in str(evaluated.exception) and "nothing to rank" in str(evaluated.exception)


def test_evaluate_warns_when_the_model_predicts_one_score_for_every_row(tmp_path):
    """A booster that could make no split ranks nothing: its metrics are those of a random order."""
    build_dataset([make_gemm_db(tmp_path / "db", sizes=(16, 32, 48)).path], tmp_path / "ds")
    common = ["--dataset", str(tmp_path / "ds"), "--tracking-uri", f"sqlite:///{tmp_path}/mlflow.db"]
    cli = CliRunner()
    trained = cli.invoke(app, ["train", "--model", "xgb", "--features", "per_store", "--param",
                               "min_child_weight=1000000", "--out", str(tmp_path / "m"), *common])
    assert trained.exit_code == 0, trained.output
    evaluated = cli.invoke(app, ["evaluate", "--model", str(tmp_path / "m"), *common], env={"COLUMNS": "300"})
    assert evaluated.exit_code == 0, evaluated.output
    assert re.search(r"warning: the model predicts \S+ for every row: its ranking is a random order",
                     " ".join(evaluated.output.split())), evaluated.output


def test_train_takes_a_dataset_without_an_id_and_a_damaged_feature_cache_is_extracted_again(tmp_path):
    """A dataset.json without dataset_id failed with a KeyError after training; a cut feature
    cache (an interrupted copy) failed with a BadZipFile traceback."""
    build_dataset([make_gemm_db(tmp_path / "db", sizes=(16, 32)).path], tmp_path / "ds")
    meta_file = tmp_path / "ds" / "dataset.json"
    meta = json.loads(meta_file.read_text())
    del meta["dataset_id"]
    meta_file.write_text(json.dumps(meta))
    common = ["--dataset", str(tmp_path / "ds"), "--split", "none", "--tracking-uri", f"sqlite:///{tmp_path}/mlflow.db"]
    cli = CliRunner()
    done = cli.invoke(app, ["train", "--model", "xgb", "--features", "per_store", "--out", str(tmp_path / "m"), *common])
    assert done.exit_code == 0, done.output
    assert json.loads((tmp_path / "m" / "costlab-train.json").read_text())["dataset_id"] is None
    cache = tmp_path / "ds" / "features" / "per_store.npz"
    cache.write_bytes(cache.read_bytes()[:100])
    again = cli.invoke(app, ["train", "--model", "xgb", "--features", "per_store", "--out", str(tmp_path / "m2"),
                             *common])
    assert again.exit_code == 0, again.output
    assert np.load(cache)["dense"].shape[0] > 0  # extracted again, whole
    meta_file.write_text("[]")
    listed = cli.invoke(app, ["train", "--model", "random", "--out", str(tmp_path / "m3"), *common])
    assert str(listed.exception) == (f"{meta_file}: not what costlab dataset build writes (a JSON object of fields; "
                                     f"value: list)")


@pytest.mark.parametrize("command, option, value, said", [
    ("train", "--seed", "-1", "Invalid value for '--seed'"),
    ("train", "--split-seed", "-1", "Invalid value for '--split-seed'"),
    ("evaluate", "--seed", "-1", "Invalid value for '--seed'"),
    ("train", "--experiment", "", "an MLflow experiment needs a name"),
    ("evaluate", "--experiment", "", "an MLflow experiment needs a name"),
])
def test_a_bad_seed_or_experiment_is_refused_before_any_work(tmp_path, command, option, value, said):
    """A negative seed was numpy's traceback from the split; an empty experiment name was MLflow's,
    after the model was trained or the evaluation done (found by a bad-input audit)."""
    model = ["--model", "lgbm", "--out", str(tmp_path / "m")] if command == "train" else ["--model", str(tmp_path)]
    done = CliRunner().invoke(app, [command, "--dataset", str(tmp_path / "no-such-dataset"), *model, option, value],
                              env={"COLUMNS": "300"})
    assert done.exit_code == 2 and said in done.output, done.output
    assert not (tmp_path / "m").exists()
