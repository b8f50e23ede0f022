"""How often MetaSchedule's clamp at 0 tied the candidates a search measured, from its logs.

MetaSchedule's evolutionary search sets every score below 0 to 0 before it keeps the best
candidates of a generation (``PredictNormalizedScore``); costlab handed it raw model scores
until 2026-12-02 (``tvm_scores: raw``). When a ranking model scored every candidate below 0,
the search kept whichever it met first. TVM logs the scores of the candidates it keeps, per
batch ("Scores of the best 32 candidates", four decimals), in each session's ``logs/``
(kept on the machine that tuned, not committed). This script reads them: a batch whose best
score is 0 was chosen without the model (all tied); one whose lowest is 0 had fewer
candidates above 0 than it measured (partly tied).

Only sessions tuned with raw scores are read (``tvm_scores`` missing or "raw" in their
``costlab.json``), and TVM's own ``tvm-xgb``: with ordered scores a printed 0.0000 is a
score below 5e-5, not a tie.

    python experiments/clamped_batches.py experiments/results/cpu-loto-seeds/db \
        --out experiments/results/clamped-batches.md
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

HEADER = "Scores of the best"


def kept_scores(log: Path) -> list[list[float]]:
    """The scores TVM printed for the candidates it kept, one list per batch."""
    lines = log.read_text(errors="replace").splitlines()
    batches = []
    for i, line in enumerate(lines):
        if HEADER in line:
            scores, j = [], i + 1
            while j < len(lines) and lines[j].startswith("["):
                scores += [float(v) for v in lines[j].split(":", 2)[-1].split()]
                j += 1
            if scores:
                batches.append(scores)
    return batches


def raw_sessions(root: Path):
    """(workload, model label, seed, the session's batches) for each session under ``root``
    tuned with raw scores that has a MetaSchedule log."""
    for setup_file in sorted(root.rglob("costlab.json")):
        session = setup_file.parent
        logs = sorted(session.glob("logs/*task_0_main.log"))
        if not logs:
            continue
        setup = json.loads(setup_file.read_text())
        model = setup.get("cost_model", {})
        if model.get("name") != "tvm-xgb" and model.get("tvm_scores", "raw") != "raw":
            continue
        label = model.get("label") or model.get("name", "?")
        yield setup.get("workload_name", "?"), label, setup.get("seed"), kept_scores(logs[0])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("roots", nargs="+", type=Path, help="work directories (or any folder above sessions)")
    ap.add_argument("--out", type=Path, help="also write the table here (Markdown)")
    args = ap.parse_args(argv)

    cells: dict[tuple[str, str], list] = defaultdict(list)
    for root in args.roots:
        if not root.is_dir():
            raise SystemExit(f"error: {root}: not a directory")
        for workload, label, seed, batches in raw_sessions(root):
            cells[(label, workload)].append((seed, batches))
    if not cells:
        raise SystemExit(f"error: no session with a MetaSchedule log and raw scores under {', '.join(map(str, args.roots))}")

    rows = ["| model | workload | runs (seeds) | first batch tied | batches tied | batches partly tied |",
            "|---|---|---|---|---|---|"]
    for (label, workload), runs in sorted(cells.items()):
        batches = [b for _, run in runs for b in run]
        first = sum(1 for _, run in runs if run and max(run[0]) == 0.0)
        tied = sum(1 for b in batches if max(b) == 0.0)
        partly = sum(1 for b in batches if min(b) == 0.0 < max(b))
        seeds = ", ".join(str(s) for s, _ in sorted(runs, key=lambda r: (r[0] is None, r[0])))
        rows.append(f"| {label} | {workload} | {len(runs)} ({seeds}) | {first} of {len(runs)} | "
                    f"{tied} of {len(batches)} | {partly} of {len(batches)} |")
    command = "python experiments/clamped_batches.py " + " ".join(map(str, args.roots))
    text = "\n".join([
        "# Batches MetaSchedule chose without the model (its clamp of scores below 0)", "",
        f"Produced by `{command}{' --out ' + str(args.out) if args.out else ''}`, from the MetaSchedule logs "
        "of the sessions tuned on the machine that ran it (logs are not committed). A batch is tied when the "
        "best score TVM kept was 0 (every candidate scored at or below 0, so the search measured the first "
        "candidates it met), partly tied when its lowest kept score was 0.", "", *rows, ""])
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    sys.exit(main())
