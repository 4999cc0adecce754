"""Order the options and mark the cheapest, the fastest and the Pareto front (hours against dollars)."""

from __future__ import annotations

from dataclasses import replace

from cloudtrain.cost.option import CostOption


def rank(options: list[CostOption]) -> list[CostOption]:
    """Options cheapest first (unknown prices last, by time), marked cheapest, fastest and pareto."""
    priced = [o for o in options if o.known]
    front = {id(o) for o in pareto_front(priced)}
    cheapest = min(priced, key=lambda o: (o.usd, o.hours), default=None)
    fastest = min(priced, key=lambda o: (o.hours, o.usd), default=None)

    def marked(option: CostOption) -> CostOption:
        marks = [
            name
            for name, hit in (
                ("cheapest", option is cheapest),
                ("fastest", option is fastest),
                ("pareto", id(option) in front),
            )
            if hit
        ]
        return replace(option, marks=tuple(marks))

    ordered = sorted(options, key=lambda o: (not o.known, o.usd or 0.0, o.hours, o.provider, o.label))
    return [marked(o) for o in ordered]


def pareto_front(options: list[CostOption]) -> list[CostOption]:
    """The priced options no other option beats on both hours and dollars."""
    priced = [o for o in options if o.known]
    return [o for o in priced if not any(_dominates(other, o) for other in priced)]


def _dominates(a: CostOption, b: CostOption) -> bool:
    assert a.usd is not None and b.usd is not None
    return a.hours <= b.hours and a.usd <= b.usd and (a.hours < b.hours or a.usd < b.usd)
