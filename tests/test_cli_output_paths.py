"""The commands that write a directory refuse a bad --out before their work, in one line."""

import pytest
from typer.testing import CliRunner

from costlab.cli import app
from costlab.errors import CostlabError
from costlab.filenames import check_output_dir


def test_an_output_directory_that_is_a_file_or_under_one_is_refused_by_name(tmp_path):
    a_file = tmp_path / "report.md"
    a_file.write_text("")
    with pytest.raises(CostlabError, match=f"^--out {a_file}: is not a directory$"):
        check_output_dir(a_file, "--out")
    with pytest.raises(CostlabError, match=f"--out {a_file / 'x' / 'y'}: cannot be created: {a_file} is not a directory"):
        check_output_dir(a_file / "x" / "y", "--out")
    check_output_dir(tmp_path / "new" / "deeper", "--out")  # creatable: fine, and nothing is created yet
    assert not (tmp_path / "new").exists()
    check_output_dir(tmp_path, "--out")


@pytest.mark.parametrize("command", [
    ["compare", "some-experiment"],
    ["dataset", "build", "--db", "no-such-db"],
    ["train", "--dataset", "no-such-dataset", "--model", "xgb"],  # refused before the dataset is even read
])
def test_each_command_that_writes_a_directory_checks_out_first(tmp_path, command):
    a_file = tmp_path / "taken"
    a_file.write_text("")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    extra = ["--tracking-uri", uri] if command[0] in ("compare", "train") else []
    done = CliRunner().invoke(app, [*command, "--out", str(a_file), *extra])
    assert isinstance(done.exception, CostlabError), done.output
    assert str(done.exception) == f"--out {a_file}: is not a directory"


def test_compare_on_a_store_that_is_not_there_says_so_and_creates_nothing(tmp_path):
    store = tmp_path / "runs" / "mlflow.db"
    done = CliRunner().invoke(app, ["compare", "e", "--tracking-uri", f"sqlite:///{store}",
                                    "--out", str(tmp_path / "out")])
    assert isinstance(done.exception, CostlabError), done.output
    assert f"no MLflow store there ({store} does not exist)" in str(done.exception)
    assert not (tmp_path / "runs").exists() and not (tmp_path / "out").exists()
    store.parent.mkdir()
    store.write_bytes(b"")  # an empty file (touched, or made by a failed copy): reading it wrote MLflow's tables
    done = CliRunner().invoke(app, ["compare", "e", "--tracking-uri", f"sqlite:///{store}",
                                    "--out", str(tmp_path / "out")])
    assert f"{store} is an empty file, no MLflow store" in str(done.exception), done.output
    assert store.stat().st_size == 0 and not (tmp_path / "out").exists()


def test_a_dataset_path_that_is_missing_or_not_a_dataset_says_which_and_how_to_build_one(tmp_path):
    from costlab.data.dataset import load_dataset

    with pytest.raises(CostlabError, match=f"^dataset {tmp_path / 'gone'}: no such directory; "
                                           f"`costlab dataset build --db DB --out {tmp_path / 'gone'}` builds one$"):
        load_dataset(tmp_path / "gone")
    with pytest.raises(CostlabError, match=f"^dataset {tmp_path}: no records.parquet in it \\(not a costlab dataset\\)"):
        load_dataset(tmp_path)


@pytest.mark.parametrize("command", ["train", "evaluate"])
def test_train_and_evaluate_name_every_split_they_take_none_included_before_reading_the_dataset(tmp_path, command):
    args = ["--model", "xgb", "--out", str(tmp_path / "m")] if command == "train" else ["--model", str(tmp_path)]
    done = CliRunner().invoke(app, [command, "--dataset", str(tmp_path / "none-here"), *args, "--split", "bogus",
                                    "--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}"])
    assert isinstance(done.exception, CostlabError), done.output
    assert str(done.exception) == ("--split 'bogus': must be one of none, holdout, kfold, leave-one-family-out, "
                                   "leave-one-task-out")


def test_an_output_directory_that_cannot_be_written_is_refused_before_the_work(tmp_path):
    with pytest.raises(CostlabError, match="^--out /proc/nope: /proc is not writable"):
        check_output_dir("/proc/nope", "--out")


def _cli(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def test_dataset_build_neither_overwrites_nor_mixes_into_a_directory_that_holds_files(tmp_path):
    from costlab.data.dataset import load_metadata
    from tests.data.helpers import make_gemm_db

    db = make_gemm_db(tmp_path / "db", sizes=(16, 32)).path
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "mine.txt").write_text("keep me")
    for force in ([], ["--force"]):  # not a dataset: never written into
        done = _cli("dataset", "build", "--db", db, "--out", notes, *force)
        assert isinstance(done.exception, CostlabError), done.output
        assert str(done.exception) == (f"--out {notes}: is not empty (mine.txt) and is not a costlab dataset "
                                       f"(no dataset.json): choose a new or empty directory")
    assert sorted(p.name for p in notes.iterdir()) == ["mine.txt"]

    done = _cli("dataset", "build", "--db", db, "--out", db)
    assert str(done.exception) == f"--out {db}: is also a --db; a dataset goes in a directory of its own"

    ds = tmp_path / "ds"
    assert _cli("dataset", "build", "--db", db, "--out", ds).exit_code == 0
    (ds / "PROVENANCE.md").write_text("measured on ...")
    first = load_metadata(ds)["dataset_id"]
    again = _cli("dataset", "build", "--db", db, "--out", ds)
    assert str(again.exception).startswith(f"--out {ds}: already holds a costlab dataset (PROVENANCE.md, README.md, "
                                           f"dataset.json, records.parquet, workloads.json): choose a new or empty "
                                           f"directory, or pass --force to replace it")
    bigger = make_gemm_db(tmp_path / "db2", sizes=(48,)).path
    replaced = _cli("dataset", "build", "--db", db, "--db", bigger, "--out", ds, "--force")
    assert replaced.exit_code == 0, replaced.output
    assert load_metadata(ds)["dataset_id"] != first and (ds / "PROVENANCE.md").read_text() == "measured on ..."
    assert "PROVENANCE.md (kept when the dataset is built again) says how it was made." in (ds / "README.md").read_text()


def test_train_replaces_only_a_model_and_only_with_force_leaving_no_old_files(tmp_path):
    from costlab.data.dataset import build_dataset
    from tests.data.helpers import make_gemm_db

    build_dataset([make_gemm_db(tmp_path / "db", sizes=(16, 32, 48)).path], tmp_path / "ds")
    common = ["--dataset", tmp_path / "ds", "--split", "none", "--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}"]
    done = _cli("train", "--model", "xgb", "--out", tmp_path / "ds", "--force", *common)  # --out == --dataset
    assert str(done.exception).startswith(f"--out {tmp_path / 'ds'}: is not empty (README.md, dataset.json, ")
    assert str(done.exception).endswith("and is not a costlab model (no costlab-model.json): choose a new or empty "
                                        "directory")

    model = tmp_path / "m"
    assert _cli("train", "--model", "xgb", "--features", "per_store", "--out", model, *common).exit_code == 0
    xgb_files = {p.name for p in model.iterdir()}
    again = _cli("train", "--model", "random", "--out", model, *common)
    assert str(again.exception).startswith(f"--out {model}: already holds a costlab model (")
    assert {p.name for p in model.iterdir()} == xgb_files
    replaced = _cli("train", "--model", "random", "--out", model, "--force", *common)
    assert replaced.exit_code == 0, replaced.output
    random_files = {p.name for p in model.iterdir()}
    assert "booster.ubj" in xgb_files - random_files  # the xgb model's own file is gone, not left mixed in
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no partial directory left

    link = tmp_path / "m-link"  # a symlinked --out: rmtree refused the link, and the new model was thrown away
    link.symlink_to(model)
    relinked = _cli("train", "--model", "xgb", "--features", "per_store", "--out", link, "--force", *common)
    assert relinked.exit_code == 0, relinked.output
    assert link.is_symlink() and "booster.ubj" in {p.name for p in link.iterdir()}
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


@pytest.mark.parametrize("features, said", [
    ("graph", "--features graph: features 'graph' are graph, and model 'xgb' takes dense features"),
    ("", "--features '': names no feature extractor (leave it out for the model's own)"),
])
def test_train_refuses_features_the_model_cannot_take_before_reading_the_dataset(tmp_path, features, said):
    done = _cli("train", "--dataset", tmp_path / "not-read", "--model", "xgb", "--features", features,
                "--out", tmp_path / "m", "--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}")
    assert isinstance(done.exception, CostlabError), done.output
    assert str(done.exception) == said


def test_hold_out_names_itself_and_says_when_its_file_is_no_experiment_config(tmp_path):
    (tmp_path / "dataset.json").write_text('{"format_version": 1, "n_rows": 3}')
    (tmp_path / "notes.md").write_text("# notes\nFiles: a (one: b)\n")
    said = {}
    for name in ("dataset.json", "notes.md"):
        done = _cli("train", "--dataset", tmp_path / "not-read", "--model", "random", "--out", tmp_path / "m",
                    "--hold-out", tmp_path / name, "--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}")
        assert isinstance(done.exception, CostlabError), done.output
        said[name] = str(done.exception)
    assert said["dataset.json"] == (f"--hold-out {tmp_path / 'dataset.json'}: not a costlab experiment config: it has "
                                    f"none of the fields name, workloads, cost_models (its fields: format_version, n_rows)")
    assert said["notes.md"] == (f"--hold-out {tmp_path / 'notes.md'}: broken YAML at line 2, column 14: mapping values "
                                f"are not allowed here")


@pytest.mark.parametrize("args, said", [
    (["--test-fraction", "1.5"], "--test-fraction 1.5: must be between 0 and 1, both exclusive"),
    (["--test-fraction", "0"], "--test-fraction 0: must be between 0 and 1, both exclusive"),
    (["--param", "bad"], "--param 'bad' is not of the form KEY=VALUE (KEY dotted, e.g. num_leaves=31)"),
    # these named the extractor or the hyper-parameter, not the option (a bad-input audit)
    (["--features", "nope"], "--features nope: unknown feature extractor 'nope'; valid names: analysis, graph, none, "
                             "per_store, trace, trace_seq"),
    (["--param", "num_leaves=abc"], "--param num_leaves=abc: lgbm: num_leaves must be an integer >= 2 (value: 'abc')"),
])
def test_train_names_the_option_of_a_bad_value_before_reading_the_dataset(tmp_path, args, said):
    done = _cli("train", "--dataset", tmp_path / "not-read", "--model", "lgbm", "--out", tmp_path / "m", *args,
                "--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}")
    assert isinstance(done.exception, CostlabError), done.output
    assert str(done.exception) == said


def test_a_split_the_dataset_cannot_make_names_the_dataset_and_the_way_out(tmp_path):
    from costlab.data.dataset import build_dataset
    from tests.data.helpers import make_gemm_db

    build_dataset([make_gemm_db(tmp_path / "db", sizes=(16,)).path], tmp_path / "ds")
    uri = ["--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}"]
    done = _cli("train", "--dataset", tmp_path / "ds", "--model", "random", "--out", tmp_path / "m", *uri)
    assert str(done.exception) == (f"dataset {tmp_path / 'ds'}: --split holdout: a holdout split needs at least 2 "
                                   f"workloads, the dataset has 1 (--split none uses every row)")
    gone = _cli("evaluate", "--dataset", tmp_path / "ds", "--model", tmp_path / "no-model", *uri)
    assert str(gone.exception) == f"{tmp_path / 'no-model'}: no such model directory (costlab train --out writes one)"


def test_an_unreachable_tracking_server_names_the_option_it_came_from(tmp_path):
    done = _cli("train", "--dataset", tmp_path / "not-read", "--model", "random", "--out", tmp_path / "m",
                "--tracking-uri", "http://127.0.0.1:9")
    assert str(done.exception).startswith("MLflow tracking server http://127.0.0.1:9 is unreachable (")
    assert str(done.exception).endswith("); start it or change --tracking-uri")


@pytest.mark.parametrize("command", ["train", "evaluate"])
def test_a_fold_of_no_split_is_refused_and_nothing_is_created_before_the_work(tmp_path, command):
    args = ["--model", "xgb", "--out", tmp_path / "m"] if command == "train" else ["--model", tmp_path]
    done = _cli(command, "--dataset", tmp_path / "not-read", *args, "--split", "none", "--fold", "3",
                "--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}")
    assert str(done.exception) == "--fold 3: --split none has no folds (it takes every row)"
    done = _cli(command, "--dataset", tmp_path / "not-read", *args, "--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}")
    assert isinstance(done.exception, CostlabError), done.output  # no dataset (train), no model (evaluate)
    assert not (tmp_path / "mlflow.db").exists()  # made when a run is logged, not by a command that stops early


def test_train_checks_the_folder_it_writes_the_model_in_not_only_out(tmp_path):
    """--out an empty folder it may write, inside one it may not: the model is written beside
    --out and moved in, so training ran to its end and then failed with a PermissionError."""
    import stat
    import subprocess

    from tests.e2e.helpers import COSTLAB, without_write_override

    parent, out = tmp_path / "read-only", tmp_path / "read-only" / "model"
    out.mkdir(parents=True)
    parent.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        done = subprocess.run([*without_write_override(), *COSTLAB, "train", "--dataset", str(tmp_path / "none"),
                               "--model", "xgb", "--out", str(out), "--tracking-uri",
                               f"sqlite:///{tmp_path / 'mlflow.db'}"], capture_output=True, text=True, timeout=120)
    finally:
        parent.chmod(stat.S_IRWXU)
    said = " ".join(done.stderr.split())
    assert done.returncode == 2 and f"the folder of --out {parent}: {parent} is not writable" in said, said[-2000:]
