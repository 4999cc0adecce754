"""``cost --plot``: the Pareto front's labels never overlap, measured with matplotlib's own text extents."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from cloudtrain.cost import plot
from cloudtrain.cost.inputs import Efficiency
from cloudtrain.cost.option import CostOption

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from matplotlib.transforms import Bbox

pytest.importorskip("matplotlib")


def option(i: int, hours: float, usd: float, marks: tuple[str, ...] = ("pareto",)) -> CostOption:
    return CostOption(
        provider=("vertex", "sagemaker")[i % 2],
        region="us-central1",
        machine_type=f"shape-{i:02d}-highgpu",
        accelerator="a100-40gb",
        hosts=1 + i % 3,
        devices_per_host=1,
        spot=i % 4 == 0,
        efficiency=Efficiency(1.0, "test"),
        examples_per_sec=1000.0,
        hours=hours,
        billed_hours=hours,
        usd_per_hour=usd / hours,
        usd=usd,
        rate_basis="on-demand",
        price=None,
        marks=marks,
    )


def label_extents(fig: Figure) -> list[Bbox]:
    from matplotlib.text import Text

    fig.canvas.draw()  # what savefig draws: every annotation at its final place
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    [ax] = fig.axes
    return [Text.get_window_extent(text, renderer) for text in ax.texts]


def overlapping(extents: list[Bbox]) -> list[tuple[int, int]]:
    return [
        (i, j)
        for (i, a), (j, b) in itertools.combinations(enumerate(extents), 2)
        if min(a.x1, b.x1) > max(a.x0, b.x0) and min(a.y1, b.y1) > max(a.y0, b.y0)
    ]


# Two far options off the front, so the axes span 100× each way and the front is a cluster.
SPAN = [option(90, 0.1, 1000.0, ()), option(91, 100.0, 1.0, ())]


@pytest.mark.parametrize(
    "options",
    [
        # 16 shapes within 15% of each other in time and cost: every label wants the same spot
        [*SPAN, *(option(i, 3.0 + 0.03 * i, 30.0 - 0.25 * i) for i in range(16))],
        # 12 shapes on a steep front packed into a narrow time range
        [*SPAN, *(option(i, 2.0 + 0.002 * i, 40.0 / (1 + i)) for i in range(12))],
        # one label alone
        [option(0, 1.0, 1.0)],
    ],
    ids=["16-near-equal", "12-steep", "one"],
)
def test_front_labels_do_not_overlap_and_stay_in_the_figure(
    options: list[CostOption], tmp_path: Path
) -> None:
    fig = plot.draw(options)
    extents = label_extents(fig)
    figure = fig.bbox
    assert len(extents) == len([o for o in options if o.marks])  # every option of the front is labelled
    assert overlapping(extents) == []
    assert all(
        figure.x0 <= e.x0 and e.x1 <= figure.x1 and figure.y0 <= e.y0 and e.y1 <= figure.y1 for e in extents
    )
    fig.savefig(tmp_path / "dense.png")
