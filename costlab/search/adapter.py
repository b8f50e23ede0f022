"""The MetaSchedule plug-in point: any costlab model + extractor as a ``PyCostModel``.

MetaSchedule calls ``predict(context, candidates)`` about five times per search
iteration (512 candidates each) and ``update(context, candidates, results)`` once
per iteration with the measured batch. This adapter:

- turns ``results[i].run_secs`` into latencies in seconds (mean of the repeats); a
  failed run (no ``run_secs``, or MetaSchedule's 1e10) becomes ``inf``, which every
  costlab model ranks as worst. MetaSchedule's ``UpdateCostModel`` hands on the built
  candidates only (a resumed session leaves out the build failures too), and
  :class:`CountTrials` counts every trial for the online accuracy's step;
- before training on a new batch, scores it with the current model (its own scores,
  without the UCB bonus) and records the pairwise ranking accuracy: an honest online
  validation;
- retrains every iteration, or only once the data grew by ``retrain_growth``;
- scores ``mean + kappa * spread`` when the model has ``predict_with_spread``;
- hands MetaSchedule scores above 0 (:func:`tvm_scores`): its evolutionary search sets
  every score below 0 to 0, so a ranking model's negative scores would all tie;
- times ``update`` and ``predict`` into the session's :class:`PhaseTimer`.
"""

from __future__ import annotations

import numpy as np
from tvm.s_tir.meta_schedule.cost_model import PyCostModel
from tvm.s_tir.meta_schedule.measure_callback import PyMeasureCallback
from tvm.ir.utils import derived_object

from costlab.data.database import mean_latency_s
from costlab.errors import CostlabError
from costlab.features import Features, concat_features
from costlab.search.timing import PhaseTimer


def latencies_s(results) -> np.ndarray:
    """Mean measured seconds per result; ``inf`` for a failure."""
    return np.array([np.inf if res.error_msg is not None else mean_latency_s(res.run_secs) for res in results],
                    dtype="float64")


TVM_SCORE_FLOOR = 1e-6  # where the scores below 0 are squeezed to: (0, TVM_SCORE_FLOOR]


def tvm_scores(scores: np.ndarray) -> np.ndarray:
    """Scores as MetaSchedule needs them: above 0, in the same order.

    MetaSchedule's evolutionary search (``PredictNormalizedScore``) sets every score below
    0 to 0 before it keeps the best candidates and draws the ones to mutate, with weights
    proportional to their scores. A ranking model (LambdaRank, pairwise) scores about half
    of the candidates below 0, and sometimes all of them: the search then keeps whichever
    candidates it met first and draws its parents from one of them, ignoring the model.
    Scores above 0 are kept (plus ``TVM_SCORE_FLOOR``), so the weights among them barely
    change; scores at or below 0 become ``TVM_SCORE_FLOOR * exp(score)``: ordered, and so
    small that they are rarely drawn while others score above 0 (rarely, not never: the
    parent draws walk cumulative weights, so even these shift some draws). Limits: scores
    within about 1e-16 of 0 map to the same value, scores below about -745 underflow to 0
    and tie again (as the failure placeholder, -1e30, does on purpose), and NaN stays NaN
    (which TVM's clamp turns into 0).
    """
    scores = np.asarray(scores, dtype="float64")
    below = TVM_SCORE_FLOOR * np.exp(np.minimum(scores, 0.0))  # exp of at most 0: no overflow
    return np.where(scores > 0, scores + TVM_SCORE_FLOOR, below)


def online_pairwise_accuracy(scores: np.ndarray, latency_s: np.ndarray) -> float | None:
    """Fraction of successful pairs with different latency ordered right by the scores; a pair
    the scores tie counts one half (as :func:`costlab.data.metrics.pairwise_accuracy` does)."""
    ok = np.isfinite(latency_s)
    s, lat = scores[ok], latency_s[ok]
    if s.size < 2:
        return None
    i, j = np.triu_indices(s.size, k=1)
    differ = lat[i] != lat[j]
    if not differ.any():
        return None
    right = np.where(s[i] == s[j], 0.5, ((s[i] > s[j]) == (lat[i] < lat[j])).astype("float64"))
    return float(right[differ].mean())


@derived_object
class CostlabCostModel(PyCostModel):
    """Adapter from a costlab :class:`~costlab.models.CostModel` to MetaSchedule.

    Parameters
    ----------
    model: the costlab model (fitted already when warm-started).
    extractor: the feature extractor the model was built for.
    group: the workload key of the session (the ``groups`` value of every sample).
    timer: where ``cost_model_update_s`` and ``cost_model_predict_s`` accumulate.
    kappa: optimism of the score, ``mean + kappa * spread`` (0: plain exploitation).
    scores: "ordered" hands MetaSchedule :func:`tvm_scores`; "raw" the model's own scores,
        which MetaSchedule clamps at 0 (every costlab run before 2026-12-02 did this).
    retrain_growth: retrain once the sample count grew by this fraction (0: every update).
    frozen: never train (a pretrained model kept as is).
    pretrained: the model is fitted already and may predict before any update.
    seed: seeds the random scores used before the model is first trained.
    """

    def __init__(self, model, extractor, group: str, timer: PhaseTimer, kappa: float = 0.0,
                 retrain_growth: float = 0.0, frozen: bool = False, pretrained: bool = False,
                 seed: int = 0, scores: str = "ordered"):
        super().__init__()
        self.model = model
        self.extractor = extractor
        self.group = group
        self.timer = timer
        self.kappa = kappa
        if scores not in ("ordered", "raw"):
            raise ValueError(f"scores: 'ordered' or 'raw', got {scores!r}")
        self.scores = scores
        self.retrain_growth = retrain_growth
        self.frozen = frozen
        self.fitted = pretrained
        self.rng = np.random.default_rng(seed)
        self._pending: list[tuple[Features, np.ndarray]] = []  # measured, not yet trained on
        self._trained_on = 0  # samples seen at the last training
        self.n_seen = 0  # samples trained on or pending: MetaSchedule hands on the built candidates only
        self.trials_measured: int | None = None  # counted by CountTrials, build failures included
        self.online_accuracy: list[tuple[int, float]] = []  # (trials measured, pairwise accuracy)
        self.record_accuracy = True  # off while retraining on a resumed session's old records

    # -- MetaSchedule's interface -------------------------------------------------
    def load(self, path: str) -> None:  # MetaSchedule never calls these in tuning
        raise NotImplementedError("costlab loads models through costlab.models")

    def save(self, path: str) -> None:
        self.model.save(path)

    def update(self, context, candidates, results) -> None:
        if not len(results):
            return  # MetaSchedule drops the candidates whose build failed: a batch can arrive empty
        with self.timer.phase("cost_model_update_s"):
            self.add_samples(self.extractor.extract(context, candidates), latencies_s(results))

    def predict(self, context, candidates) -> np.ndarray:
        with self.timer.phase("cost_model_predict_s"):
            if not self.fitted:
                return self.rng.random(len(candidates)).astype("float64")
            scores = self.score(self.extractor.extract(context, candidates))
            return tvm_scores(scores) if self.scores == "ordered" else scores

    # -- the adapter's own logic ------------------------------------------------
    def score(self, features: Features, optimistic: bool = True) -> np.ndarray:
        """The search's scores (``optimistic``: ``mean + kappa * spread``) or the model's own."""
        if optimistic and self.kappa > 0 and hasattr(self.model, "predict_with_spread"):
            mean, spread = self.model.predict_with_spread(features)
            scores = np.asarray(mean, dtype="float64") + self.kappa * np.asarray(spread, dtype="float64")
        else:
            scores = np.asarray(self.model.predict(features), dtype="float64")
        if scores.shape != (len(features),):  # TVM's own error would name neither the model nor the shapes
            raise CostlabError(f"cost model {getattr(self.model, 'name', type(self.model).__name__)!r} "
                               f"({type(self.model).__qualname__}) predicted an array of shape {scores.shape} for "
                               f"{len(features)} candidates; predict must return one score per row, shape "
                               f"({len(features)},)")
        return np.nan_to_num(scores, nan=-1e30, posinf=1e30, neginf=-1e30)

    def add_samples(self, features: Features, latency_s: np.ndarray) -> None:
        """Record a measured batch; validate the current model on it, then maybe train.

        The model keeps its own training data: ``update`` adds the pending batches and
        retrains (a pretrained model is thereby fine-tuned on top of what it saw).
        """
        latency_s = np.asarray(latency_s, dtype="float64")
        self.n_seen += len(latency_s)
        if self.fitted and len(features) and self.record_accuracy:
            acc = online_pairwise_accuracy(self.score(features, optimistic=False), latency_s)  # the model's
            if acc is not None:  # at the trial count (the samples seen where no CountTrials counts)
                step = self.n_seen if self.trials_measured is None else self.trials_measured
                self.online_accuracy.append((step, acc))
        if self.frozen:
            return
        self._pending.append((features, latency_s))
        if self._trained_on and self.n_seen < self._trained_on * (1.0 + self.retrain_growth):
            return
        latency = np.concatenate([lat for _, lat in self._pending])
        if not self.fitted and np.isfinite(latency).sum() < 2:
            return  # nothing to rank yet
        batch = concat_features([f for f, _ in self._pending])
        self.model.update(batch, latency, np.array([self.group] * len(latency)))
        self._pending = []
        self._trained_on = self.n_seen
        self.fitted = True


@derived_object
class CountTrials(PyMeasureCallback):
    """Counts every measured trial into ``adapter.trials_measured``, candidates that failed to
    build included, so that the online accuracy is logged at the trial count (its MLflow step).
    Goes before MetaSchedule's ``UpdateCostModel``, which drops those candidates."""

    def __init__(self, adapter: CostlabCostModel):
        super().__init__()
        self.adapter = adapter

    def apply(self, task_scheduler, task_id, measure_candidates, builder_results, runner_results) -> None:
        self.adapter.trials_measured = (self.adapter.trials_measured or 0) + len(builder_results)


@derived_object
class TimedCostModel(PyCostModel):
    """Wraps a MetaSchedule cost model (TVM's XGBModel, the random model) to time it."""

    def __init__(self, inner, timer: PhaseTimer):
        super().__init__()
        self.inner = inner
        self.timer = timer

    def load(self, path: str) -> None:
        self.inner.load(path)

    def save(self, path: str) -> None:
        self.inner.save(path)

    def update(self, context, candidates, results) -> None:
        with self.timer.phase("cost_model_update_s"):
            self.inner.update(context, candidates, results)

    def predict(self, context, candidates) -> np.ndarray:
        with self.timer.phase("cost_model_predict_s"):
            return np.asarray(self.inner.predict(context, candidates), dtype="float64")
