"""Does one process slow down as it replays and extracts many traces? Prints ms per record.

Two probes, each in this one process, on a built dataset (``costlab dataset build``):

    # the same records again and again: a replay that leaves something behind slows each round
    python experiments/replay_drift_probe.py DATASET --rounds 11 --rows 512
    # rows in the order extract_features takes them, from --start: run once from 0 and once
    # from a later row in a fresh process, and compare the windows both runs measured
    python experiments/replay_drift_probe.py DATASET --start 5432 --stop 8631

Batches are those of ``extract_features`` (by workload and target, 256 rows), with the
``per_store`` extractor by default.
"""

from __future__ import annotations

import argparse
import resource
import time
from pathlib import Path

from costlab.data.dataset import WORKLOADS_FILE, _read_workloads_file, group_batches, load_dataset
from costlab.data.replay_jobs import Batch, Replay
from costlab.features import get


def batches_of(df, batch_size: int = 256) -> list[Batch]:
    batches = []
    for (shash, target), group in df.groupby(["workload_hash", "target"], sort=False):
        batches += group_batches(len(batches), shash, target, group, batch_size)
    return batches


def run(replay: Replay, batch: Batch) -> tuple[float, float, float]:
    """Seconds of the batch: in all, replaying, extracting."""
    started = time.perf_counter()
    result = replay.run(batch)
    return time.perf_counter() - started, result.replay_seconds, sum(result.seconds.values())


def say(label: str, n: int, total: float, replay: float, extract: float) -> None:
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3
    print(f"{label}: {total / n * 1e3:.1f} ms a record (replay {replay / n * 1e3:.1f}, extract "
          f"{extract / n * 1e3:.1f}), peak memory {rss_mb:.0f} MB", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--features", default="per_store")
    parser.add_argument("--rounds", type=int, default=0, help="repeat the first --rows records this often")
    parser.add_argument("--rows", type=int, default=512)
    parser.add_argument("--start", type=int, default=0, help="first row (rounded to whole batches)")
    parser.add_argument("--stop", type=int, default=None, help="last row (rounded up to whole batches)")
    parser.add_argument("--window", type=int, default=1000, help="records per printed line")
    args = parser.parse_args()

    df = load_dataset(args.dataset)
    replay = Replay(_read_workloads_file(args.dataset / WORKLOADS_FILE), {args.features: get(args.features)})
    batches = batches_of(df)
    if args.rounds:
        first, n = [], 0
        for batch in batches:
            if n >= args.rows:
                break
            first.append(batch)
            n += len(batch.rows)
        for round_ in range(args.rounds):
            sums = [sum(x) for x in zip(*(run(replay, b) for b in first))]
            say(f"round {round_}", n, *sums)
        return
    done, window, sums = 0, 0, [0.0, 0.0, 0.0]
    for batch in batches:
        if args.stop is not None and done >= args.stop:
            break
        done += len(batch.rows)
        if done <= args.start:
            continue
        sums = [a + b for a, b in zip(sums, run(replay, batch))]
        window += len(batch.rows)
        if window >= args.window:
            say(f"rows to {done}", window, *sums)
            window, sums = 0, [0.0, 0.0, 0.0]


if __name__ == "__main__":
    main()
