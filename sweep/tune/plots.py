"""The figures of a tuning: the Pareto front (two or more objectives), the optimisation history
(one objective) and the parameter importances. PNG, 110 dpi, through :func:`sweep.plotting.pyplot`.
Axes show each objective in its catalogue label and display unit with "minimise" / "maximise" in
words (:meth:`TuneSpec.objective_label`), values scaled to that unit; written atomically."""

from __future__ import annotations

import math
from pathlib import Path

from twinsweep.core.atomic import atomic_write

from ..plotting import pyplot
from .spec import TuneSpec

__all__ = ["plot_pareto", "plot_history", "plot_importances"]


def _save_plot(plt, fig, ax, path: Path) -> Path:
    """Grid, legend, tight layout; write ``path`` (PNG, 110 dpi) and close the figure."""
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return _write_png(plt, fig, path)


def _write_png(plt, fig, path: Path) -> Path:
    """Write ``fig`` to ``path`` (PNG, 110 dpi) atomically (:mod:`core.atomic`) and close it."""
    try:
        atomic_write(path, lambda p: fig.savefig(p, format="png", dpi=110))
    finally:
        plt.close(fig)
    return path


def plot_pareto(complete, best: list[dict], spec: TuneSpec, path: Path) -> Path:
    """``pareto.png``: the complete trials (grey) on the first two objectives, the Pareto set
    ``best`` joined and labelled with trial numbers. ``complete``: Optuna FrozenTrials."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4.5))
    dx, dy = (lambda v: spec.objective_value(0, v)), (lambda v: spec.objective_value(1, v))  # display units
    xs = [dx(t.values[0]) for t in complete]
    ys = [dy(t.values[1]) for t in complete]
    ax.scatter(xs, ys, s=18, color="0.6", label="trials")
    front = sorted((dx(b["values"][0]), dy(b["values"][1])) for b in best)
    ax.plot([p[0] for p in front], [p[1] for p in front], "o-", color="C3", label="Pareto front")
    for b in best:
        ax.annotate(str(b["number"]), (dx(b["values"][0]), dy(b["values"][1])), fontsize=7, xytext=(3, 3),
                    textcoords="offset points")
    ax.set_xlabel(spec.objective_label(0))
    ax.set_ylabel(spec.objective_label(1))
    ax.ticklabel_format(useOffset=False, style="plain")
    ax.set_title(f"{spec.study_name}: {len(complete)} trials (train windows)", fontsize=10)
    return _save_plot(plt, fig, ax, path)


def plot_history(complete, spec: TuneSpec, path: Path) -> Path:
    """``history.png``: each complete trial's value and the best so far (one objective)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    nums = [t.number for t in complete]
    vals = [spec.objective_value(0, t.values[0]) for t in complete]  # display units
    sgn = 1 if spec.objectives[0][1] == "min" else -1
    run_best, cur = [], math.inf
    for v in vals:
        cur = min(cur, sgn * v)
        run_best.append(sgn * cur)
    ax.plot(nums, vals, "o", color="0.5", ms=4, label="trial")
    ax.plot(nums, run_best, "-", color="C3", label="best so far")
    ax.set_xlabel("trial")
    ax.set_ylabel(spec.objective_label(0))
    ax.ticklabel_format(axis="y", useOffset=False, style="plain")
    return _save_plot(plt, fig, ax, path)


def plot_importances(imp_df, spec: TuneSpec, method: str, path: Path) -> Path:
    """``importances.png``: one horizontal bar chart per objective. ``imp_df``: a DataFrame with
    columns objective, param, importance; ``method``: the evaluator's name (axis label)."""
    plt = pyplot()
    names = [m for m, _ in spec.objectives]
    fig, axes = plt.subplots(1, len(names), figsize=(4.5 * len(names), 0.5 + 0.4 * len(spec.params)),
                             squeeze=False)
    for i, m in enumerate(names):
        d = imp_df[imp_df["objective"] == m].sort_values("importance")
        axes[0][i].barh(d["param"], d["importance"], color="C0")
        axes[0][i].set_title(spec.objective_label(i), fontsize=9)
        axes[0][i].set_xlabel(f"importance ({method})", fontsize=8)
    fig.tight_layout()
    return _write_png(plt, fig, path)
