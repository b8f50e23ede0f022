"""Bagged ensembles of any registered model, with a spread for optimistic search."""

from __future__ import annotations

import inspect
from pathlib import Path

import numpy as np

from costlab.errors import CostlabError
from costlab.features._base import Features, taker
from costlab.models._base import MODELS, CostModel, check_model_params, check_schema
from costlab.models._common import (
    check_choice,
    check_inputs,
    check_is_features,
    check_number,
    file_in,
    finite_scores,
    group_codes,
    read_meta,
    write_meta,
)

BAG_OVER = ("samples", "groups")


@MODELS.register("ensemble")
class EnsembleModel(CostModel):
    """``n_members`` copies of the model ``base``, each trained on its own bag with its own seed.

    ``predict`` is the members' mean score; ``predict_with_spread(features)`` returns
    ``(mean, std)`` over members, for a search score such as ``mean + kappa * std``.

    Bagging: each member draws ``bootstrap`` (a fraction) of the samples, or of the
    workload groups when ``bag_over="groups"`` and there are at least two groups, without
    replacement (at least one sample); ``bootstrap=1.0`` trains every member on all data,
    then only the seeds differ. ``update`` hands each member its own bag of the new
    samples, so a member keeps its own update strategy.

    Parameters:
        base: registered name of the member model (plug-ins included).
        base_params: the members' hyper-parameters (their ``seed`` is set per member when
            the base model takes one).
        n_members: number of members.
        bootstrap: fraction of samples (or groups) each member trains on, in (0, 1].
        bag_over: "samples" or "groups".
        seed: seeds the bags and the member seeds.
    """

    name = "ensemble"
    feature_kinds = ("dense", "graph")  # the base model checks its own

    def __init__(self, base: str = "xgb", base_params: dict | None = None, n_members: int = 5,
                 bootstrap: float = 0.8, bag_over: str = "samples", seed: int = 0):
        self.base = base
        self.base_params = base_params
        self.n_members = n_members
        self.bootstrap = bootstrap
        self.bag_over = bag_over
        self.seed = seed

    @property
    def default_features(self) -> str:
        return MODELS.factory(self.base).default_features

    @property
    def expected_failed_checks(self) -> dict:
        return dict(getattr(MODELS.factory(self.base), "expected_failed_checks", {}))

    # -- members --------------------------------------------------------------------------
    def check_params(self) -> None:
        if self.base == self.name:
            raise CostlabError("ensemble: base cannot be 'ensemble' (value: 'ensemble')")
        if self.base_params is not None and not isinstance(self.base_params, dict):
            raise CostlabError(f"ensemble: base_params must be a mapping (value: {self.base_params!r})")
        try:
            check_model_params(self.base, dict(self.base_params or {}))
        except CostlabError as err:
            raise CostlabError(f"ensemble: base {self.base!r}: {err}") from None
        check_choice("ensemble", "bag_over", self.bag_over, BAG_OVER)
        check_number("ensemble", "n_members", self.n_members, at_least=1, integer=True)
        check_number("ensemble", "bootstrap", self.bootstrap, above=0, at_most=1)

    def _member_seed(self, i: int) -> int:
        return int(np.random.SeedSequence([int(self.seed), i]).generate_state(1)[0] % (2**31 - 1))

    def _new_member(self, i: int) -> CostModel:
        cls = MODELS.factory(self.base)
        params = dict(self.base_params or {})
        if "seed" in inspect.signature(cls).parameters:
            params["seed"] = self._member_seed(i)
        return cls(**params)

    def _bag(self, rng: np.random.Generator, groups: np.ndarray) -> np.ndarray:
        """Sorted sample indices of one member's bag (never empty)."""
        n = groups.size
        codes, n_groups = group_codes(groups)
        if self.bag_over == "groups" and n_groups >= 2:
            k = max(1, int(round(self.bootstrap * n_groups)))
            return np.flatnonzero(np.isin(codes, rng.choice(n_groups, size=k, replace=False)))
        k = max(1, int(round(self.bootstrap * n)))
        return np.sort(rng.choice(n, size=k, replace=False))

    # -- the contract -----------------------------------------------------------------------
    def fit(self, features: Features, latency_s: np.ndarray, groups: np.ndarray) -> "EnsembleModel":
        self.check_params()
        lat, grp = check_inputs(self, features, latency_s, groups, ("dense", "graph"))
        if lat.size == 0:  # as the members say it
            raise CostlabError(f"cost model {self.name!r}: fit needs at least one sample")
        self.schema_ = features.schema
        self.rng_ = np.random.default_rng(self.seed)
        self.members_ = []
        take = taker(features)
        for i in range(int(self.n_members)):
            bag = self._bag(self.rng_, grp)
            self.members_.append(self._new_member(i).fit(take(bag), lat[bag], grp[bag]))
        return self

    def reseed(self, seed: int) -> "EnsembleModel":
        """New bags and new member seeds from ``seed``; the members' learned state stays."""
        self.seed = int(seed)
        self.rng_ = np.random.default_rng(self.seed)
        for i, member in enumerate(getattr(self, "members_", [])):
            member.reseed(self._member_seed(i))
        return self

    def update(self, features: Features, latency_s: np.ndarray, groups: np.ndarray) -> "EnsembleModel":
        if not hasattr(self, "members_"):
            return self.fit(features, latency_s, groups)
        lat, grp = check_inputs(self, features, latency_s, groups, ("dense", "graph"))
        check_schema(self.schema_, features.schema, self._where)
        if lat.size == 0:
            return self
        take = taker(features)
        for member in self.members_:
            k = int(np.floor(self.bootstrap * lat.size + self.rng_.random()))  # unbiased share of the batch
            if k == 0:
                continue
            bag = np.sort(self.rng_.choice(lat.size, size=k, replace=False))
            member.update(take(bag), lat[bag], grp[bag])
        return self

    def predict_with_spread(self, features: Features) -> tuple[np.ndarray, np.ndarray]:
        """Mean and standard deviation of the members' scores, both float64 of shape (n,)."""
        if not hasattr(self, "members_"):
            raise CostlabError("cost model 'ensemble' is not fitted; call fit() or update() first")
        check_is_features(self, features)
        check_schema(self.schema_, features.schema, self._where)
        scores = np.stack([m.predict(features) for m in self.members_])
        return finite_scores(scores.mean(axis=0)), finite_scores(scores.std(axis=0))

    def predict(self, features: Features) -> np.ndarray:
        return self.predict_with_spread(features)[0]

    def save(self, path: str | Path) -> None:
        if not hasattr(self, "members_"):
            raise CostlabError("cost model 'ensemble' is not fitted; nothing to save")
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        dirs = []
        for i, member in enumerate(self.members_):
            member.save(path / f"member-{i}")
            dirs.append(f"member-{i}")
        write_meta(path, self, self.schema_, {"members": dirs, "bit_generator": self.rng_.bit_generator.state})

    @classmethod
    def load(cls, path: str | Path) -> "EnsembleModel":
        from costlab.features._base import FeatureSchema

        meta = read_meta(path, cls.name)
        model = cls(**meta["params"])
        model.schema_ = FeatureSchema.from_dict(meta["features"])
        base = MODELS.factory(model.base)
        model.members_ = [base.load(file_in(path, d, "member folder")) for d in meta["state"]["members"]]
        model.rng_ = np.random.default_rng(model.seed)
        model.rng_.bit_generator.state = meta["state"]["bit_generator"]
        model.path_ = str(path)
        return model

    @property
    def _where(self) -> str:
        return getattr(self, "path_", "<unsaved ensemble model>")
