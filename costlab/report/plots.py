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
    draw_session_curve(ax, trials)
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def draw_session_curve(ax, trials) -> None:
    """The session plot's axes: every trial on the x axis, a failed one (no latency) as a cross
    along the top edge, so that a late first success or a session of failures reads as such."""
    steps = [t.index for t in trials]
    ok = [(t.index, t.latency_s * 1e6) for t in trials if not t.failed]
    failed = [t.index for t in trials if t.failed]
    if ok:
        ax.scatter(*zip(*ok), s=8, alpha=0.4, label="trial latency")
    best = [t.best_latency_s * 1e6 if math.isfinite(t.best_latency_s) else np.nan for t in trials]
    ax.step(steps, best, where="post", color="C3", label="best so far")
    ax.set_yscale("log")
    if failed and ok:  # room along the top edge (6% of the log axis) for the crosses, above every dot
        low, high = ax.get_ylim()
        ax.set_ylim(low, high * (high / low) ** (0.06 / 0.94))
    if failed:  # y in axes units: the top edge, whatever the latencies' scale
        ax.scatter(failed, [0.97] * len(failed), marker="x", s=14, color="0.4", transform=ax.get_xaxis_transform(),
                   clip_on=False, label=f"failed ({len(failed)})")
    if not ok:
        ax.text(0.5, 0.5, "no successful trial", transform=ax.transAxes, ha="center", va="center")
    if steps:
        ax.set_xlim(min(steps) - 0.5, max(steps) + 0.5)
    ax.set_xlabel("measured trials")
    ax.set_ylabel("latency (µs)")
    ax.legend()


def band_over_seeds(seeds: list[tuple[np.ndarray, np.ndarray]], speed_of_reference: float | None = None):
    """``(grid, median, min, max, n_seeds)``: the seeds' best-latency step curves on a common x grid.

    ``seeds`` holds ``(x, best_latency)`` per seed; points with an unknown x (nan) are left
    out. A seed with no point yet, or no successful trial yet, counts as no kernel found
    (infinite latency), so the median over all seeds only falls as x grows: a slower seed's
    first point cannot raise it. Infinite values come back as nan (not drawn). ``n_seeds``
    counts the seeds with a point. None when no seed has one.

    ``speed_of_reference``: the band of ``reference / best latency`` instead, each seed's fraction
    of the reference's speed (0 before its first kernel), the median taken over those fractions
    (with an even number of seeds, not the same as the reference over the median latency).
    """
    seeds = [(np.asarray(x, float), np.asarray(y, float)) for x, y in seeds]
    seeds = [(x[np.isfinite(x)], y[np.isfinite(x)]) for x, y in seeds]
    seeds = [(x, y) for x, y in seeds if len(x)]
    if not seeds:
        return None
    grid = np.unique(np.concatenate([x for x, _ in seeds]))
    rows = []
    for x, y in seeds:
        y = np.where(np.isfinite(y), y, np.inf)
        idx = np.searchsorted(x, grid, side="right") - 1
        rows.append(np.where(idx >= 0, y[np.clip(idx, 0, None)], np.inf))
    data = np.vstack(rows)
    if speed_of_reference is not None:
        data = speed_of_reference / data  # an infinite latency (no kernel yet): speed 0
    med, lo, hi = (np.where(np.isfinite(v), v, np.nan)
                   for v in (np.median(data, axis=0), data.min(axis=0), data.max(axis=0)))
    return grid, med, lo, hi, len(seeds)


def model_colors(models) -> dict[str, str]:
    """One matplotlib colour per model, by its place among all of them: the same model keeps its
    colour in every workload's figure, also where another model did not run."""
    return {model: f"C{i % 10}" for i, model in enumerate(sorted(set(models)))}


def plot_band_curves(curves: dict[str, list[tuple[np.ndarray, np.ndarray]]], title: str, xlabel: str,
                     out: Path, reference_us: float | None = None, speed_fraction: bool = False,
                     colors: dict[str, str] | None = None) -> Path:
    """One curve per model (median over seeds) with a min–max band (see ``band_over_seeds``).

    ``curves[model]`` is a list over seeds of ``(x, best_latency_us)``. By default the y axis is
    the best latency (log scale). ``speed_fraction=True`` (needs ``reference_us``) draws
    ``reference / best latency`` instead, the fraction of the reference's speed reached, on a
    linear axis from 0 to 1, where the T95 line is the horizontal at 0.95. ``colors``: a colour per
    model (:func:`model_colors`); by default by place among this figure's models.
    """
    if speed_fraction and not reference_us:
        raise ValueError("speed_fraction needs reference_us")
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    colors = colors or model_colors(curves)
    for model, seeds in sorted(curves.items()):
        band = band_over_seeds(seeds, reference_us if speed_fraction else None)
        if band is None:
            continue
        grid, med, lo, hi, n_seeds = band
        color = colors[model]
        ax.step(grid, med, where="post", color=color, label=f"{model} (n={n_seeds})")
        ax.fill_between(grid, lo, hi, step="post", color=color, alpha=0.2)
    if speed_fraction:
        ax.axhline(0.95, color="k", ls=":", lw=0.8, label="T95 line: 95% of the reference's speed")
        ax.set_ylim(0, 1.02)
        ax.set_ylabel("reference / best latency")
    else:
        if reference_us:
            ax.axhline(reference_us, color="k", ls="--", lw=0.8, label="reference")
            ax.axhline(reference_us / 0.95, color="k", ls=":", lw=0.8, label="T95 line: 95% of its speed")
        ax.set_yscale("log")
        ax.set_ylabel("best latency (µs)")
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
