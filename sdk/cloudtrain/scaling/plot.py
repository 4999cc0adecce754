"""``compare --plot``: the metric against epochs, wall time and dollars, one line per run.

Three panels side by side share the metric's axis, so a run that leads at equal epochs
but trails at equal time or cost shows at a glance. The target is a dotted line and each
run's first epoch at it a ring; a restart is a dashed span: the wall time it lost. matplotlib is
imported here only, with the headless Agg backend (the ``plot`` extra).
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import TYPE_CHECKING

from cloudtrain import figures
from cloudtrain.errors import require

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from cloudtrain.scaling.analysis import Comparison
    from cloudtrain.scaling.runs import EpochPoint, RunRecord

MARKERS = ("o", "s", "^", "D", "v", "P", "X")
PANELS = (("epoch", "epoch"), ("wall", "wall time since the run started (s)"), ("usd", "USD spent"))


def plot(comparison: Comparison, path: str | Path) -> Path:
    """Write the comparison's three panels to ``path`` (PNG) and return it."""
    require("matplotlib", "plot")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, panels = plt.subplots(1, 3, figsize=(15, 5), dpi=110, sharey=True)
    for index in range(len(comparison.runs)):
        for panel, (axis, _) in zip(panels, PANELS, strict=True):
            _line(panel, comparison, index, axis)
    metric = comparison.metric
    for panel, (axis, label) in zip(panels, PANELS, strict=True):
        panel.axhline(comparison.target.value, color="#80868b", linewidth=0.9, linestyle=":")
        panel.set_xlabel(label)
        panel.grid(True, linewidth=0.3, alpha=0.6)
        panel.set_title(f"{metric} vs {label.split(' since')[0]}", fontsize=10)
        if len(panel.lines) == 1:  # only the target line: no run has this axis (a price unknown)
            panel.text(
                0.5, 0.5, f"no {axis} for these runs", ha="center", va="center", transform=panel.transAxes
            )
    panels[0].set_ylabel(metric)
    panels[0].xaxis.get_major_locator().set_params(integer=True)
    panels[0].annotate(
        f"target {comparison.target}",
        (0.01, comparison.target.value),
        xycoords=("axes fraction", "data"),
        textcoords="offset points",
        xytext=(2, 3),
        fontsize=8,
        color="#5f6368",
    )
    fig.legend(*panels[0].get_legend_handles_labels(), loc="lower center", ncol=1, fontsize=9, frameon=False)
    fig.suptitle(_title(comparison), fontsize=11)
    fig.tight_layout(rect=(0, 0.04 + 0.045 * len(comparison.runs), 1, 1))
    return figures.save(fig, path)


def _line(panel: Axes, comparison: Comparison, index: int, axis: str) -> None:
    """One run's curve on one panel: solid within an attempt, dashed across a restart, a ring at the target."""
    metric, run, name = comparison.metric, comparison.runs[index], comparison.names[index]
    points = [(x, p) for p in run.points if metric in p.metrics and (x := _x(axis, run, p)) is not None]
    if not points:
        return
    color = f"C{index}"
    for (x0, before), (x1, after) in itertools.pairwise(points):
        if before.attempt != after.attempt:  # a restart: the time it lost
            panel.plot(
                [x0, x1], [before.metrics[metric], after.metrics[metric]], "--", color=color, linewidth=1
            )
    label = f"{name}: {run.label}, {run.shape}, {run.replicas} replica{'s' * (run.replicas != 1)}"
    for attempt in dict.fromkeys(p.attempt for _, p in points):
        xs, ys = zip(*((x, p.metrics[metric]) for x, p in points if p.attempt == attempt), strict=True)
        marker = MARKERS[index % len(MARKERS)]
        panel.plot(xs, ys, marker=marker, markersize=5, linewidth=1.6, color=color, label=label)
        label = "_"  # one legend entry per run
    reached = comparison.reached[index]
    point = next((p for _, p in points if reached is not None and p.epoch == reached.epoch), None)
    x = _x(axis, run, point) if point is not None else None
    if point is not None and x is not None:
        panel.plot([x], [point.metrics[metric]], "o", markersize=12, fillstyle="none", color=color)


def _x(axis: str, run: RunRecord, point: EpochPoint) -> float | None:
    """Where ``point`` sits on the panel's axis: its epoch, its wall time, or the dollars spent by then."""
    if axis == "epoch":
        return point.epoch
    if axis == "wall":
        return point.wall_s
    return run.usd_at(point.wall_s)


def _title(comparison: Comparison) -> str:
    """``Did scaling pay? Against A (1 replica): B did not pay; C paid``."""
    names = dict(zip((run.label for run in comparison.runs), comparison.names, strict=True))
    base = comparison.runs[comparison.baseline]
    kinds = "; ".join(f"{names[v.scaled]} {v.kind}" for v in comparison.verdicts)
    replicas = f"{base.replicas} replica{'s' * (base.replicas != 1)}"
    return f"Did scaling pay? Against {names[base.label]} ({replicas}): {kinds}"
