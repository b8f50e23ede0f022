"""A model folder someone sent: the file names its metadata gives are plain names inside it
(``../x`` and absolute paths made costlab read boosters and ensemble members elsewhere)."""

import json

import numpy as np
import pytest

from costlab.errors import CostlabError
from costlab.features import Features, FeatureSchema
from costlab.models import get, load_model, save_model
from costlab.models._common import META_FILE

SCHEMA = FeatureSchema("toy", 1, ["a", "b"])


def _saved(tmp_path, name, **params):
    rng = np.random.default_rng(0)
    model = get(name)(**params).fit(Features(SCHEMA, dense=rng.random((40, 2))), rng.random(40), ["g"] * 40)
    save_model(model, tmp_path / name)
    return tmp_path / name


def _point(folder, key, value, in_members=False):
    meta = json.loads((folder / META_FILE).read_text())
    meta["state"][key] = [value] if in_members else value
    (folder / META_FILE).write_text(json.dumps(meta))


@pytest.mark.parametrize("name", ["lgbm", "xgb", "tvm-xgb"])
@pytest.mark.parametrize("where", ["../elsewhere/{file}", "/tmp/{file}", "sub/{file}", ".."])
def test_a_booster_named_outside_the_folder_is_refused(tmp_path, name, where):
    folder = _saved(tmp_path, name, **({} if name == "tvm-xgb" else {"n_estimators": 3}))
    original = json.loads((folder / META_FILE).read_text())["state"]["booster"]
    if original is None:  # tvm-xgb keeps no booster before it holds enough samples
        _point(folder, "booster", where.format(file="booster.json"))
    else:
        (tmp_path / "elsewhere").mkdir(exist_ok=True)
        (folder / original).rename(tmp_path / "elsewhere" / original)  # only the file outside exists
        _point(folder, "booster", where.format(file=original))
    with pytest.raises(CostlabError, match=rf"{META_FILE}: its booster '.*' is not a file name in .*; the "
                                           r"folder is damaged or was not written by costlab"):
        load_model(folder)


@pytest.mark.parametrize("name", ["../weights.pt", "/etc/passwd", "a/b.pt", ".", "", None, 3])
def test_only_a_plain_file_name_is_taken(tmp_path, name):
    from costlab.models._common import file_in

    with pytest.raises(CostlabError, match=r"its weights .* is not a file name in"):
        file_in(tmp_path, name, "weights")
    assert file_in(tmp_path, "weights.pt", "weights") == tmp_path / "weights.pt"


def test_an_ensemble_member_outside_the_folder_is_refused(tmp_path):
    folder = _saved(tmp_path, "ensemble", base="lgbm", base_params={"n_estimators": 3}, n_members=1)
    assert load_model(folder).predict(Features(SCHEMA, dense=np.zeros((2, 2)))).shape == (2,)
    for where in ("/tmp", ".", "../lgbm"):
        _point(folder, "members", where, in_members=True)
        with pytest.raises(CostlabError, match=r"its member folder '.*' is not a file name in"):
            load_model(folder)


def test_a_link_out_of_the_folder_is_refused(tmp_path):
    folder = _saved(tmp_path, "lgbm", n_estimators=3)
    booster = json.loads((folder / META_FILE).read_text())["state"]["booster"]
    (folder / booster).rename(tmp_path / "outside.txt")
    (folder / booster).symlink_to(tmp_path / "outside.txt")
    with pytest.raises(CostlabError, match=rf"its booster '{booster}' is not a file name in"):
        load_model(folder)
