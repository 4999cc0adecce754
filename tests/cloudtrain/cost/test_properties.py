"""Properties of the cost model that must hold for any job, speed and price."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from cloudtrain import cost
from cloudtrain.cost import inputs, ranking, units
from cloudtrain.spec import JobSpec

works = st.integers(min_value=1, max_value=10**10)
speeds = st.floats(min_value=0.01, max_value=1e6)
rates = st.floats(min_value=0.001, max_value=500)
efficiencies = st.floats(min_value=0.05, max_value=1.0)
increments = st.sampled_from([1, 30])


def cost_of(work: int, speed: float, efficiency: float, rate: float, increment: int) -> float:
    seconds = units.run_seconds(work, speed * efficiency, 0.0)
    return units.charge(units.billed_seconds(seconds, increment), rate, 2)


@given(works, speeds, st.tuples(efficiencies, efficiencies), rates, increments)
def test_more_efficient_never_costs_more_at_the_same_price(
    work: int, speed: float, pair: tuple[float, float], rate: float, increment: int
) -> None:
    low, high = sorted(pair)
    assert cost_of(work, speed, high, rate, increment) <= cost_of(work, speed, low, rate, increment)


def spec_for(examples: int, accelerator: str) -> JobSpec:
    return JobSpec(
        name="demo",
        code={"module": "trainer.task"},
        resources={"accelerator": accelerator, "per_host": 8},
        training={"examples_per_epoch": examples, "epochs": 1},
    )


@settings(max_examples=25, deadline=None)
@given(
    st.integers(min_value=1, max_value=10**9),
    st.floats(min_value=1, max_value=1e5),
    st.sampled_from(["a100-40gb", "t4", "h100-80gb"]),
    st.floats(min_value=0, max_value=0.95),
)
def test_spot_never_dearer_than_on_demand_for_the_same_run(
    examples: int, rate: float, accelerator: str, discount: float
) -> None:
    # Spot rates in the catalog never exceed on-demand; at equal run time (no interruption
    # overhead) a spot option therefore never costs more than its on-demand twin.
    model = cost.CostSettings(spot_overhead=0.0, spot_discount=discount)
    options = cost.estimate(
        spec_for(examples, accelerator), throughput=f"{rate}@{accelerator}", settings=model
    )
    on_demand = {(o.provider, o.region, o.label, o.accelerator): o for o in options if not o.spot and o.known}
    for spot in (o for o in options if o.spot and o.known):
        assert spot.usd <= on_demand[spot.provider, spot.region, spot.label, spot.accelerator].usd


def test_catalog_spot_rates_never_exceed_on_demand() -> None:
    for row in inputs.prices().rows():
        assert row.spot is None or (row.on_demand is not None and row.spot <= row.on_demand), row


def template() -> cost.CostOption:
    return cost.estimate(spec_for(1000, "a100-40gb"), throughput="100@a100-40gb", providers=("sagemaker",))[0]


points = st.lists(
    st.tuples(st.floats(min_value=0.01, max_value=100), st.floats(min_value=0.01, max_value=1000)),
    min_size=1,
    max_size=30,
)


@given(points)
def test_pareto_front_is_non_dominated_and_complete(pairs: list[tuple[float, float]]) -> None:
    base = template()
    options = [replace(base, hours=h, usd=u) for h, u in pairs]
    front = ranking.pareto_front(options)
    dominates = ranking._dominates
    for member in front:
        assert not any(dominates(o, member) for o in options)
    for outside in (o for o in options if all(o is not m for m in front)):
        assert any(dominates(m, outside) for m in front)
    marked = ranking.rank(options)
    assert sum("pareto" in o.marks for o in marked) == len(front)
    assert min(o.usd for o in marked if "cheapest" in o.marks) == min(u for _, u in pairs)
