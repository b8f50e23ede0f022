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
