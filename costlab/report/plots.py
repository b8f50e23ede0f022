"""Matplotlib drawing of convergence curves. Data in, PNG out; no MLflow here."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_session_curve(trials, title: str, out: Path) -> Path:
    """Best latency (µs) per measured trial of one session, with each trial as a dot."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    steps = [t.index for t in trials]
    ok = [(t.index, t.latency_s * 1e6) for t in trials if math.isfinite(t.latency_s)]
    if ok:
        ax.scatter(*zip(*ok), s=8, alpha=0.4, label="trial latency")
    best = [t.best_latency_s * 1e6 if math.isfinite(t.best_latency_s) else np.nan for t in trials]
    ax.step(steps, best, where="post", color="C3", label="best so far")
    ax.set_yscale("log")
    ax.set_xlabel("measured trials")
    ax.set_ylabel("latency (µs)")
    ax.set_title(title, fontsize=9)
    ax.legend()
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def plot_band_curves(curves: dict[str, list[tuple[np.ndarray, np.ndarray]]], title: str, xlabel: str,
                     out: Path, reference_us: float | None = None) -> Path:
    """One curve per model (median over seeds) with a min–max band.

    ``curves[model]`` is a list over seeds of ``(x, best_latency_us)``; each seed's
    step curve is resampled on a common x grid.
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for i, (model, seeds) in enumerate(sorted(curves.items())):
        seeds = [(np.asarray(x, float), np.asarray(y, float)) for x, y in seeds]
        seeds = [(x[np.isfinite(x)], y[np.isfinite(x)]) for x, y in seeds]  # nan x: a trial's time unknown
        seeds = [(x, y) for x, y in seeds if len(x)]
        if not seeds:
            continue
        grid = np.unique(np.concatenate([x for x, _ in seeds]))
        grid = grid[np.isfinite(grid)]
        rows = []
        for x, y in seeds:
            idx = np.searchsorted(x, grid, side="right") - 1
            rows.append(np.where(idx >= 0, y[np.clip(idx, 0, None)], np.nan))
        data = np.vstack(rows)
        with np.errstate(all="ignore"):
            med = np.nanmedian(data, axis=0)
            lo, hi = np.nanmin(data, axis=0), np.nanmax(data, axis=0)
        color = f"C{i}"
        ax.step(grid, med, where="post", color=color, label=f"{model} (n={len(seeds)})")
        ax.fill_between(grid, lo, hi, step="post", color=color, alpha=0.2)
    if reference_us:
        ax.axhline(reference_us, color="k", ls="--", lw=0.8, label="reference")
        ax.axhline(reference_us / 0.95, color="k", ls=":", lw=0.8, label="T95 line: 95% of its speed")
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("best latency (µs)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
