"""Sample MetaSchedule candidates of a workload without measuring them.

This is how the evolutionary search makes its candidates, done serially in Python
so that it is deterministic for a seed:

1. The design spaces come from the space generator (``post-order-apply``, with the
   target's default schedule rules, postprocessors and mutators).
2. *Initial population*: a design space's trace, with its random decisions removed,
   is replayed on a fresh schedule (new decisions are drawn), then every
   postprocessor runs (on CUDA this includes ``VerifyGPUCode``). A schedule that
   fails any step is dropped, as MetaSchedule drops it.
3. *Mutation*: while candidates are missing, a candidate of the pool is mutated by
   one of the target's mutators (tile size, unroll, parallel, thread binding,
   compute location; chosen by MetaSchedule's probabilities), replayed and
   postprocessed again. On a 512³ GEMM for CUDA only about 5 % of random replays
   pass ``VerifyGPUCode``, while about 80 % of mutants do.

Duplicates (structurally equal modules) are dropped. The returned candidates are
postprocessed exactly like those of a real search, so their traces contain the
postprocessing instructions.

Example::

    context, candidates = sample_candidates(build_workload("gemm", {"M": 128}), "cpu", 64, seed=0)
    features = costlab.features.get("analysis").extract(context, candidates)
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from costlab.errors import CostlabError

__all__ = ["candidates_from_traces", "make_candidate", "make_context", "sample_candidates", "sample_schedules"]


def _as_target(target):
    from tvm.target import Target

    if isinstance(target, Target):
        return target
    from costlab.targets import make_target

    return make_target(target)


def make_context(mod, target, num_threads: int = 1):
    """A ``TuneContext`` (post-order-apply space generator) for ``mod`` on ``target``.

    ``target`` is a ``tvm.target.Target``, a preset name (``"cpu"``, ``"h100"``) or a
    target dict. Extraction uses only ``context.mod`` and ``context.target``.
    """
    from costlab._tvm import import_tensor_intrinsics

    target = _as_target(target)
    import_tensor_intrinsics(cuda=target.kind.name == "cuda")
    from tvm.s_tir import meta_schedule as ms

    return ms.TuneContext(mod=mod, target=target, space_generator="post-order-apply",
                          num_threads=num_threads, rand_state=0)


def make_candidate(sch):
    """A ``MeasureCandidate`` of a schedule (built by hand or replayed)."""
    from tvm.s_tir import meta_schedule as ms

    return ms.MeasureCandidate(sch, ms.arg_info.ArgInfo.from_entry_func(sch.mod, remove_preproc=True))


class _Replayer:
    """Replays traces on fresh schedules and runs the postprocessors (one context)."""

    def __init__(self, context):
        self.mod = context.mod
        self.postprocs = list(context.space_generator.postprocs)
        self.n_raised = self.n_rejected = 0
        self.last_error = ""

    def __call__(self, trace, seed: int):
        from tvm.s_tir.schedule import Schedule

        sch = Schedule(self.mod, seed=seed, debug_mask=0, error_render_level="none")
        try:
            trace.apply_to_schedule(sch, remove_postproc=True)
            sch.enter_postproc()
            for postproc in self.postprocs:
                if not postproc.apply(sch):
                    self.n_rejected += 1
                    return None
        except Exception as err:  # a replay that violates a schedule check is a failed sample
            self.n_raised += 1
            message = str(err).strip().splitlines() or [""]  # TVM's last line says what failed
            self.last_error = f"{type(err).__name__}: {message[-1][:200]}"
            return None
        return sch

    def why(self) -> str:
        """Why replays failed, for an error message."""
        text = f"{self.n_rejected} rejected by a postprocessor, {self.n_raised} raised"
        return text + (f" (last: {self.last_error})" if self.last_error else "")


def sample_schedules(context, n: int, seed: int = 0, *, init_attempts: int | None = None,
                     max_attempts: int | None = None, unique: bool = True) -> list:
    """``n`` postprocessed schedules of ``context`` (see the module docstring).

    ``init_attempts`` (default ``n``) bounds the random replays of the initial
    population; ``max_attempts`` (default ``20 * n + 100``) bounds all replays.
    Raises CostlabError when fewer than ``n`` valid schedules were found.
    """
    import tvm_ffi
    from tvm.s_tir.meta_schedule import _ffi_api
    from tvm.s_tir.schedule import Trace

    if n <= 0:
        return []
    rng = np.random.default_rng(seed)
    spaces = context.generate_design_space()
    if not spaces:
        raise CostlabError("the space generator produced no design space")
    bare = [Trace(list(s.trace.insts), {}) for s in spaces]
    replay = _Replayer(context)
    mutator_probs = context.space_generator.mutator_probs or {}
    mutators = list(mutator_probs.keys())
    probs = np.asarray([float(mutator_probs[m]) for m in mutators], dtype="float64")
    if probs.size:
        probs = probs / probs.sum()
    init_attempts = n if init_attempts is None else init_attempts
    max_attempts = 20 * n + 100 if max_attempts is None else max_attempts

    pool: list = []
    seen: set[int] = set()
    duplicates = 0

    def _keep(sch) -> None:
        nonlocal duplicates
        if sch is None:
            return
        if unique:
            key = tvm_ffi.structural_hash(sch.mod)
            if key in seen:
                duplicates += 1
                return
            seen.add(key)
        pool.append(sch)

    attempts = 0
    # Random replays; keep going past init_attempts while nothing has been found.
    while len(pool) < n and attempts < max_attempts and (attempts < init_attempts or not pool or not mutators):
        _keep(replay(bare[attempts % len(bare)], int(rng.integers(1, 2**31 - 1))))
        attempts += 1
    while len(pool) < n and attempts < max_attempts:
        parent = pool[int(rng.integers(len(pool)))]
        mutator = mutators[int(rng.choice(len(mutators), p=probs))]
        attempts += 1
        mutated = _ffi_api.MutatorApply(mutator, parent.trace, int(rng.integers(1, 2**31 - 1)))
        if mutated is not None:
            _keep(replay(mutated, int(rng.integers(1, 2**31 - 1))))
    if len(pool) < n:
        raise CostlabError(
            f"found only {len(pool)} valid {'distinct ' if unique else ''}schedules of {n} asked for "
            f"in {attempts} attempts on target {context.target.kind.name} ({duplicates} duplicates, "
            f"{replay.why()}); "
            "raise max_attempts or ask for fewer"
        )
    return pool


def sample_candidates(mod, target, n: int, seed: int = 0, *, num_threads: int = 1,
                      init_attempts: int | None = None, max_attempts: int | None = None,
                      unique: bool = True) -> tuple:
    """``(context, candidates)``: ``n`` sampled, postprocessed candidates of ``mod`` on ``target``.

    Deterministic for a ``seed``. ``target`` is a ``Target``, a preset name or a dict.
    The context is the ``TuneContext`` to pass to ``extract`` (``num_threads`` is
    what TVM's own PerStoreFeature uses).
    """
    context = make_context(mod, target, num_threads=num_threads)
    schedules = sample_schedules(context, n, seed, init_attempts=init_attempts,
                                 max_attempts=max_attempts, unique=unique)
    return context, [make_candidate(s) for s in schedules]


def candidates_from_traces(context, traces: Sequence) -> list:
    """Candidates replayed exactly from traces (``Trace`` objects or their JSON) of ``context.mod``."""
    from tvm.s_tir.schedule import Schedule, Trace

    out = []
    for trace in traces:
        sch = Schedule(context.mod, debug_mask=0)
        if isinstance(trace, Trace):
            trace.apply_to_schedule(sch, remove_postproc=False)
        else:
            Trace.apply_json_to_schedule(trace, sch)
        out.append(make_candidate(sch))
    return out
