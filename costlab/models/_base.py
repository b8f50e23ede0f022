"""The cost-model contract (scikit-learn style) and its registry.

Call order, in tuning and offline alike:

1. ``model = ModelClass(**hyper_params)`` stores the keyword arguments and does no work;
   ``model.check_params()`` (optional) refuses bad values without training, so that a
   config is refused when it is loaded, not after the first measured batch.
2. ``model.fit(features, latency_s, groups)`` trains from scratch and returns ``self``.
3. ``model.update(features, latency_s, groups)`` adds newly measured samples (online
   tuning); it may retrain on everything seen so far. Returns ``self``.
4. ``model.predict(features)`` returns float64 scores of shape ``(n,)``; higher = faster.
5. ``model.save(path)`` / ``ModelClass.load(path)`` use safe formats only (no pickle).

Units: ``latency_s`` is the measured latency in seconds. A failed build or run is
``np.inf`` (MetaSchedule's 1e10 is converted by the caller); a model must never rank
a failed sample as good. ``groups`` holds one workload key (str) per sample; targets
such as normalized throughput are computed within a group.

Learned state lives in attributes ending in ``_`` set by ``fit``. Each model owns its
RNG (seeded by the ``seed`` hyper-parameter) and never touches numpy's global one.
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from pathlib import Path

import numpy as np

from costlab.data.database import FAILED_LATENCY_S as FAILED_LATENCY_S  # re-exported: at or above it, a latency fails
from costlab.errors import CostlabError
from costlab.features._base import Features, FeatureSchema
from costlab.registry import Registry


class CostModel(ABC):
    """Base class of every costlab cost model."""

    name: str = ""
    default_features: str = "per_store"

    def get_params(self, deep: bool = True) -> dict:
        """The constructor's keyword arguments, as given (scikit-learn's contract; ``deep`` is
        accepted for ``sklearn.base.clone`` and changes nothing: no parameter is an estimator)."""
        sig = inspect.signature(type(self).__init__)
        return {p: getattr(self, p) for p in sig.parameters if p != "self" and hasattr(self, p)}

    def set_params(self, **params) -> "CostModel":
        """Set constructor keyword arguments (scikit-learn's contract) and return ``self``; an
        unknown name, or a value :meth:`check_params` refuses, is a :class:`CostlabError` and
        changes nothing. It does not retrain: call ``fit`` afterwards."""
        before = self.get_params()
        unknown = sorted(set(params) - set(before))
        if unknown:
            raise CostlabError(f"cost model {self.name!r}: unknown parameter {unknown[0]!r} (value: "
                               f"{params[unknown[0]]!r}); valid: {', '.join(before)}")
        for key, value in params.items():
            setattr(self, key, value)
        try:
            self.check_params()
        except BaseException:
            for key in params:
                setattr(self, key, before[key])
            raise
        return self

    def check_params(self) -> None:
        """Raise :class:`CostlabError` naming a hyper-parameter whose value cannot work, its
        value and the valid ones. Does no training; the default accepts everything."""

    @abstractmethod
    def fit(self, features: Features, latency_s: np.ndarray, groups: np.ndarray) -> "CostModel":
        ...

    def update(self, features: Features, latency_s: np.ndarray, groups: np.ndarray) -> "CostModel":
        """Train further on a new batch of measurements (a tuning session calls it after each
        batch). A model that does not implement it cannot be trained online."""
        raise CostlabError(f"cost model {self.name!r} ({type(self).__module__}.{type(self).__qualname__}) does "
                           f"not implement update(): a tuning session trains its model online after each "
                           f"measured batch")

    @abstractmethod
    def predict(self, features: Features) -> np.ndarray:
        ...

    def reseed(self, seed: int) -> "CostModel":
        """Draw the randomness of later training from ``seed``, keeping what was learned.

        A pretrained model is loaded with the seed it was trained with; a tuning session
        reseeds it with its own, so the seeds of an experiment differ in the model's online
        refits too (bagging, sampling), not only in the search.
        """
        if hasattr(self, "seed"):
            self.seed = int(seed)
        return self

    @abstractmethod
    def save(self, path: str | Path) -> None:
        ...

    @classmethod
    @abstractmethod
    def load(cls, path: str | Path) -> "CostModel":
        """The model saved in folder ``path``. Each model class implements it for its own files;
        ``CostModel.load(path)`` loads whichever registered model ``path`` holds
        (:func:`costlab.models.load_model`)."""
        if cls is CostModel:
            from costlab.models._common import load_model

            return load_model(path)
        raise NotImplementedError(f"{cls.__module__}.{cls.__qualname__} does not implement load()")


MODELS: Registry[CostModel] = Registry("cost model", entry_point_group="costlab.models", base=CostModel)


def check_schema(saved: FeatureSchema, actual: FeatureSchema, path: str | Path) -> None:
    """Refuse to use a model saved for other features, with a message that says why."""
    if saved.to_dict() != actual.to_dict():
        if saved.extractor != actual.extractor:
            why = f"it was trained on extractor {saved.extractor!r}, not {actual.extractor!r}"
        elif saved.version != actual.version:
            why = f"extractor {saved.extractor!r} version {saved.version} != {actual.version}"
        else:
            why = f"feature names differ ({len(saved.names)} saved vs {len(actual.names)} now)"
        raise CostlabError(f"model file {path}: feature schema mismatch: {why}")


def _constructor_parameters(factory) -> list[inspect.Parameter]:
    """The parameters ``factory`` takes; a factory without a signature counts as taking any
    keyword (its constructor alone then checks them)."""
    try:
        return list(inspect.signature(factory).parameters.values())
    except (TypeError, ValueError):
        return [inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD)]


def _build_checked(name: str, params: dict) -> CostModel:
    """Model ``name`` built with ``params``, its :meth:`CostModel.check_params` run; a
    :class:`CostlabError` naming an unknown parameter or a bad value."""
    factory = MODELS.factory(name)
    parameters = _constructor_parameters(factory)
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)
    valid = [p.name for p in parameters if p.name != "self"
             and p.kind not in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)]
    unknown = [k for k in params if k not in valid]
    if unknown and not takes_any:
        raise CostlabError(f"{name}: unknown parameter {unknown[0]!r} (value: {params[unknown[0]]!r}); "
                           f"valid: {', '.join(valid)}")
    if "seed" in params:  # numpy's and XGBoost's generators take 0..2**32-1; every model, plug-ins too
        from costlab.models._common import check_number

        check_number(name, "seed", params["seed"], at_least=0, at_most=2**32 - 1, integer=True)
    try:
        model = factory(**params)
    except CostlabError:
        raise
    except (TypeError, ValueError) as err:  # a parameter the constructor refused, or a bug in it
        raise CostlabError(f"{name}: building it with params {params} raised {type(err).__name__}: {err}") from err
    check = getattr(model, "check_params", None)
    if callable(check):
        try:
            check()
        except CostlabError:
            raise
        except (TypeError, ValueError) as err:  # a plug-in's own check that raises what Python would
            raise CostlabError(f"{name}: params {params} refused by its check_params: {type(err).__name__}: "
                               f"{err}") from err
    return model


def check_model_params(name: str, params: dict) -> None:
    """Build model ``name`` with ``params`` and run its :meth:`CostModel.check_params`: a
    :class:`CostlabError` naming an unknown parameter or a bad value, before any work."""
    _build_checked(name, params)


def make_model(name: str, params: dict | None = None, seed: int | None = None) -> tuple[CostModel, dict]:
    """``(model, params used)``: model ``name`` built with ``params``, ``seed`` added when the
    model takes one and ``params`` has none; unknown parameters and bad values are refused
    (:func:`check_model_params`). The one place costlab builds a model from a name."""
    params = dict(params or {})
    if seed is not None and "seed" not in params:
        if any(p.name == "seed" for p in _constructor_parameters(MODELS.factory(name))):
            params["seed"] = seed
    return _build_checked(name, params), params
