"""Draw the cost table as hours against dollars, with the Pareto front highlighted.

matplotlib is optional (``pip install 'cloudtrain[plot]'``) and imported only here,
inside ``draw``, with the non-interactive Agg backend so it works on a headless machine.
Each provider's points have its own ``color``, so a provider registered at run time is
drawn like a built-in one.

The Pareto front's labels are placed one by one where they overlap nothing already
there (the labels before them, the points, the legend), measured with the
text extents matplotlib will draw; a label moved away from its point gets a leader line.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from cloudtrain import figures
from cloudtrain.cost import notes
from cloudtrain.cost.units import dollars, duration
from cloudtrain.errors import require
from cloudtrain.provider import registry

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.backend_bases import RendererBase
    from matplotlib.figure import Figure
    from matplotlib.text import Annotation
    from matplotlib.transforms import Bbox

    from cloudtrain.cost.option import CostOption

MARKERS = {"on-demand": "o", "spot": "^"}
# Where a label may go, in points from its point: nearest first, each ring in 8 directions.
LABEL_RINGS = (10, 22, 36, 54, 76, 100, 130)
DIRECTIONS = ((1, 0), (-1, 0), (1, 1), (1, -1), (-1, 1), (-1, -1), (0, 1), (0, -1))
# A label's side of its point -> the alignment that keeps the text on that side.
H_ALIGN: dict[int, Literal["left", "center", "right"]] = {1: "left", -1: "right", 0: "center"}
V_ALIGN: dict[int, Literal["bottom", "center", "top"]] = {1: "bottom", -1: "top", 0: "center"}
# Pixels kept clear around each label and each point of the front.
LABEL_PAD_PX = 2.0
POINT_RADIUS_PX = 6.0


def plot(options: list[CostOption], path: str | Path) -> Path:
    """Write a log-log scatter of ``options`` (priced ones) to ``path`` (PNG) and return it."""
    return figures.save(draw(options), path)


def draw(options: list[CostOption]) -> Figure:
    """The figure ``plot`` writes: one point per priced option.

    Colour = provider (its ``color``), shape = on-demand or spot. The Pareto front is
    joined by a line and labelled; so are the cheapest and the fastest.
    """
    require("matplotlib", "plot")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    priced = [o for o in options if o.usd is not None]
    fig, ax = plt.subplots(figsize=(11, 7), dpi=120)
    for provider in notes.providers(priced):
        for capacity, marker in MARKERS.items():
            group = [o for o in priced if o.provider == provider and o.capacity == capacity]
            ax.scatter(
                [o.hours for o in group],
                _dollars(group),
                c=registry.get(provider).color,
                marker=marker,
                s=40,
                alpha=0.55,
                label=f"{provider} {capacity}",
            )
    front = _front(ax, priced)
    _style(ax, priced)
    # Labels go last, in the final layout: their places are measured in pixels.
    fig.tight_layout()
    _label_front(ax, front, priced)
    return fig


def _dollars(options: list[CostOption]) -> list[float]:
    """The dollar figures of options that all have a price (the plot shows only those)."""
    return [o.usd for o in options if o.usd is not None]


def _front(ax: Axes, priced: list[CostOption]) -> list[CostOption]:
    """Join the Pareto front, fastest to cheapest, and return its options in that order."""
    front = sorted((o for o in priced if "pareto" in o.marks), key=lambda o: o.hours)
    ax.plot(
        [o.hours for o in front],
        _dollars(front),
        color="#c5221f",
        linewidth=1.5,
        marker="o",
        markersize=9,
        markerfacecolor="none",
        label="Pareto front",
    )
    return front


def _label_front(ax: Axes, front: list[CostOption], priced: list[CostOption]) -> None:
    """Label every option of the front where the label overlaps no other label, point or the legend."""
    renderer = ax.figure.canvas.get_renderer()  # type: ignore[attr-defined]
    points = ax.transData.transform([(o.hours, usd) for o, usd in zip(priced, _dollars(priced), strict=True)])
    taken = [_around(x, y, POINT_RADIUS_PX) for x, y in points]
    legend = ax.get_legend()
    if legend is not None:
        taken.append(legend.get_window_extent(renderer))
    for option in front:
        taken.append(_place(ax, option, taken, renderer))


def _place(ax: Axes, option: CostOption, taken: list[Bbox], renderer: RendererBase) -> Bbox:
    """Annotate ``option`` at the first offset that is clear of ``taken`` and inside the axes.

    With no clear offset, the one overlapping least wins. Returns the label's extent.
    """
    label = ax.annotate(
        _label(option),
        (option.hours, option.usd),
        xytext=(0, 0),
        textcoords="offset points",
        fontsize=8,
        color="#202124",
        arrowprops={"arrowstyle": "-", "color": "#9aa0a6", "linewidth": 0.6, "shrinkA": 1, "shrinkB": 5},
    )
    inside = ax.get_window_extent(renderer)
    costs = []
    for radius, (dx, dy) in itertools.product(LABEL_RINGS, DIRECTIONS):
        extent = _try(label, radius, dx, dy, renderer)
        cost = sum(_overlap(extent, other) for other in taken) + _outside(extent, inside)
        if cost == 0:
            return extent
        costs.append((cost, radius, dx, dy))
    _, radius, dx, dy = min(costs)
    return _try(label, radius, dx, dy, renderer)


def _try(label: Annotation, radius: int, dx: int, dy: int, renderer: RendererBase) -> Bbox:
    """Move ``label`` to ``radius`` points in direction (``dx``, ``dy``); its text's padded extent."""
    from matplotlib.text import Text

    label.xyann = (dx * radius, dy * radius)
    label.set_horizontalalignment(H_ALIGN[dx])
    label.set_verticalalignment(V_ALIGN[dy])
    label.update_positions(renderer)  # an annotation places its text only when drawn
    return Text.get_window_extent(label, renderer).padded(LABEL_PAD_PX)


def _around(x: float, y: float, radius: float) -> Bbox:
    from matplotlib.transforms import Bbox

    return Bbox.from_extents(x - radius, y - radius, x + radius, y + radius)


def _overlap(a: Bbox, b: Bbox) -> float:
    """The area two extents share, in square pixels."""
    width = min(a.x1, b.x1) - max(a.x0, b.x0)
    height = min(a.y1, b.y1) - max(a.y0, b.y0)
    return max(width, 0.0) * max(height, 0.0)


def _outside(extent: Bbox, inside: Bbox) -> float:
    """The area of ``extent`` outside ``inside``."""
    return extent.width * extent.height - _overlap(extent, inside)


def _label(option: CostOption) -> str:
    marks = [m for m in option.marks if m != "pareto"]
    suffix = f" [{', '.join(marks)}]" if marks else ""
    return f"{option.label} {option.accelerator} {option.capacity}{suffix}"


def _style(ax: Axes, priced: list[CostOption]) -> None:
    from matplotlib.ticker import FuncFormatter, LogLocator

    ax.set_xscale("log")
    ax.set_yscale("log")
    # Ticks at 1-2-5 steps, labelled as durations and dollars rather than powers of ten.
    for axis, text in ((ax.xaxis, lambda hours: duration(hours * 3600)), (ax.yaxis, dollars)):
        axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(FuncFormatter(lambda value, _, text=text: text(value)))
        axis.set_minor_formatter(FuncFormatter(lambda value, _: ""))
    ax.set_xlabel("training time (log scale)")
    ax.set_ylabel("cost (log scale)")
    ax.set_title(f"Time vs cost of every option ({_sources(priced)})", fontsize=10)
    ax.grid(True, which="both", linewidth=0.3, alpha=0.6)
    ax.legend(fontsize=8, loc="upper right")


def _sources(priced: list[CostOption]) -> str:
    """``prices as of A to B; <title> prices include estimates``, from the options' price rows."""
    dates = sorted({o.price.as_of for o in priced if o.price and o.price.as_of})
    span = f"prices as of {dates[0]} to {dates[-1]}" if dates else "no known prices"
    estimated = [
        notes.title(p) for p in notes.providers([o for o in priced if o.price and o.price.is_estimate])
    ]
    return f"{span}; {' and '.join(estimated)} prices include estimates" if estimated else span
