"""cost: work, speed scaling, billing, unknown prices, ranking and the reviewed golden tables."""

from __future__ import annotations

import doctest
import importlib
import json
import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from cloudtrain import catalog, cost
from cloudtrain.api import plan
from cloudtrain.cli.cost_commands import table
from cloudtrain.cost import inputs, shapes, units
from cloudtrain.cost.compare import work_examples
from cloudtrain.cost.option import device_speed
from cloudtrain.errors import SpecError
from cloudtrain.spec import JobSpec
from cloudtrain.specfile import load_spec

REPO = Path(__file__).resolve().parents[3]
GOLDEN = REPO / "tests" / "golden" / "cost"


def job(**training: object) -> JobSpec:
    return JobSpec(
        name="demo",
        code={"module": "trainer.task"},
        resources={"accelerator": "a100-40gb", "per_host": 8},
        training={"examples_per_epoch": 1_200_000, "epochs": 10, **training},
    )


def option_for(options: list[cost.CostOption], machine: str, spot: bool) -> cost.CostOption:
    return next(o for o in options if o.machine_type == machine and o.spot == spot)


def test_hours_and_dollars_follow_the_stated_formula() -> None:
    options = cost.estimate(job(), throughput="1000@a100-40gb", providers=("sagemaker",))
    p4d = option_for(options, "ml.p4d.24xlarge", spot=False)
    # 12M examples / (1000 × 8 devices × 0.90 NVLink) = 1666.67 s, billed per second.
    assert p4d.hours == pytest.approx(12_000_000 / (1000 * 8 * 0.90) / 3600)
    assert p4d.billed_hours == 1667 / 3600
    assert p4d.usd == pytest.approx(1667 / 3600 * 25.2512883)
    assert (p4d.price.as_of, p4d.rate_basis) == ("2026-09-07", "list")


def test_throughput_scales_by_relative_speed() -> None:
    speeds = inputs.read_speeds()
    measured = cost.parse_throughput("300@t4")
    # 300 examples/s on a T4 (0.17) is 300 × 1.9 / 0.17 on an H100.
    assert device_speed("h100-80gb", measured, speeds) == pytest.approx(300 * 1.9 / 0.17)
    assert device_speed("t4", measured, speeds) == 300
    assert device_speed("cpu", measured, speeds) is None


@pytest.mark.parametrize(
    ("seconds", "increment", "billed"),
    [
        (1.0, 30, 30),  # Vertex: a 1 s job is billed 30 s
        (30.0, 30, 30),  # exactly one increment
        (30.000000001, 30, 30),  # float noise does not add an increment
        (31.0, 30, 60),  # rounded up to the next 30 s
        (1.2, 1, 2),  # SageMaker: whole seconds
    ],
)
def test_billing_rounds_up_to_the_increment(seconds: float, increment: int, billed: int) -> None:
    assert units.billed_seconds(seconds, increment) == billed


def test_vertex_bills_in_30_second_increments() -> None:
    tiny = job(examples_per_epoch=100, epochs=1)
    options = cost.estimate(tiny, throughput="1000@a100-40gb", providers=("vertex",))
    a2 = option_for(options, "a2-highgpu-8g", spot=False)
    assert a2.billed_hours == 30 / 3600
    assert a2.usd == pytest.approx(30 / 3600 * a2.price.on_demand)


def test_an_unknown_price_never_produces_a_number() -> None:
    options = cost.estimate(job(), throughput="1000@a100-40gb", regions=("europe-west4", "eu-west-1"))
    unknown = [o for o in options if o.price is None or not o.price.known]
    # H200 has no price in either European region (catalog/prices.csv: the europe-west4 H200 row of
    # https://github.com/skypilot-org/skypilot-catalog is anomalous; p5e is not listed for eu-west-1 on
    # https://instances.vantage.sh).
    assert {"a3-ultragpu-8g", "ml.p5e.48xlarge"} <= {o.machine_type for o in unknown}
    for option in unknown:
        assert (option.usd, option.usd_per_hour, option.rate_basis) == (None, None, "price unknown")
        assert option.to_dict()["usd"] is None and option.to_dict()["price"] is None
        assert not {"cheapest", "fastest", "pareto"} & set(option.marks)
    assert options[-len(unknown) :] == unknown  # ranked after every priced option


def test_sagemaker_spot_is_the_stated_assumption_not_a_quote() -> None:
    settings = cost.CostSettings(spot_discount=0.6)
    options = cost.estimate(job(), throughput="1000@a100-40gb", providers=("sagemaker",), settings=settings)
    spot = option_for(options, "ml.p4d.24xlarge", spot=True)
    assert spot.rate_basis == "assumed: on-demand × (1 − 60%)"
    assert spot.usd_per_hour == pytest.approx(25.2512883 * 0.4)
    assert spot.hours == pytest.approx(option_for(options, "ml.p4d.24xlarge", spot=False).hours * 1.1)


def test_layouts_keep_the_replica_count_and_respect_the_strategy() -> None:
    spec = job().model_copy(
        update={"resources": job().resources.model_copy(update={"accelerator": "t4", "per_host": 4})}
    )
    found, _ = shapes.enumerate_shapes(plan(spec), ("vertex", "sagemaker"))
    assert {s.devices for s in found} == {4}
    assert ("sagemaker", "ml.g4dn.xlarge", 4) in {
        (s.provider, s.machine.machine_type, s.hosts) for s in found
    }
    mirrored = spec.model_copy(update={"training": spec.training.model_copy(update={"strategy": "mirrored"})})
    assert all(s.hosts == 1 for s in shapes.enumerate_shapes(plan(mirrored), ("vertex",))[0])


def test_tpu_slice_only_where_the_strategy_can_drive_it() -> None:
    tpu = {"tpu-v5e"}
    found, _ = shapes.enumerate_shapes(plan(job()), ("vertex",))
    assert tpu <= {s.machine.accelerator for s in found}  # auto: 8 chips on ct5lp-hightpu-8t
    multi = job().model_copy(update={"training": job().training.model_copy(update={"strategy": "mirrored"})})
    found, notes = shapes.enumerate_shapes(plan(multi), ("vertex",))
    assert not tpu & {s.machine.accelerator for s in found}
    assert (
        "tpu-v5e on vertex: training.strategy: 'mirrored' cannot drive a TPU. Use strategy 'tpu' or auto."
        in notes
    )


def test_ranking_marks_cheapest_fastest_and_front() -> None:
    options = cost.estimate(job(), throughput="1000@a100-40gb")
    priced = [o for o in options if o.known]
    assert "cheapest" in options[0].marks
    assert options[0].usd == min(o.usd for o in priced)
    fastest = next(o for o in options if "fastest" in o.marks)
    assert fastest.hours == min(o.hours for o in priced)


def test_filters_drop_options_and_note_unknown_prices() -> None:
    found = cost.report(job(), throughput="1000@a100-40gb")
    kept = cost.select(found, max_hours=0.5, max_cost=40)
    assert kept.options and all(o.hours <= 0.5 and o.usd <= 40 for o in kept.options)
    assert "cheapest" in kept.options[0].marks
    assert any("unknown price are left out by --max-cost" in n for n in kept.notes)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("1200", "--throughput '1200' is neither RATE@ACCELERATOR nor a file."),
        ("fast@t4", "fast@t4: the rate must be examples per second > 0. Received: 'fast'."),
        ("-5@t4", "-5@t4: the rate must be examples per second > 0. Received: '-5'."),
        ("100@h100", "throughput accelerator 'h100' is unknown. Did you mean 'h100-80gb'?"),
    ],
)
def test_bad_throughput_names_the_value_and_the_fix(value: str, message: str) -> None:
    with pytest.raises(SpecError) as error:
        cost.parse_throughput(value)
    assert str(error.value).startswith(message)


def runtime_files(folder: Path, rate: float | None, replicas: int) -> Path:
    """The two files the runtime writes after a run (entrypoints/cloudtrain_runtime/session.py)."""
    throughput = {"examples_per_sec": rate, "measured_steps": 60, "warmup_steps": 64, "global_batch": 256}
    throughput["note"] = None if rate else "needs > 50 steps and a second epoch to measure"
    (folder / "cloudtrain-result.json").write_text(json.dumps({"replicas": replicas, "global_batch": 256}))
    path = folder / "cloudtrain-throughput.json"
    path.write_text(json.dumps(throughput))
    return path


def test_throughput_json_from_a_run_is_divided_per_device(tmp_path: Path) -> None:
    path = runtime_files(tmp_path, 4000.0, replicas=8)
    measured = cost.parse_throughput(f"{path}@a100-40gb")
    assert (measured.examples_per_sec, measured.accelerator) == (500.0, "a100-40gb")
    path.write_text(json.dumps({"examples_per_second": 300, "accelerator": "t4", "devices": 2}))
    assert cost.parse_throughput(str(path)).examples_per_sec == 150


def test_a_run_folder_or_the_roots_latest_json_names_the_runs_throughput(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "r7"
    run.mkdir(parents=True)
    path = runtime_files(run, 4000.0, replicas=8)
    latest = tmp_path / "latest.json"
    latest.write_text(json.dumps({"run_id": "r7", "model": str(run / "model"), "completed_at": "x"}))
    for given in (run, latest):
        measured = cost.parse_throughput(f"{given}@a100-40gb")
        assert (measured.examples_per_sec, measured.source) == (500.0, f"{path}, ÷ 8 device(s)")
    latest.write_text(json.dumps({"run_id": "r7", "model": "gs://bucket-a/runs/r7/model"}))
    with pytest.raises(SpecError, match=r"points at a run in gs:// storage. Download its"):
        cost.parse_throughput(f"{latest}@t4")
    with pytest.raises(SpecError, match=r"cannot be read \(No such file or directory\)"):
        cost.parse_throughput(f"{tmp_path / 'runs'}@t4")


def test_throughput_json_problems_say_what_to_do(tmp_path: Path) -> None:
    path = runtime_files(tmp_path, 4000.0, replicas=8)
    with pytest.raises(SpecError) as error:
        cost.parse_throughput(str(path))
    assert str(error.value) == (
        f"{path} does not say which accelerator it was measured on. "
        f"Add it after the path, e.g. --throughput {path}@a100-40gb."
    )
    runtime_files(tmp_path, None, replicas=8)
    with pytest.raises(SpecError) as error:
        cost.parse_throughput(f"{path}@t4")
    # regression: the advice pointed back at the same file
    assert str(error.value) == (
        f"{path}: no measured throughput (needs > 50 steps and a second epoch to measure). Train 2 epochs "
        "or more and pass the cloudtrain-throughput.json that run writes, or measure with cloudtrain bench "
        "JOB --json > bench.json and pass bench.json, or give RATE@ACCELERATOR (e.g. 1200@t4)."
    )


def test_a_run_timed_after_a_short_warm_up_is_used_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "cloudtrain-throughput.json"
    path.write_text(
        json.dumps({"examples_per_sec": 900.0, "steady": False, "replicas": 1, "accelerator": "cpu"})
    )
    measured = cost.parse_throughput(str(path))
    assert (measured.examples_per_sec, measured.source) == (
        900.0,
        f"{path}, ÷ 1 device(s), timed after a short warm-up",
    )


def test_work_needs_examples_or_steps() -> None:
    steps = JobSpec(
        name="demo",
        code={"module": "m"},
        resources={"per_host": 1, "hosts": 2},
        training={"steps_per_epoch": 100, "per_replica_batch": 64, "epochs": 3},
    )
    assert work_examples(plan(steps)) == (100 * 128 * 3, "100 steps × global batch 128 × 3 epochs")
    with pytest.raises(SpecError, match=r"^training.examples_per_epoch is needed"):
        work_examples(plan(JobSpec(name="demo", code={"module": "m"})))


def test_the_work_uses_the_plans_global_batch() -> None:
    spec = JobSpec(
        name="demo",
        code={"module": "m"},
        resources={"per_host": 4, "hosts": 2},
        training={"steps_per_epoch": 10, "global_batch": 256, "epochs": 1},
    )
    found = cost.report(spec, throughput="100@t4", providers=("sagemaker",))
    assert (found.work_examples, found.work_basis) == (2560, "10 steps × global batch 256 × 1 epochs")


TRIED = (
    "No provider could plan the job (local, vertex, sagemaker, kubernetes), so it cannot be priced. "
    "Fix the problems above for provider 'local', or pick another with --set provider=NAME."
)


@pytest.mark.parametrize(
    ("update", "problems"),
    [
        (  # a problem of the spec itself
            {"training": {"examples_per_epoch": 100, "global_batch": 12}},
            [
                "training.global_batch: 12 does not divide over 8 replicas (1 hosts × 8 a100-40gb). "
                "Use a multiple of 8 (e.g. 8 or 16), or set training.per_replica_batch.",
                TRIED,
            ],
        ),
        (  # hardware its own provider cannot run, and no other provider is configured
            {"resources": {"accelerator": "tpu-v5e", "per_host": 8}},
            [
                "resources.accelerator: TPUs cannot be emulated by the local provider; use --provider vertex.",
                TRIED,
            ],
        ),
    ],
)
def test_a_spec_no_provider_can_plan_is_not_priced(
    update: dict[str, dict[str, object]], problems: list[str]
) -> None:
    base = job().model_dump(exclude_unset=True)
    spec = JobSpec(**{**base, **{k: {**base.get(k, {}), **v} for k, v in update.items()}})
    with pytest.raises(SpecError) as error:
        cost.report(spec, throughput="100@a100-40gb")
    assert error.value.problems == problems


def test_unknown_region_is_refused_with_the_known_ones() -> None:
    with pytest.raises(SpecError, match=r"--region 'us-central2' has no prices in the catalog. Did you mean"):
        cost.estimate(job(), throughput="1@t4", regions=("us-central2",))


def test_a_spec_region_without_prices_says_how_to_refresh() -> None:
    spec = job().model_copy(update={"vertex": job().vertex.model_copy(update={"region": "asia-east1"})})
    found = cost.report(spec, throughput="1@a100-40gb", providers=("vertex",))
    assert all(not o.known for o in found.options)
    assert (
        "vertex asia-east1: no prices in the catalog. Run: cloudtrain prices refresh --provider gcp --region asia-east1"
        in found.notes
    )


def test_speeds_file_overrides_the_shipped_ratio(tmp_path: Path) -> None:
    path = tmp_path / "speeds.csv"
    path.write_text("accelerator,relative_speed\nh100-80gb,3.0\n")
    assert inputs.read_speeds(path)["h100-80gb"] == 3.0
    path.write_text("accelerator,relative_speed\nh100,3.0\n")
    with pytest.raises(SpecError, match="unknown accelerator 'h100'"):
        inputs.read_speeds(path)


# Wide enough for every column: the goldens show the whole table.
GOLDEN_WIDTH = 200
GOLDEN_CASES = {
    "binary_classifier": (REPO / "examples" / "binary_classifier" / "job.yaml", "1200@a100-40gb"),
    "image_model": (GOLDEN / "image_model.yaml", "1200@a100-40gb"),
}


@pytest.mark.parametrize("case", sorted(GOLDEN_CASES))
def test_table_matches_reviewed_golden(case: str) -> None:
    path, throughput = GOLDEN_CASES[case]
    text = table(cost.report(load_spec(path), throughput=throughput), width=GOLDEN_WIDTH) + "\n"
    golden = GOLDEN / f"{case}.txt"
    if os.environ.get("CLOUDTRAIN_UPDATE_GOLDEN") == "1":
        golden.write_text(text)
    assert text == golden.read_text()


def test_every_machine_has_a_price_row_in_each_covered_region() -> None:
    gce, ec2 = ("us-central1", "europe-west4"), ("us-east-1", "eu-west-1")
    regions = {"vertex": gce, "sagemaker": ec2}
    prices = inputs.prices()
    gce_types = {m.machine_type for m in catalog.machines("vertex")}
    for machine in catalog.machines():
        # a Kubernetes node type is a GCE machine (GKE) or an EC2 instance (EKS)
        covered = (
            (gce if machine.machine_type in gce_types else ec2) if machine.provider == "kubernetes" else None
        )
        for region in covered or regions[machine.provider]:
            row = prices.lookup(machine.provider, region, machine.machine_type, machine.accelerator)
            assert row is not None, (machine.machine_type, machine.accelerator, region)


def test_catalog_rows_are_dated_sourced_and_flagged() -> None:
    for row in inputs.prices().rows():
        if row.known:
            assert row.as_of[:2] == "20" and len(row.as_of) == 10, row
            assert row.source and (row.formula or not row.is_estimate), row
            assert row.spot is None or row.spot <= row.on_demand, row
        else:
            assert (row.spot, row.as_of) == (None, "") and row.source.startswith("not found"), row


def test_written_catalog_reads_back_identically(tmp_path: Path) -> None:
    rows = inputs.prices().rows()
    copy = inputs.read_prices(inputs.write_prices(rows, tmp_path / "prices.csv"))
    assert sorted(copy.rows(), key=repr) == sorted(rows, key=repr)
    assert replace(rows[0]) == rows[0]


@pytest.mark.parametrize(
    "name",
    [
        "cloudtrain.cost",
        "cloudtrain.cost.compare",
        "cloudtrain.cost.budget",
        "cloudtrain.cost.throughput",
        "cloudtrain.cost.inputs",
        "cloudtrain.cost.units",
        "cloudtrain.cost.notes",
        "cloudtrain.cost.refresh",
        "cloudtrain.cost.refresh.aws",
        "cloudtrain.cost.refresh.gcp",
    ],
)
def test_docstring_examples_run(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert (result.failed, result.attempted > 0) == (0, True)


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (lambda folder: _special(folder, "fifo"), "not a regular file (a FIFO, socket or device)."),
        (lambda folder: _special(folder, "/dev/zero"), "not a regular file (a FIFO, socket or device)."),
    ],
)
def test_a_throughput_file_that_is_no_file_never_blocks(
    tmp_path: Path, make: Callable[[Path], Path], problem: str
) -> None:
    path = make(tmp_path)
    with pytest.raises(SpecError) as error:
        cost.parse_throughput(f"{path}@t4")
    assert str(error.value).startswith(f"{path}: {problem}")


@pytest.mark.parametrize(
    "replicas",
    [int("9" * 4000), 2**31, "8", 0, True],  # 4,000 digits; past int32; text; zero; a boolean
)
def test_the_replicas_a_rate_was_measured_on_are_a_count(tmp_path: Path, replicas: object) -> None:
    path = runtime_files(tmp_path, 4000.0, replicas=8)
    (tmp_path / "cloudtrain-result.json").write_text(json.dumps({"replicas": replicas}))
    with pytest.raises(SpecError, match="the replicas it was measured on must be a whole number from 1 to"):
        cost.parse_throughput(f"{path}@t4")


def _special(folder: Path, kind: str) -> Path:
    path = folder / "throughput.json"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to(kind)
    return path
