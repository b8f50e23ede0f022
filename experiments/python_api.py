"""costlab from Python, in four steps (the README's "Use costlab from Python" section):

1. offline: a committed dataset's features, a model fitted on some workloads and ranked on
   another with TenSet's metrics;
2. a cost model of your own (here the example plug-in's class, imported from its file):
   checked with costlab's model checks, registered from the script, and used in a real
   tuning run;
3. features and the GNN's graph of a schedule built by hand;
4. the run's convergence curve read back from MLflow.

    python experiments/python_api.py --work-dir /tmp/costlab-python

It tunes 8 trials of a 64x64x64 GEMM on this machine's CPU. The dataset's features are
cached in its own ``features/`` folder (ignored by git) the first time: the whole script took
73 s then and 37 s after, on the default dataset (2 cores, 2026-12-07).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


import costlab.data as cd
import costlab.features as cf
import costlab.models as cm
from costlab.config import config_from_dict
from costlab.experiment import run_experiment
from costlab.features.sampling import make_candidate
from costlab.testing.model_checks import run_checks
from costlab.tracking import read_child_runs
from costlab.workloads import build_workload


def offline(dataset: str) -> None:
    result = cd.cross_validate(dataset, "lgbm", "analysis", split="leave-one-task-out")
    print(f"1. lgbm on {dataset}, each task ranked by a model that never saw it: "
          f"top-1 {result.metrics.top_k[1]:.3f}, pairwise {result.metrics.pairwise_accuracy:.3f}, "
          f"Kendall tau {result.metrics.kendall_tau:.3f}")


def own_model(work_dir: Path) -> None:
    # a ridge regression written against the bare CostModel contract, in one file: any class of
    # your own, defined in your script, goes the same way
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "plugins" / "costlab_example_plugin"))
    from costlab_example_plugin import ExampleLinearModel

    checks = run_checks(ExampleLinearModel)
    failed = sorted(name for name, err in checks.items() if err is not None)
    print(f"2. {ExampleLinearModel.name}: {len(checks) - len(failed)} of {len(checks)} model checks passed"
          + (f"; failed: {', '.join(failed)}" if failed else ""))
    cm.MODELS.register(ExampleLinearModel.name)(ExampleLinearModel)  # a package uses an entry point instead
    cfg = config_from_dict({
        "name": "python-api", "target": "cpu",
        "workloads": [{"name": "gemm", "params": {"M": 64, "N": 64, "K": 64}}],
        "cost_models": [ExampleLinearModel.name], "seeds": [0],
        "search": {"trials": 8, "trials_per_iter": 4},
        "mlflow": {"tracking_uri": f"sqlite:///{work_dir / 'mlflow.db'}"}, "work_dir": str(work_dir / "runs"),
    })
    (outcome,) = run_experiment(cfg)
    print(f"   tuned with it: {outcome.trials} trials, best {outcome.best_latency_us:.1f} µs")


def hand_built_schedule() -> None:
    mod = build_workload("gemm", {"M": 64, "N": 64, "K": 64})
    from tvm import s_tir

    sch = s_tir.Schedule(mod)
    i, j, _ = sch.get_loops(sch.get_sblock("C"))
    _, j_inner = sch.split(j, [None, 16])
    sch.vectorize(j_inner)
    sch.parallel(i)
    context = cd.make_context(mod, "cpu")
    analysis = cf.get("analysis").extract(context, [make_candidate(sch)])
    graph = cf.get("graph").extract(context, [make_candidate(sch)]).graphs
    named = dict(zip(analysis.schema.names, analysis.dense[0]))
    print(f"3. a hand-built schedule: {analysis.dense.shape[1]} analysis features (flops_total "
          f"{named['flops_total']:.0f}); a graph of {graph.node_features.shape[0]} nodes and "
          f"{graph.edge_index.shape[1]} edges")


def curves(work_dir: Path) -> None:
    for run in read_child_runs(f"sqlite:///{work_dir / 'mlflow.db'}", "python-api"):
        print(f"4. {run.workload} · {run.model} · seed {run.seed}: best latency (µs) by trial "
              f"{[round(x, 1) for x in run.curve_best_us]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="datasets/cpu-intel-v1", help="a dataset folder")
    parser.add_argument("--work-dir", type=Path, required=True, help="where the tuning run and its MLflow store go")
    args = parser.parse_args()
    offline(args.dataset)
    own_model(args.work_dir)
    hand_built_schedule()
    curves(args.work_dir)


if __name__ == "__main__":
    main()
