"""Shared pieces of the builtin models: training targets, input checks and the file format.

Training targets, exactly (``latency_s`` in seconds, one workload key per sample):

- ``failed_mask``: a latency that is not finite, not positive or ``>= FAILED_LATENCY_S``.
- ``normalized_throughput``: ``min(latency_s of the group's successes) / latency_s``, in
  ``(0, 1]``; a failure gets 0, so every failure is below every success. A group with no
  success is all 0.
- ``relevance_levels``: integer ranking labels for LambdaMART objectives. Failures get 0;
  the successes of a group get ``1 .. levels - 1`` by the percentile of their latency
  rank (fastest = ``levels - 1``), so every group spans the same range.

A saved model is a directory (``model.save(path)`` creates it)::

    path/costlab-model.json   format, model name, hyper-parameters, FeatureSchema, small state
    path/data.npz             the training data seen so far (for update() after load)
    path/...                  the model's own safe artifact (XGBoost UBJ, LightGBM text,
                              torch state_dict loaded with weights_only=True)

``data.npz`` is written and read with ``allow_pickle=False``; nothing is ever pickled.
"""

from __future__ import annotations

import json
import numbers
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from costlab.errors import CostlabError
from costlab.features._base import Features, FeatureSchema, GraphBatch, concat_features
from costlab.models._base import FAILED_LATENCY_S, CostModel, check_schema

META_FILE = "costlab-model.json"
DATA_FILE = "data.npz"
FORMAT = "costlab-model"
FORMAT_VERSION = 1
RANK_LEVELS = 31  # LightGBM's default label_gain and XGBoost's exp-gain NDCG allow 0..30


# -- hyper-parameter checks (CostModel.check_params) --------------------------------
def check_choice(model: str, param: str, value, valid) -> None:
    """Refuse ``value`` unless it is one of ``valid``, naming the valid ones."""
    if isinstance(value, (dict, list)) or value not in valid:
        raise CostlabError(f"{model}: unknown {param} {value!r}; valid: {', '.join(map(str, valid))}")


def check_number(model: str, param: str, value, *, at_least: float | None = None, above: float | None = None,
                 at_most: float | None = None, integer: bool = False) -> None:
    """Refuse ``value`` unless it is a number (an integer if asked) within the bounds given."""
    ok = isinstance(value, numbers.Integral if integer else numbers.Real) and not isinstance(value, bool)
    ok = ok and (at_least is None or value >= at_least) and (above is None or value > above)
    ok = ok and (at_most is None or value <= at_most)
    if not ok:
        bounds = [f">= {at_least}" if at_least is not None else "", f"> {above}" if above is not None else "",
                  f"<= {at_most}" if at_most is not None else ""]
        kind = "an integer" if integer else "a number"
        raise CostlabError(f"{model}: {param} must be {kind} {' and '.join(b for b in bounds if b)} "
                           f"(value: {value!r})".replace("  ", " "))


def check_boosting_params(model, library: str) -> None:
    """The hyper-parameters the gradient-boosted-tree models (xgb, lgbm) share, with one meaning:
    ``learning_rate``, ``reg_lambda``, ``max_bin``, ``subsample``, ``colsample_bytree``,
    ``n_threads`` and ``extra_params`` (passed to ``library`` as given)."""
    check_number(model.name, "learning_rate", model.learning_rate, above=0)
    check_number(model.name, "reg_lambda", model.reg_lambda, at_least=0)
    check_number(model.name, "max_bin", model.max_bin, at_least=2, integer=True)
    for param in ("subsample", "colsample_bytree"):
        check_number(model.name, param, getattr(model, param), above=0, at_most=1)
    if model.n_threads is not None:
        check_number(model.name, "n_threads", model.n_threads, at_least=1, integer=True)
    if model.extra_params is not None and not isinstance(model.extra_params, dict):
        raise CostlabError(f"{model.name}: extra_params must be a mapping of {library} parameters "
                           f"(value: {model.extra_params!r})")


def check_extra_param_names(model, unused: list[str], why: str) -> None:
    """Refuse the ``extra_params`` names the library would ignore (``unused``, for the
    reason ``why``): XGBoost only warns and LightGBM says nothing, so a misspelt name
    would silently change nothing."""
    if unused:
        raise CostlabError(f"{model.name}: extra_params {', '.join(sorted(unused))}: {why} "
                           f"(given: {model.extra_params!r})")


# -- training targets --------------------------------------------------------------
def failed_mask(latency_s: np.ndarray) -> np.ndarray:
    """True where a measurement failed (inf, NaN, <= 0 or >= FAILED_LATENCY_S)."""
    lat = np.asarray(latency_s, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return ~(np.isfinite(lat) & (lat > 0) & (lat < FAILED_LATENCY_S))


def group_codes(groups: np.ndarray) -> tuple[np.ndarray, int]:
    """Integer code per sample (in order of first appearance) and the number of groups."""
    _, first, inverse = np.unique(np.asarray(groups), return_index=True, return_inverse=True)
    order = np.argsort(np.argsort(first, kind="stable"), kind="stable")
    return order[inverse.reshape(-1)].astype(np.int64), int(first.size)


GROUP_WEIGHTS = ("rows", "equal")


def group_weights(groups: np.ndarray, how: str) -> np.ndarray | None:
    """Training weight per sample: ``"rows"`` gives None (every sample weighs 1);
    ``"equal"`` gives every group the same total weight, the mean weight staying 1, so
    that a workload with few measurements counts as much as one with thousands."""
    if how not in GROUP_WEIGHTS:
        raise CostlabError(f"unknown group_weight {how!r}; valid: {', '.join(GROUP_WEIGHTS)}")
    if how == "rows":
        return None
    codes, n_groups = group_codes(groups)
    sizes = np.bincount(codes, minlength=n_groups)
    return (codes.size / n_groups) / sizes[codes].astype(np.float64)


def normalized_throughput(latency_s: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """``min latency / latency`` within each group, in (0, 1]; failures (and all-failed groups) 0."""
    lat = np.asarray(latency_s, dtype=np.float64)
    failed = failed_mask(lat)
    codes, n_groups = group_codes(groups)
    out = np.zeros(lat.shape, dtype=np.float64)
    for g in range(n_groups):
        ok = (codes == g) & ~failed
        if ok.any():
            out[ok] = lat[ok].min() / lat[ok]
    return out


def _average_ranks(a: np.ndarray) -> np.ndarray:
    """1-based ascending ranks, ties sharing their average rank (scipy's rankdata "average")."""
    _, inverse, counts = np.unique(a, return_inverse=True, return_counts=True)
    return (np.cumsum(counts) - (counts - 1) / 2.0)[inverse.reshape(-1)]


def relevance_levels(latency_s: np.ndarray, groups: np.ndarray, levels: int = RANK_LEVELS) -> np.ndarray:
    """Integer relevance in ``0 .. levels-1``: failures 0, successes by latency percentile."""
    lat = np.asarray(latency_s, dtype=np.float64)
    failed = failed_mask(lat)
    codes, n_groups = group_codes(groups)
    out = np.zeros(lat.shape, dtype=np.int64)
    for g in range(n_groups):
        ok = np.flatnonzero((codes == g) & ~failed)
        if ok.size == 0:
            continue
        if ok.size == 1:
            out[ok] = levels - 1
            continue
        pct = (_average_ranks(-lat[ok]) - 1.0) / (ok.size - 1.0)  # fastest -> 1
        out[ok] = 1 + np.floor(pct * (levels - 2) + 0.5).astype(np.int64)
    return out


def inf_as_missing(x: np.ndarray) -> np.ndarray:
    """Dense features with infinite cells as missing (NaN), as LightGBM and the GNN read them:
    XGBoost refuses inf in training and would split on it in prediction."""
    x = np.asarray(x)
    return np.where(np.isinf(x), np.nan, x) if np.issubdtype(x.dtype, np.floating) and np.isinf(x).any() else x


def _json_value(value):
    """A numpy number (an ``np.arange`` sweep's value) as the plain number JSON holds."""
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def finite_scores(scores: np.ndarray) -> np.ndarray:
    """float64 scores with NaN and infinities replaced by finite values (NaN ranks last)."""
    return np.nan_to_num(np.asarray(scores, dtype=np.float64).reshape(-1), nan=-1e30, posinf=1e30, neginf=-1e30)


# -- inputs --------------------------------------------------------------------------
def check_is_features(model: CostModel, features) -> None:
    """A CostlabError unless ``features`` are costlab Features (an array fails deep inside)."""
    if not isinstance(features, Features):
        raise CostlabError(f"cost model {model.name!r}: expects costlab Features (an extractor's output, or "
                           f"Features(schema, dense=...)), got {type(features).__name__}")


def check_inputs(model: CostModel, features: Features, latency_s, groups, kinds: tuple[str, ...]):
    """Validated ``(latency_s float64, groups str)``; CostlabError on wrong kinds or lengths."""
    check_is_features(model, features)
    if features.kind not in kinds:
        raise CostlabError(
            f"cost model {model.name!r} needs {' or '.join(kinds)} features, but extractor "
            f"{features.schema.extractor!r} gives {features.kind!r} ones"
        )
    if groups is None:
        raise CostlabError(f"cost model {model.name!r}: groups is None; give one workload key per sample (the "
                           f"same string for every sample of one workload)")
    lat = np.asarray(latency_s, dtype=np.float64).reshape(-1)
    grp = np.asarray([str(g) for g in np.asarray(groups).reshape(-1)], dtype=str)
    if not (len(features) == lat.size == grp.size):
        raise CostlabError(
            f"cost model {model.name!r}: {len(features)} feature rows, {lat.size} latencies and "
            f"{grp.size} groups; they must be equal"
        )
    return lat, grp


@dataclass
class TrainingData:
    """Everything a model was trained on: features, latencies (s) and workload keys."""

    features: Features
    latency_s: np.ndarray
    groups: np.ndarray

    def __len__(self) -> int:
        return int(self.latency_s.size)

    def extend(self, other: "TrainingData") -> "TrainingData":
        return TrainingData(
            concat_features([self.features, other.features]),
            np.concatenate([self.latency_s, other.latency_s]),
            np.concatenate([self.groups, other.groups]),
        )

    def save(self, path: Path) -> None:
        arrays = {"latency_s": self.latency_s, "groups": self.groups}
        if self.features.kind == "dense":
            arrays["dense"] = self.features.dense
        else:
            g = self.features.graphs
            arrays.update(node_features=g.node_features, edge_index=g.edge_index, edge_type=g.edge_type,
                          batch=g.batch, num_graphs=np.asarray(g.num_graphs, dtype=np.int64))
        np.savez_compressed(path, **arrays)  # np.load reads both; dense features compress ~17x

    @classmethod
    def load(cls, path: Path, schema: FeatureSchema) -> "TrainingData":
        with np.load(path, allow_pickle=False) as z:
            if schema.kind == "dense":
                features = Features(schema, dense=z["dense"])
            else:
                features = Features(schema, graphs=GraphBatch(
                    node_features=z["node_features"], edge_index=z["edge_index"], edge_type=z["edge_type"],
                    batch=z["batch"], num_graphs=int(z["num_graphs"])))
            return cls(features, z["latency_s"], z["groups"])


# -- files ---------------------------------------------------------------------------
def write_meta(path: Path, model: CostModel, schema: FeatureSchema | None, state: dict) -> None:
    (path / META_FILE).write_text(_meta_text(model, schema, state))


def _meta_text(model: CostModel, schema: FeatureSchema | None, state: dict) -> str:
    meta = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "model": model.name,
        "params": model.get_params(),
        "features": None if schema is None else schema.to_dict(),
        "state": state,
    }
    try:
        return json.dumps(meta, indent=1, default=_json_value)
    except TypeError as err:
        raise CostlabError(f"cost model {model.name!r}: hyper-parameters must be JSON values: {err}") from None


def file_in(path: str | Path, name, what: str = "file") -> Path:
    """``path / name`` for a file name read from a saved model's metadata; a name that is not a
    plain file name of that folder (``../x``, ``/etc/x``, a sub-path), or a symbolic link that
    leads out of it, is refused, so a model folder someone sent cannot make costlab read files
    outside it."""
    plain = isinstance(name, str) and name not in ("", ".", "..") and Path(name).name == name and "\\" not in name
    if not plain or not (Path(path) / name).resolve().is_relative_to(Path(path).resolve()):  # a link out, too
        raise CostlabError(f"{Path(path) / META_FILE}: its {what} {name!r} is not a file name in {path}; the "
                           f"folder is damaged or was not written by costlab")
    return Path(path) / name


def read_meta(path: str | Path, name: str | None = None) -> dict:
    """The metadata of a saved model; CostlabError when it is missing or of another model."""
    file = Path(path) / META_FILE
    if not Path(path).exists():
        raise CostlabError(f"{path}: no such model directory (costlab train --out writes one)")
    if not file.is_file():
        raise CostlabError(f"{path}: not a saved costlab model (no {META_FILE})")
    try:
        meta = json.loads(file.read_text())
    except json.JSONDecodeError as err:
        raise CostlabError(f"{file}: not valid JSON: {err}") from None
    if not isinstance(meta, dict):
        raise CostlabError(f"{file}: holds a JSON {type(meta).__name__}, not the object costlab writes")
    if "format" not in meta:
        raise CostlabError(f"{file}: names no format, so it is not a model costlab saved (it writes format "
                           f"{FORMAT!r} v{FORMAT_VERSION})")
    if meta.get("format") != FORMAT or meta.get("format_version") != FORMAT_VERSION:
        raise CostlabError(f"{file}: unsupported format {meta.get('format')!r} v{meta.get('format_version')}")
    if name is not None and meta.get("model") != name:
        raise CostlabError(f"{path}: holds a {meta.get('model')!r} model, not {name!r}")
    return meta


class TrainedModel(CostModel):
    """Template of the builtin models: input checks, the data store, update and save/load.

    A subclass sets ``name``, ``default_features``, ``feature_kinds`` and implements
    ``_fit(data)``, ``_predict(features)``, ``_save_state(path) -> dict`` and
    ``_load_state(path, state)``. It may override ``_update(data, new)`` (default: refit
    on everything seen so far).
    """

    feature_kinds: tuple[str, ...] = ("dense",)

    # -- the contract --------------------------------------------------------------
    def fit(self, features: Features, latency_s: np.ndarray, groups: np.ndarray) -> "TrainedModel":
        lat, grp = check_inputs(self, features, latency_s, groups, self.feature_kinds)
        if lat.size == 0:
            raise CostlabError(f"cost model {self.name!r}: fit needs at least one sample")

        def fit() -> None:
            self.schema_ = features.schema
            self.data_ = TrainingData(features, lat, grp)
            self._fit(self.data_)
        return self._all_or_nothing(fit)

    def update(self, features: Features, latency_s: np.ndarray, groups: np.ndarray) -> "TrainedModel":
        if not self.is_fitted:
            return self.fit(features, latency_s, groups)
        lat, grp = check_inputs(self, features, latency_s, groups, self.feature_kinds)
        check_schema(self.schema_, features.schema, self._where)
        if lat.size == 0:
            return self
        new = TrainingData(features, lat, grp)

        def update() -> None:
            self.data_ = self.data_.extend(new)
            self._update(self.data_, new)
        return self._all_or_nothing(update)

    def _all_or_nothing(self, train) -> "TrainedModel":
        """``train()``, or on an exception the model as it was before it (its attributes): a failed
        fit or update leaves no half-stored batch, new schema or missing booster behind."""
        before = dict(self.__dict__)
        try:
            train()
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(before)
            raise
        return self

    def predict(self, features: Features) -> np.ndarray:
        if not self.is_fitted:
            raise CostlabError(f"cost model {self.name!r} is not fitted; call fit() or update() first")
        check_is_features(self, features)
        check_schema(self.schema_, features.schema, self._where)
        if len(features) == 0:
            return np.zeros(0, dtype=np.float64)
        return finite_scores(self._predict(features))

    def save(self, path: str | Path) -> None:
        if not self.is_fitted:
            raise CostlabError(f"cost model {self.name!r} is not fitted; nothing to save")
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        _meta_text(self, self.schema_, {})  # its parameters checked before any file is written
        state = self._save_state(path)
        self.data_.save(path / DATA_FILE)
        write_meta(path, self, self.schema_, state)

    @classmethod
    def load(cls, path: str | Path) -> "TrainedModel":
        meta = read_meta(path, cls.name)
        model = cls(**meta["params"])
        model.schema_ = FeatureSchema.from_dict(meta["features"])
        model.data_ = TrainingData.load(Path(path) / DATA_FILE, model.schema_)
        model.path_ = str(path)
        model._load_state(Path(path), meta["state"])
        return model

    # -- helpers ---------------------------------------------------------------------
    @property
    def is_fitted(self) -> bool:
        return hasattr(self, "data_")

    @property
    def _where(self) -> str:
        return getattr(self, "path_", f"<unsaved {self.name} model>")

    def _update(self, data: TrainingData, new: TrainingData) -> None:
        self._fit(data)

    # -- for subclasses ------------------------------------------------------------------
    def _fit(self, data: TrainingData) -> None:
        raise NotImplementedError

    def _predict(self, features: Features) -> np.ndarray:
        raise NotImplementedError

    def _save_state(self, path: Path) -> dict:
        return {}

    def _load_state(self, path: Path, state: dict) -> None:
        pass


def save_model(model: CostModel, path: str | Path) -> None:
    """``model.save(path)``; for a registered model that writes no ``costlab-model.json`` of its
    own (a plug-in written against the bare contract), one that names it, so that
    :func:`load_model` finds its class (its own ``load`` still reads its own files)."""
    from costlab.models._base import MODELS

    model.save(path)
    if not (Path(path) / META_FILE).is_file() and model.name in MODELS:
        write_meta(Path(path), model, getattr(model, "schema_", None), {"saved_by": f"{type(model).__qualname__}.save"})


def load_model(path: str | Path) -> CostModel:
    """Load any saved costlab model, whichever registered class wrote it."""
    from costlab.models._base import MODELS
    from costlab.models.warm_blend import META_FILE as WARM_BLEND_META, WarmBlend

    if (Path(path) / WARM_BLEND_META).is_file():  # a tuning session's warm: blend model
        return WarmBlend.load(path)
    meta = read_meta(path)
    model_class = MODELS.factory(meta["model"])
    try:
        return model_class.load(path)
    except CostlabError:
        raise
    except Exception as err:  # a file the model reads is missing, truncated or damaged
        raise CostlabError(f"{path}: its {meta['model']!r} model cannot be loaded, a file of it is missing or "
                           f"damaged: {_one_line(err)}") from None


def _one_line(err: BaseException) -> str:
    """``err`` as ``Type: first line of its message`` (XGBoost's run on with a C++ stack trace)."""
    if isinstance(err, OSError) and err.filename is not None:
        return f"{type(err).__name__}: {err.strerror or err} ({err.filename})"
    import re

    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    first = re.sub(r"^\[[\d:]+\] \S+: ", "", lines[0]) if lines else "(no message)"  # XGBoost's "[time] file:line: "
    if len(first) > 160:  # torch's explains at length what may have happened
        first = first.split(". ")[0] + " ..."
    return f"{type(err).__name__}: {first}"
