"""Speed of every cost model: predict throughput (features included) and update time.

For each registered model, with its default extractor and hyper-parameters:

- ``predict cand/s``: candidates per second for ``extract`` + ``predict`` on batches of
  ``--batch`` (512, MetaSchedule's population) sampled candidates of a GEMM; the
  ``extract`` and ``predict`` columns split it (ms per batch).
- ``fit@N``: seconds to ``fit`` on N samples (what the MetaSchedule adapter does at each
  retraining), and ``update@N``: seconds of ``update`` adding 64 samples to a model
  fitted on N - 64 (the model's own online strategy).

Candidates come from ``costlab.features.sampling.sample_candidates`` (real schedules of
``gemm`` on the host CPU target). Latencies are synthetic (log-normal, 10 % failures):
nothing is measured, only time is. Training sets above ``--unique`` samples repeat the
sampled candidates. Without TVM sampling (``--synthetic``, or when it is missing) the
features are synthetic and extraction is not timed; the output says so.

    python experiments/bench_models.py                  # all models
    python experiments/bench_models.py --models xgb,gnn --sizes 64,512,2048
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from costlab.features import Features  # noqa: E402
from costlab.models import MODELS  # noqa: E402
from costlab.features._base import taker  # noqa: E402


def synthetic_latency_s(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    lat = 1e-4 * rng.lognormal(0.0, 0.7, size=n)
    lat[rng.random(n) < 0.1] = np.inf
    return lat


def tile(features: Features, n: int) -> Features:
    """The first ``n`` candidates, repeating the batch as often as needed."""
    take = taker(features)
    return take(np.arange(n) % len(features))


class RealSource:
    """Sampled GEMM candidates and the extractors' features of them (cached per extractor)."""

    description = "real candidates (gemm {shape}, target cpu), features extracted by costlab"

    def __init__(self, unique: int, seed: int, shape: dict):
        from costlab.features.sampling import sample_candidates
        from costlab.workloads import build_workload

        self.description = self.description.format(shape="x".join(str(v) for v in shape.values()))
        t = time.perf_counter()
        self.context, self.candidates = sample_candidates(build_workload("gemm", shape), "cpu", unique, seed=seed)
        print(f"sampled {len(self.candidates)} candidates in {time.perf_counter() - t:.1f} s", file=sys.stderr)
        self.cache: dict[str, Features] = {}

    def features(self, extractor: str) -> Features:
        if extractor not in self.cache:
            from costlab.features import get

            self.cache[extractor] = get(extractor).extract(self.context, self.candidates)
        return self.cache[extractor]

    def extract_s(self, extractor: str, batch: int) -> float:
        """Seconds to extract ``batch`` candidates (the sampled ones, repeated)."""
        from costlab.features import get

        ex = get(extractor)
        cands = [self.candidates[i % len(self.candidates)] for i in range(batch)]
        t = time.perf_counter()
        ex.extract(self.context, cands)
        return time.perf_counter() - t


class SyntheticSource:
    description = "SYNTHETIC features (no TVM sampling): extraction not timed"

    def __init__(self, unique: int, seed: int, shape: dict):
        from costlab.testing.synthetic import feature_kind, make_problem

        self.unique, self.seed = unique, seed
        self._kind, self._make = feature_kind, make_problem

    def features(self, extractor: str) -> Features:
        return self._make(self._kind(extractor), n_groups=1, per_group=self.unique, seed=self.seed,
                          extractor=extractor).features

    def extract_s(self, extractor: str, batch: int) -> float:
        return 0.0


def bench_model(name: str, source, batch: int, sizes: list[int], repeats: int) -> dict:
    cls = MODELS.factory(name)
    model = cls()
    extractor = model.default_features
    base = source.features(extractor)
    row = {"model": name, "features": extractor}
    n_max = max(sizes)
    features = tile(base, n_max)
    latency = synthetic_latency_s(n_max, seed=1)
    groups = np.full(n_max, "gemm")
    take = taker(features)
    warm = np.arange(min(sizes))
    cls().fit(take(warm), latency[warm], groups[warm])  # imports and first-call costs stay out
    for n in sizes:
        idx = np.arange(n)
        t = time.perf_counter()
        model = cls().fit(take(idx), latency[idx], groups[idx])
        row[f"fit@{n}"] = time.perf_counter() - t
        if n > 64:
            head, tail = np.arange(n - 64), np.arange(n - 64, n)
            model = cls().fit(take(head), latency[head], groups[head])
            t = time.perf_counter()
            model.update(take(tail), latency[tail], groups[tail])
            row[f"update@{n}"] = time.perf_counter() - t
    queries = tile(base, batch)
    model.predict(queries)  # warm
    t = time.perf_counter()
    for _ in range(repeats):
        model.predict(queries)
    predict_s = (time.perf_counter() - t) / repeats
    extract_s = min(source.extract_s(extractor, batch) for _ in range(max(1, repeats // 2)))
    row.update(extract_ms=1e3 * extract_s, predict_ms=1e3 * predict_s,
               cand_per_s=batch / (extract_s + predict_s))
    return row


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="all", help="comma-separated names, or 'all'")
    parser.add_argument("--sizes", default="64,512,2048", help="training-set sizes")
    parser.add_argument("--batch", type=int, default=512, help="candidates per predict call")
    parser.add_argument("--unique", type=int, default=512, help="distinct candidates to sample")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--torch-threads", type=int, default=1,
                        help="1 by default: on shared cores, waiting OpenMP threads cost more than they give")
    parser.add_argument("--synthetic", action="store_true", help="synthetic features, no TVM")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    try:
        import torch

        torch.set_num_threads(args.torch_threads)
    except ImportError:
        pass
    names = MODELS.names() if args.models == "all" else [m.strip() for m in args.models.split(",")]
    sizes = [int(s) for s in args.sizes.split(",")]
    shape = {"M": 256, "N": 256, "K": 256}
    source = None
    if not args.synthetic:
        try:
            source = RealSource(args.unique, args.seed, shape)
        except ImportError as err:
            print(f"no TVM sampling ({err}); falling back to synthetic features", file=sys.stderr)
    source = source or SyntheticSource(args.unique, args.seed, shape)
    print(f"# {source.description}; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}, "
          f"torch threads {args.torch_threads}, XGBoost/LightGBM threads: the models' n_threads")
    header = (["model", "features", "extract_ms", "predict_ms", "cand_per_s"]
              + [f"fit@{n}" for n in sizes] + [f"update@{n}" for n in sizes if n > 64])
    print(" | ".join(header))
    for name in names:
        try:
            row = bench_model(name, source, args.batch, sizes, args.repeats)
        except Exception as err:  # one broken model must not hide the others
            print(f"{name} | error: {err}")
            continue
        cells = []
        for key in header:
            value = row.get(key, "")
            cells.append(f"{value:.3g}" if isinstance(value, float) else str(value))
        print(" | ".join(cells), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
