"""The ``costlab`` command line: thin typer commands over the library.

Every user-facing error is a :class:`CostlabError`: one clear message on stderr and
exit status 2, never a traceback.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console

from costlab.errors import CostlabError

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="costlab: learned cost models for TVM MetaSchedule.")
# Tables stay readable in log files and CI output, where there is no terminal width.
console = Console(width=None if sys.stdout.isatty() else 160)
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 160)


@app.command()
def run(
    config: Path = typer.Argument(..., help="experiment YAML"),
    overrides: Optional[List[str]] = typer.Argument(None, help="dotted overrides, e.g. search.trials=64"),
):
    """Tune every (workload × cost model × seed) of CONFIG and log to MLflow."""
    from costlab.config import load_config
    from costlab.experiment import run_experiment

    cfg = load_config(config, overrides or [])
    console.print(f"[bold]costlab run[/] {cfg.name}: {len(cfg.workloads)} workload(s) × "
                  f"{len(cfg.cost_models)} model(s) × {len(cfg.seeds)} seed(s), "
                  f"{cfg.search.trials} trials each → MLflow {cfg.mlflow.tracking_uri} "
                  f"(experiment {cfg.experiment_name!r})")
    outcomes = run_experiment(cfg, console)
    failed = [o for o in outcomes if o.status == "failed"]
    console.print(f"done: {len(outcomes) - len(failed)} combination(s) ok, {len(failed)} failed. "
                  f"Compare with: costlab compare {cfg.experiment_name} --tracking-uri {cfg.mlflow.tracking_uri}")
    if failed:
        raise typer.Exit(1)


@app.command()
def compare(
    experiment: str = typer.Argument(..., help="MLflow experiment name"),
    tracking_uri: str = typer.Option("sqlite:///mlflow.db", help="MLflow tracking URI"),
    out: Path = typer.Option(Path("experiments/results"), help="where the combined plots go"),
):
    """Table of final best latency, trials to reach within 5% of the best, and wall time."""
    from costlab.report.compare import compare_experiment, print_comparison

    result = compare_experiment(tracking_uri, experiment, out)
    print_comparison(result, console)


@app.command()
def features():
    """List the feature extractors and their dimensions."""
    from rich.table import Table

    import costlab.features as feats

    table = Table("name", "kind", "dimensions", "version")
    for name in feats.available():
        ex = feats.get(name)
        table.add_row(name, ex.kind, str(len(ex.feature_names)), str(ex.version))
    console.print(table)


@app.command()
def models():
    """List the registered cost models (built-in and plug-ins)."""
    from rich.table import Table

    import costlab.models as m

    table = Table("name", "default features", "hyper-parameters")
    for name in m.available():
        cls = m.get(name)
        try:
            params = cls().get_params()
        except Exception:
            params = {}
        table.add_row(name, getattr(cls, "default_features", "?"),
                      ", ".join(f"{k}={v}" for k, v in params.items()))
    console.print(table)


farm_app = typer.Typer(help="The RPC measurement farm (TVM's tracker and servers).")
app.add_typer(farm_app, name="farm")


@farm_app.command("status")
def farm_status(tracker: str = typer.Option(..., help="HOST:PORT of the RPC tracker")):
    """Print the tracker's queue (free and pending servers per key) and its servers."""
    from costlab.search.farm import format_summary, tracker_summary

    console.print(format_summary(tracker_summary(tracker)), highlight=False)


def main() -> None:
    """Console entry point: CostlabError -> message and exit status 2."""
    try:
        app(standalone_mode=True)
    except CostlabError as err:
        from rich.markup import escape

        err_console.print(f"[red]error:[/] {escape(str(err))}", highlight=False)
        sys.exit(err.exit_code)
