"""A provider registered at run time is priced, tabled and plotted, with no edit to cloudtrain.

``MoonCloud`` implements the Provider protocol in a few lines; its machines and prices
are two CSV files in a temporary ``catalog_dir``. ``registry.register`` is all it takes
for ``cost`` to compare it with the built-in providers; ``registry.unregister`` removes
it again, rows included.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import pytest

from cloudtrain import catalog, planning
from cloudtrain.cost import inputs
from cloudtrain.cost import plot as cost_plot
from cloudtrain.errors import ProviderError
from cloudtrain.outputs import Outputs, standard
from cloudtrain.provider import Provider, registry
from tests.conftest import EXAMPLE_JOB, Result

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from cloudtrain.bundle import Bundle
    from cloudtrain.planning import Plan
    from cloudtrain.progress import OnProgress
    from cloudtrain.provider import Job
    from cloudtrain.spec import JobSpec

Run = Callable[..., Result]
MACHINES = """\
provider,machine_type,accelerator,provider_accelerator,accelerator_count,accelerator_memory_gb,vcpus,memory_gb,intra_host,network_gbps,rdma,tpu_topology,source
mooncloud,moon-t4-1,t4,T4,1,16,8,32,pcie,10,none,,test row
mooncloud,moon-t4-2,t4,T4,2,16,16,64,pcie,20,none,,test row
"""
PRICES = """\
provider,region,machine_type,accelerator,on_demand_usd_per_hour,spot_usd_per_hour,billing_increment_s,as_of,is_estimate,formula,source
mooncloud,moon-base-1,moon-t4-1,t4,0.36,0.18,10,2026-12-01,false,,test price list
mooncloud,moon-base-1,moon-t4-2,t4,0.72,0.36,10,2026-12-01,false,,test price list
"""


class MoonCloud:
    """The smallest billed provider: facts as attributes, and methods that refuse real work."""

    name = "mooncloud"
    title = "Moon Cloud"
    schemes: tuple[str, ...] = ()
    machine_catalog = True
    billed = True
    max_runtime_s = None
    max_runtime_field = ""
    unsupported: Mapping[str, str] = MappingProxyType({"tpu": "Moon Cloud has no TPUs"})
    color = "#7b1fa2"

    def __init__(self, catalog_dir: Path) -> None:
        self.catalog_dir = catalog_dir

    def region(self, spec: JobSpec) -> str:
        return "moon-base-1"

    def storage_root(self, spec: JobSpec) -> str:
        return spec.storage.root

    def check(self, spec: JobSpec) -> list[str]:
        return []

    def plan(self, spec: JobSpec) -> Plan:
        return planning.plan(spec, self)

    def render(self, plan: Plan) -> dict[str, Any]:
        assert plan.machine is not None
        return {"machine": plan.machine.machine_type, "hosts": plan.hosts}

    def outputs(self, plan: Plan, request: dict[str, Any] | None = None) -> Outputs:
        return standard(plan.storage.root, logs="moon://logs/{job}")

    def upload(self, plan: Plan, bundle: Bundle, *, clients: Any = None, progress: Any = None) -> None:
        raise ProviderError("mooncloud only prices jobs")

    def submit(
        self,
        plan: Plan,
        request: dict[str, Any],
        bundle: Bundle,
        *,
        clients: Any = None,
        progress: OnProgress | None = None,
    ) -> Job:
        raise ProviderError("Moon Cloud accepts no jobs in tests.")

    def attach(self, job_id: str, *, clients: Any = None) -> Job:
        raise ProviderError(f"No Moon Cloud job {job_id!r}.")

    def owns(self, job_id: str) -> bool:
        return job_id.startswith("moon:")


@pytest.fixture
def moon(tmp_path: Path) -> Iterator[MoonCloud]:
    folder = tmp_path / "moon_catalog"
    folder.mkdir()
    (folder / "machines.csv").write_text(MACHINES)
    (folder / "prices.csv").write_text(PRICES)
    assert catalog.machines("mooncloud") == []  # read (and cached) before it is registered
    provider = MoonCloud(folder)
    registry.register(provider)
    try:
        yield provider
    finally:
        registry.unregister(provider.name)


def cost(run_cli: Run, *args: str) -> Result:
    result = run_cli("cost", str(EXAMPLE_JOB), "--throughput", "1200@t4", *args)
    assert result.code == 0, result.err
    return result


def test_it_implements_the_protocol_and_its_rows_come_and_go(moon: MoonCloud) -> None:
    assert isinstance(moon, Provider)
    assert [m.machine_type for m in catalog.machines("mooncloud")] == ["moon-t4-1", "moon-t4-2"]
    assert "moon-base-1" in inputs.prices().regions("mooncloud")
    registry.unregister(moon.name)
    assert catalog.machines("mooncloud") == []
    assert "moon-base-1" not in inputs.prices().regions()


@pytest.mark.usefixtures("moon")
def test_the_table_ranks_it_beside_the_built_in_providers(
    run_cli: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "250")  # every column fits
    out = cost(run_cli).out
    rows = [line.split() for line in out.splitlines()[2:] if line.lstrip()[:1].isdigit()]
    moon_rows = [row for row in rows if row[1] == "mooncloud"]
    # 2 × moon-t4-1 and 1 × moon-t4-2 (the example's 2 replicas), on-demand and spot.
    assert {(row[2], row[3], row[5]) for row in moon_rows} == {
        ("moon-base-1", "2", "moon-t4-1"),
        ("moon-base-1", "1", "moon-t4-2"),
    }
    assert len(moon_rows) == 4
    assert {row[1] for row in rows} > {"mooncloud"}
    assert "Moon Cloud in 10 s increments" in out


@pytest.mark.usefixtures("moon")
def test_json_prices_it_from_its_own_rows(run_cli: Run) -> None:
    options = json.loads(cost(run_cli, "--provider", "mooncloud", "--json").out)["options"]
    assert {o["provider"] for o in options} == {"mooncloud"}
    one_host = next(o for o in options if o["machine_type"] == "moon-t4-2" and o["capacity"] == "spot")
    # 1,536 examples at 1200/s × 2 T4 × 0.80 (PCIe) take 0.8 s × 1.1 (spot), billed as 10 s.
    assert one_host["hours"] == pytest.approx(1536 / (1200 * 2 * 0.80) * 1.1 / 3600)
    assert one_host["billed_hours"] == pytest.approx(10 / 3600)
    assert one_host["usd"] == pytest.approx(10 / 3600 * 0.36)
    assert (one_host["rate_basis"], one_host["price"]["source"]) == ("list", "test price list")


def test_the_plot_draws_its_points_in_its_colour(
    run_cli: Run, moon: MoonCloud, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    drawn: list[Figure] = []
    draw = cost_plot.draw

    def spy(options: list[Any]) -> Figure:
        drawn.append(draw(options))
        return drawn[-1]

    monkeypatch.setattr(cost_plot, "draw", spy)
    target = tmp_path / "cost.png"
    options = json.loads(cost(run_cli, "--json").out)["options"]
    cost(run_cli, "--plot", str(target))
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    (figure,) = drawn
    groups = {collection.get_label(): collection for collection in figure.axes[0].collections}
    for capacity in ("on-demand", "spot"):
        expected = sorted(
            (o["hours"], o["usd"])
            for o in options
            if o["provider"] == "mooncloud" and o["capacity"] == capacity
        )
        points = groups[f"mooncloud {capacity}"]
        drawn_points = sorted(tuple(point) for point in points.get_offsets().tolist())
        assert [v for point in drawn_points for v in point] == pytest.approx([v for p in expected for v in p])
        assert points.get_facecolor()[0][:3] == pytest.approx((0x7B / 255, 0x1F / 255, 0xA2 / 255))
