"""Measurement throughput: TVM's RPC farm (tracker + N servers on 127.0.0.1) against the local runner.

Tunes the same workload, model, seed and budget twice with ``costlab run``, once with
``runner: local`` and once with ``runner: rpc`` through a tracker and ``--servers``
RPC servers started here (each in its own process group), and prints trials/s,
wall, build and run seconds for both. On one machine the servers share its cores
with the builder, so this measures the farm's overhead, not a speed-up; on real
device machines the run phase spreads over the servers.

    python experiments/bench_farm.py [--trials 64] [--servers 2] [--workload gemm:M=256,N=256,K=256]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from costlab.search.farm import local_farm

KEY = "bench-farm-cpu"


def parse_workload(text: str) -> dict:
    name, _, params = text.partition(":")
    values = dict(kv.split("=") for kv in params.split(",") if kv)
    return {"name": name, "params": {k: int(v) for k, v in values.items()}}


def tune(tmp: Path, label: str, args, runner: dict) -> dict:
    config = {
        "name": f"bench-farm-{label}", "target": "cpu", "workloads": [parse_workload(args.workload)],
        "cost_models": [args.model], "seeds": [args.seed],
        "search": {"trials": args.trials, "trials_per_iter": args.trials_per_iter},
        "runner": runner, "mlflow": {"tracking_uri": f"sqlite:///{tmp / 'mlflow.db'}"},
        "work_dir": str(tmp / label),
    }
    path = tmp / f"{label}.yaml"
    path.write_text(yaml.safe_dump(config))
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "costlab", "run", str(path)], check=True, cwd=tmp,
                   stdout=subprocess.DEVNULL)
    process_s = time.perf_counter() - started
    (state_file,) = (tmp / label).rglob("costlab_session.json")
    state = json.loads(state_file.read_text())
    records = state_file.with_name("database_tuning_record.json").read_text().splitlines()
    failed = sum(1 for line in records if not json.loads(line)[1][1])
    return {"runner": label, "trials": len(records), "failed": failed, "process_s": process_s, **state["seconds"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workload", default="gemm:M=256,N=256,K=256")
    ap.add_argument("--model", default="random")
    ap.add_argument("--trials", type=int, default=64)
    ap.add_argument("--trials-per-iter", type=int, default=32)
    ap.add_argument("--servers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-farm-") as tmp_name:
        tmp = Path(tmp_name)
        rows = [tune(tmp, "local", args, {"kind": "local"})]
        with local_farm(args.servers, KEY) as farm:
            rows.append(tune(tmp, "rpc", args, {"kind": "rpc", "tracker": farm.address, "key": KEY}))
    print(f"{args.workload}, model {args.model}, {args.trials} trials, {args.servers} RPC server(s) on 127.0.0.1, "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"{'runner':8} {'trials':>6} {'failed':>6} {'wall_s':>8} {'build_s':>8} {'run_s':>8} {'trials/s':>9}")
    for r in rows:
        print(f"{r['runner']:8} {r['trials']:6d} {r['failed']:6d} {r['wall_s']:8.1f} {r['build_s']:8.1f} "
              f"{r['run_s']:8.1f} {r['trials'] / r['wall_s']:9.2f}")


if __name__ == "__main__":
    main()
