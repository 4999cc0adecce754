"""Draw the cost table as hours against dollars, with the Pareto front highlighted.

matplotlib is optional (``pip install 'cloudtrain[plot]'``) and imported only here,
inside ``draw``, with the non-interactive Agg backend so it works on a headless machine.
Each provider's points have its own ``color``, so a provider registered at run time is
drawn like a built-in one.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from cloudtrain.cost import notes
from cloudtrain.cost.units import dollars, duration
from cloudtrain.errors import require
from cloudtrain.providers import registry

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from cloudtrain.cost.option import CostOption

MARKERS = {"on-demand": "o", "spot": "^"}


def plot(options: list[CostOption], path: str | Path) -> Path:
    """Write a log-log scatter of ``options`` (priced ones) to ``path`` (PNG) and return it."""
    fig = draw(options)
    import matplotlib.pyplot as plt

    fig.savefig(path)
    plt.close(fig)
    return Path(path)


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
    _front(ax, priced)
    _style(ax, priced)
    fig.tight_layout()
    return fig


def _dollars(options: list[CostOption]) -> list[float]:
    """The dollar figures of options that all have a price (the plot shows only those)."""
    return [o.usd for o in options if o.usd is not None]


def _front(ax: Axes, priced: list[CostOption]) -> None:
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
    middle = (front[0].hours * front[-1].hours) ** 0.5 if front else 0.0
    for i, option in enumerate(front):
        right_half = option.hours > middle
        ax.annotate(
            _label(option),
            (option.hours, option.usd),
            textcoords="offset points",
            xytext=(-10 if right_half else 10, 10 if i % 2 else -14),
            ha="right" if right_half else "left",
            fontsize=8,
            color="#202124",
        )


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
