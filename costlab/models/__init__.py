"""Cost models behind one contract, registered by name (plug-ins via ``costlab.models``)."""

from __future__ import annotations

import importlib

from costlab.models._base import (
    FAILED_LATENCY_S,
    MODELS,
    CostModel,
    check_model_params,
    check_schema,
    make_model,
)
from costlab.models._common import load_model, save_model

_BUILTINS = ("random", "tvm_xgb", "xgb", "lgbm", "gnn", "ensemble")


def _load_builtins() -> None:
    for module in _BUILTINS:
        try:
            importlib.import_module(f"costlab.models.{module}")
        except ModuleNotFoundError as err:
            if err.name != f"costlab.models.{module}":
                raise


_load_builtins()


def get(name: str):
    """The model class (or factory) registered under ``name``."""
    return MODELS.factory(name)


def available() -> list[str]:
    return MODELS.names()


__all__ = ["CostModel", "FAILED_LATENCY_S", "MODELS", "available", "check_model_params", "check_schema", "get",
           "load_model", "make_model", "save_model"]
