"""Which rows of a dataset a leave-one-task-out warm start trains on.

Every row but the tuned workload's (by ``workload_key``, or by structural hash for
databases costlab did not write), then, by ``family``:

==========  ================================================================
family      rows kept
==========  ================================================================
``False``   every other workload
``True``    the other workloads of the tuned one's family; every other
            workload when the dataset holds none
related     the same, but when the dataset holds no other workload of the
            family, those of its related families
            (:data:`costlab.data.workload_info.RELATED_FAMILIES`) come next
group       the other workloads of the family and of its related families
            together; every other workload when the dataset holds none
measured    every other workload, by family (:func:`rows_by_family`): the
            session chooses one family on its first measured batch
            (:mod:`costlab.models.measured_warm_start`)
==========  ================================================================

``keep_tuned`` (``pretrain_tuned: true``) then adds the tuned workload's own rows back:
measured on another machine or target, they make a transfer rather than a held-out warm
start. ``max_rows`` then caps the rows, spread evenly over the kept workloads
(:func:`costlab.data.splits.balanced_subsample`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from costlab.errors import CostlabError
from costlab.features._base import Features, taker


def _tuned_rows(df: pd.DataFrame, workload_key: str, workload_hash: str | None, keep_tuned: bool = False) -> pd.Series:
    """True on the tuned workload's rows; CostlabError when no other row is left, or, with
    ``keep_tuned``, when there is none of it."""
    tuned = df["workload_key"] == workload_key
    if workload_hash is not None:
        tuned |= df["workload_hash"].astype(str) == workload_hash
    if keep_tuned and not tuned.any():
        raise CostlabError(f"no rows of {workload_key} itself to keep (pretrain_tuned)")
    if tuned.all() and not keep_tuned:
        raise CostlabError(f"no rows of another workload than {workload_key}")
    return tuned


@dataclass(frozen=True)
class PretrainingSet:
    rows: np.ndarray  # the dataset's ``row`` ids
    workloads: tuple[str, ...]  # their workload keys, sorted
    chosen_by: str  # how they were chosen, in words

    def describe(self) -> str:
        n = len(self.workloads)
        return f"{len(self.rows)} rows of {n} workload{'s' if n != 1 else ''} ({self.chosen_by})"


def select_pretraining_rows(df: pd.DataFrame, workload_key: str, workload_hash: str | None = None,
                            family: bool | str = False, workload_family: str | None = None,
                            max_rows: int | None = None, seed: int = 0, keep_tuned: bool = False) -> PretrainingSet:
    """``df``: a loaded dataset. ``workload_family``: the tuned workload's family, used when
    the dataset does not hold the tuned workload (the dataset's own label wins)."""
    from costlab.data.workload_info import RELATED_FAMILIES

    if family == "measured":
        raise CostlabError("pretrain_family 'measured' chooses its rows in the session; see rows_by_family")
    tuned = _tuned_rows(df, workload_key, workload_hash, keep_tuned)
    keep = ~tuned
    chosen_by = "every other workload"
    if family:
        own = df.loc[tuned, "family"].iloc[0] if tuned.any() else workload_family
        related = list(RELATED_FAMILIES.get(own, ()))
        if family == "group":
            candidates = [([own, *related], f"family {own}" + (f" and related families {', '.join(related)}"
                                                                 if related else ""))]
        else:
            candidates = [([own], f"family {own}")]
        if family == "related":
            candidates.append((related, f"no other {own}; related families {', '.join(related)}"))
        chosen_by = f"every other workload; none of family {own}" + (
            " or related" if family in ("related", "group") else "")
        for families, words in candidates:
            mask = keep & df["family"].isin(families)
            if mask.any():
                keep, chosen_by = mask, words
                break
    if keep_tuned:
        chosen_by = ("the tuned workload's own rows" if not keep.any()
                     else f"{chosen_by}, and the tuned workload's own {int(tuned.sum())} rows")
        keep |= tuned
    rows = df.loc[keep, "row"].to_numpy()
    if max_rows is not None and len(rows) > max_rows:
        from costlab.data.splits import balanced_subsample, same_workload

        kept = df.loc[keep]  # one share per workload, also when it is stored under two keys of one hash
        rows = rows[balanced_subsample(same_workload(kept["workload_key"], kept["workload_hash"]), max_rows, seed)]
        chosen_by += f"; capped at {max_rows}"
    workloads = tuple(sorted(df.loc[df["row"].isin(rows), "workload_key"].unique()))
    return PretrainingSet(rows, workloads, chosen_by)


def rows_by_family(df: pd.DataFrame, workload_key: str, workload_hash: str | None = None) -> dict[str, np.ndarray]:
    """Every other workload's ``row`` ids, by operator family (``pretrain_family: measured``)."""
    others = df.loc[~_tuned_rows(df, workload_key, workload_hash)]
    return {str(family): rows["row"].to_numpy() for family, rows in others.groupby("family", sort=True)}


@dataclass
class SourceRows:
    """One family's training rows, loaded (``pretrain_family: measured``)."""

    features: Features
    latency_s: np.ndarray
    groups: np.ndarray  # one task key per row
    n_workloads: int


def load_family_sources(dataset, workload_key: str, features: str,
                        workload_hash: str | None = None) -> dict[str, SourceRows]:
    """:func:`rows_by_family` of a dataset directory, with their features (extracted and cached).

    The dataset and its feature cache are read once for all families."""
    from costlab.data.dataset import load_dataset
    from costlab.data.offline import load_rows

    df = load_dataset(dataset)
    by_family = rows_by_family(df, workload_key, workload_hash)
    feats, latency, groups, have, _ = load_rows(dataset, features, np.concatenate(list(by_family.values())))
    take, workload_of = taker(feats), df.set_index("row")["workload_key"]
    sources = {}
    for family, rows in by_family.items():
        pos = np.flatnonzero(np.isin(have, rows))  # in the order of rows, as load_rows keeps it
        if pos.size:
            sources[family] = SourceRows(take(pos), latency[pos], groups[pos], int(workload_of.loc[have[pos]].nunique()))
    return sources
