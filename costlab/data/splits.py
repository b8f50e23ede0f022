"""Train/test splits by workload (or task, or family), never by record.

Every function takes one label per record (a workload key, a task key, a family) and
returns :class:`Split` objects holding sorted ``int64`` index arrays into those
records. All records of a workload land on the same side, so a model is always tested
on workloads it has never seen.

=====================  =====================================================================
name                   meaning
=====================  =====================================================================
holdout                ``test_fraction`` of the workloads (at least one) held out, by seed
kfold                  ``k`` folds of workloads, by seed; each workload tested once
leave-one-family-out   one split per operator family, testing on that family
leave-one-task-out     one split per task, testing on that task (the A100 protocol)
=====================  =====================================================================
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from costlab.errors import CostlabError

SPLIT_KINDS = ("holdout", "kfold", "leave-one-family-out", "leave-one-task-out")


@dataclass(frozen=True)
class Split:
    """One train/test partition: sorted record indices, and the held-out group names."""

    name: str
    train: np.ndarray
    test: np.ndarray
    test_groups: tuple[str, ...]

    def masks(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Boolean ``(train_mask, test_mask)`` of length ``n``."""
        train = np.zeros(n, dtype=bool)
        test = np.zeros(n, dtype=bool)
        train[self.train] = True
        test[self.test] = True
        return train, test


def _labels(labels: Sequence) -> np.ndarray:
    arr = np.asarray([str(x) for x in labels], dtype=object)
    if arr.size == 0:
        raise CostlabError("cannot split an empty dataset")
    return arr


def _split_by_groups(name: str, labels: np.ndarray, test_groups: Sequence[str]) -> Split:
    test_mask = np.isin(labels, np.asarray(list(test_groups), dtype=object))
    return Split(
        name=name,
        train=np.flatnonzero(~test_mask).astype(np.int64),
        test=np.flatnonzero(test_mask).astype(np.int64),
        test_groups=tuple(sorted(test_groups)),
    )


def _unique_sorted(labels: np.ndarray) -> list[str]:
    return sorted(set(labels.tolist()))


def holdout_split(workloads: Sequence, test_fraction: float = 0.2, seed: int = 0) -> Split:
    """Hold out ``round(test_fraction * n_workloads)`` workloads (at least 1, at most n-1)."""
    labels = _labels(workloads)
    groups = _unique_sorted(labels)
    if len(groups) < 2:
        raise CostlabError(f"a holdout split needs at least 2 workloads, the dataset has {len(groups)}")
    if not 0 < test_fraction < 1:
        raise CostlabError(f"test_fraction must be between 0 and 1, both exclusive, got {test_fraction}")
    n_test = min(max(1, int(round(test_fraction * len(groups)))), len(groups) - 1)
    rng = np.random.default_rng(seed)
    chosen = [groups[i] for i in rng.permutation(len(groups))[:n_test]]
    return _split_by_groups(f"holdout(seed={seed})", labels, chosen)


def kfold_by_workload(workloads: Sequence, k: int = 5, seed: int = 0) -> list[Split]:
    """``k`` folds of workloads (shuffled by ``seed``); fold i tests on its workloads."""
    labels = _labels(workloads)
    groups = _unique_sorted(labels)
    if k < 2 or k > len(groups):
        raise CostlabError(f"k-fold needs 2 <= k <= number of workloads ({len(groups)}), got k={k}")
    rng = np.random.default_rng(seed)
    shuffled = [groups[i] for i in rng.permutation(len(groups))]
    return [
        _split_by_groups(f"fold {i + 1}/{k}", labels, shuffled[i::k])
        for i in range(k)
    ]


def leave_one_family_out(workloads: Sequence, families: Sequence) -> list[Split]:
    """One split per family; a workload's family is that of its records (must agree)."""
    labels = _labels(workloads)
    fams = _labels(families)
    if len(fams) != len(labels):
        raise CostlabError("leave-one-family-out: one family per record is needed")
    family_of: dict[str, str] = {}
    for w, f in zip(labels.tolist(), fams.tolist()):
        if family_of.setdefault(w, f) != f:
            raise CostlabError(f"workload {w!r} has records of two families ({family_of[w]!r}, {f!r})")
    names = _unique_sorted(fams)
    if len(names) < 2:
        raise CostlabError(f"leave-one-family-out needs at least 2 families, the dataset has {names}")
    splits = []
    for family in names:
        held = [w for w, f in family_of.items() if f == family]
        split = _split_by_groups(f"family {family}", labels, held)
        splits.append(Split(split.name, split.train, split.test, (family,)))
    return splits


def leave_one_task_out(tasks: Sequence, workloads: Sequence | None = None) -> list[Split]:
    """One split per task (sorted by name), testing on that task and training on the rest.

    With ``workloads`` (one per record), the held-out task's workload is also left out of
    training on its other targets, so no workload is on both sides.
    """
    labels = _labels(tasks)
    names = _unique_sorted(labels)
    if len(names) < 2:
        raise CostlabError(f"leave-one-task-out needs at least 2 tasks, the dataset has {len(names)}")
    if workloads is None:
        return [_split_by_groups(f"task {t}", labels, [t]) for t in names]
    wl = _labels(workloads)
    if len(wl) != len(labels):
        raise CostlabError("leave-one-task-out: one workload per record is needed")
    splits = []
    for t in names:
        test = labels == t
        train = ~np.isin(wl, np.unique(wl[test]))
        splits.append(Split(f"task {t}", np.flatnonzero(train).astype(np.int64),
                            np.flatnonzero(test).astype(np.int64), (t,)))
    return splits


def same_workload(workload_keys: Sequence, workload_hashes: Sequence) -> np.ndarray:
    """One workload label per record, where records that share a key or a structural hash are
    one workload: the smallest key among them.

    A database with costlab's sidecar keys a workload by name (``gemm(M=...)``), one without
    it by shapes and hash; the same workload read from both would otherwise be two workloads,
    and a split could put it on both sides.
    """
    keys, hashes = _labels(workload_keys), _labels(workload_hashes)
    parent: dict[str, str] = {}

    def root(node: str) -> str:
        while parent.setdefault(node, node) != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    for key, shash in set(zip(keys.tolist(), hashes.tolist())):
        if shash in ("", "None", "nan"):  # no hash: the key alone names it
            root("key " + key)
            continue
        a, b = root("key " + key), root("hash " + shash)
        if a != b:
            parent[max(a, b)] = min(a, b)
    smallest: dict[str, str] = {}
    for key in sorted(set(keys.tolist())):
        smallest.setdefault(root("key " + key), key)
    return np.asarray([smallest[root("key " + key)] for key in keys.tolist()], dtype=object)


def balanced_subsample(labels: Sequence, n: int, seed: int = 0) -> np.ndarray:
    """Sorted indices of at most ``n`` records, as evenly spread over the groups as they allow.

    Each group gives the same share, drawn at random by ``seed``; a group smaller than
    its share gives all its records and the rest is shared among the larger groups. With
    fewer records than groups, the groups that give one are drawn by ``seed`` too.
    """
    arr = _labels(labels)
    if n < 1:
        raise CostlabError(f"cannot subsample to {n} records; need at least 1")
    rng = np.random.default_rng(seed)
    _, group_of, sizes = np.unique(arr, return_inverse=True, return_counts=True)
    order = np.argsort(sizes, kind="stable")  # smallest first; ties by name
    left = min(int(n), arr.size)
    if left < order.size:  # one record from each of `left` groups (it took the largest, whatever the seed)
        order = np.sort(rng.choice(order, size=left, replace=False))
    picked = []
    for i, g in enumerate(order):
        members = np.flatnonzero(group_of == g)
        take = min(members.size, left // (len(order) - i))
        picked.append(rng.choice(members, size=take, replace=False))
        left -= take
    return np.sort(np.concatenate(picked)).astype(np.int64)


def make_splits(df, kind: str, *, seed: int = 0, test_fraction: float = 0.2, k: int = 5) -> list[Split]:
    """The splits of kind ``kind`` (one of :data:`SPLIT_KINDS`) for a dataset DataFrame.

    Workload splits use the workloads of :func:`same_workload` (the ``workload_key`` and
    ``workload_hash`` columns), leave-one-task-out uses ``task_key`` (and the workloads, to
    keep the held-out workload's other targets out of training), and leave-one-family-out
    uses ``family``.
    """
    workloads = same_workload(df["workload_key"], df["workload_hash"] if "workload_hash" in df else df["workload_key"])
    if kind == "holdout":
        return [holdout_split(workloads, test_fraction=test_fraction, seed=seed)]
    if kind == "kfold":
        return kfold_by_workload(workloads, k=k, seed=seed)
    if kind == "leave-one-family-out":
        return leave_one_family_out(workloads, df["family"])
    if kind == "leave-one-task-out":
        return leave_one_task_out(df["task_key"], workloads)
    raise CostlabError(f"unknown split {kind!r}; valid splits: {', '.join(SPLIT_KINDS)}")
