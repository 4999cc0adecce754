"""vertex.render: the CustomJob body, checked by the real protobuf schema and by reviewed golden files."""

from __future__ import annotations

import doctest
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from google.cloud import aiplatform_v1
from google.protobuf import json_format

from cloudtrain.api import plan
from cloudtrain.errors import ProviderError, SpecError
from cloudtrain.planning import Plan
from cloudtrain.providers import vertex
from cloudtrain.specfile import load_spec

REPO = Path(__file__).resolve().parents[4]
EXAMPLE = REPO / "examples" / "binary_classifier" / "job.yaml"
GOLDEN = REPO / "tests" / "golden" / "vertex"
BUNDLE = "gs://my-bucket/binary-classifier/code/0123456789abcdef.tar.gz"
A100_8 = ["resources.accelerator=a100-40gb", "resources.per_host=8"]
RESERVATION = "projects/my-project/zones/us-central1-a/reservations/a100-pool"

CASES = {
    "one_gpu": ["resources.hosts=1"],  # n1-standard-8 + 1 × T4, chief only
    "eight_gpus": [*A100_8, "resources.hosts=1"],  # a2-highgpu-8g, MirroredStrategy
    "four_hosts": [  # chief + 3 workers, identity, network and TensorBoard set
        *A100_8,
        "resources.hosts=4",
        "resources.disk_gb=500",
        "vertex.service_account=trainer@my-project.iam.gserviceaccount.com",
        "vertex.network=projects/123456789/global/networks/default",
        "vertex.tensorboard=projects/my-project/locations/us-central1/tensorboards/42",
    ],
    "spot": ["resources.spot=true"],  # 2 hosts × T4 on Spot VMs
    "flex": [*A100_8, "resources.capacity={mode: flex, max_wait: 2h}"],  # FLEX_START, waits up to 2 h
    "reservation": [  # a specific Compute Engine reservation, by its full resource name
        *A100_8,
        f"resources.capacity={{mode: reservation, name: '{RESERVATION}'}}",
    ],
    "experiment": ["vertex.experiment=churn"],  # in a Vertex AI experiment, its run named after the run id
    "tpu_v5e": [  # one pool, ct5lp-hightpu-4t with topology 2x2, your own image
        "resources.accelerator=tpu-v5e",
        "resources.per_host=4",
        "resources.hosts=1",
        "image=us-docker.pkg.dev/my-project/training/tf-tpu:2.21",
    ],
}


def vertex_plan(overrides: list[str]) -> Plan:
    return plan(load_spec(EXAMPLE, overrides), "vertex").with_bundle(BUNDLE).with_run("r1")


def parse_strictly(body: dict[str, Any]) -> aiplatform_v1.CustomJob:
    """What the REST API does with the body: unknown fields are errors."""
    message = aiplatform_v1.CustomJob.pb(aiplatform_v1.CustomJob())
    json_format.ParseDict(body, message, ignore_unknown_fields=False)
    return aiplatform_v1.CustomJob.wrap(message)


@pytest.mark.parametrize("case", sorted(CASES))
def test_render_matches_reviewed_golden_and_parses_strictly(case: str) -> None:
    body = vertex.provider.render(vertex_plan(CASES[case]))
    parse_strictly(body)
    golden = GOLDEN / f"{case}.json"
    if os.environ.get("CLOUDTRAIN_UPDATE_GOLDEN") == "1":
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(json.dumps(body, indent=2) + "\n")
    assert body == json.loads(golden.read_text())


def test_pools_follow_vertex_order_chief_then_workers() -> None:
    job = parse_strictly(vertex.provider.render(vertex_plan(CASES["four_hosts"])))
    pools = job.job_spec.worker_pool_specs
    assert [pool.replica_count for pool in pools] == [1, 3]
    assert pools[0].machine_spec == pools[1].machine_spec
    assert pools[0].machine_spec.accelerator_type == aiplatform_v1.AcceleratorType.NVIDIA_TESLA_A100
    assert job.job_spec.scheduling.restart_job_on_worker_restart


def test_single_host_has_one_pool_and_no_whole_job_restart() -> None:
    job = parse_strictly(vertex.provider.render(vertex_plan(CASES["one_gpu"])))
    assert len(job.job_spec.worker_pool_specs) == 1
    assert not job.job_spec.scheduling.restart_job_on_worker_restart


def test_spot_scheduling_and_timeout_are_typed_durations() -> None:
    scheduling = parse_strictly(vertex.provider.render(vertex_plan(CASES["spot"]))).job_spec.scheduling
    assert scheduling.strategy == aiplatform_v1.Scheduling.Strategy.SPOT
    assert scheduling.timeout.total_seconds() == 3600  # limits.max_runtime: 1h
    assert not scheduling.max_wait_duration  # only FLEX_START waits for capacity


def test_flex_start_waits_for_capacity_up_to_max_wait_with_one_machine_in_every_pool() -> None:
    job = parse_strictly(vertex.provider.render(vertex_plan(CASES["flex"])))
    assert job.job_spec.scheduling.strategy == aiplatform_v1.Scheduling.Strategy.FLEX_START
    assert job.job_spec.scheduling.max_wait_duration.total_seconds() == 7200
    # Flex-start needs "the same machine configuration for all worker pools" (schedule-jobs-dws, Requirements).
    chief, workers = job.job_spec.worker_pool_specs
    assert chief.machine_spec == workers.machine_spec


@pytest.mark.parametrize(
    ("max_wait", "expected"),
    [
        ("0", 0),  # 0 waits for ever (Scheduling.max_wait_duration); sent, not dropped as unset
        (None, None),  # no max_wait: Vertex's own default (24 h), so the field is left out
    ],
)
def test_flex_start_max_wait_zero_is_sent_and_none_is_left_out(
    max_wait: str | None, expected: int | None
) -> None:
    option = "" if max_wait is None else f", max_wait: {max_wait}"
    body = vertex.provider.render(vertex_plan([*A100_8, f"resources.capacity={{mode: flex{option}}}"]))
    assert body["jobSpec"]["scheduling"].get("maxWaitDuration") == (
        None if expected is None else f"{expected}s"
    )
    assert parse_strictly(body).job_spec.scheduling.strategy == aiplatform_v1.Scheduling.Strategy.FLEX_START


def test_a_reservation_is_every_pools_machine_affinity() -> None:
    pools = parse_strictly(
        vertex.provider.render(vertex_plan(CASES["reservation"]))
    ).job_spec.worker_pool_specs
    for pool in pools:
        affinity = pool.machine_spec.reservation_affinity
        assert (
            affinity.reservation_affinity_type == aiplatform_v1.ReservationAffinity.Type.SPECIFIC_RESERVATION
        )
        assert affinity.key == "compute.googleapis.com/reservation-name"
        assert list(affinity.values) == [RESERVATION]


def test_any_reservation_names_none() -> None:
    overrides = [*A100_8, "resources.capacity={mode: reservation, name: any}"]
    pool = parse_strictly(vertex.provider.render(vertex_plan(overrides))).job_spec.worker_pool_specs[0]
    assert pool.machine_spec.reservation_affinity.reservation_affinity_type == (
        aiplatform_v1.ReservationAffinity.Type.ANY_RESERVATION
    )
    assert not pool.machine_spec.reservation_affinity.values


def test_env_values_stay_literal_under_vertex_expansion() -> None:
    container = vertex.provider.render(vertex_plan(["env.GREETING=echo $(USER)"]))["jobSpec"][
        "workerPoolSpecs"
    ][0]
    env = {e["name"]: e["value"] for e in container["containerSpec"]["env"]}
    assert env["GREETING"] == "echo $$(USER)"


def test_tpu_v5e_has_topology_and_no_accelerator_type() -> None:
    machine = parse_strictly(
        vertex.provider.render(vertex_plan(CASES["tpu_v5e"]))
    ).job_spec.worker_pool_specs[0]
    assert machine.machine_spec.machine_type == "ct5lp-hightpu-4t"
    assert machine.machine_spec.tpu_topology == "2x2"
    assert machine.machine_spec.accelerator_type == aiplatform_v1.AcceleratorType.ACCELERATOR_TYPE_UNSPECIFIED


def test_container_reads_the_bundle_through_the_gcs_fuse_mount() -> None:
    container = vertex.provider.render(vertex_plan([]))["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]
    env = {item["name"]: item["value"] for item in container["env"]}
    assert env["CLOUDTRAIN_BUNDLE"] == "/gcs/my-bucket/binary-classifier/code/0123456789abcdef.tar.gz"
    assert json.loads(env["CLOUDTRAIN_CONFIG"])["bundle"] == BUNDLE


def test_render_is_deterministic_and_the_request_label_tracks_the_body() -> None:
    first, again = vertex.provider.render(vertex_plan([])), vertex.provider.render(vertex_plan([]))
    other_code = vertex.provider.render(
        vertex_plan([]).with_bundle(BUNDLE.replace("0123", "4567")).with_run("r1")
    )
    assert first == again
    assert first["labels"]["cloudtrain_request"] == vertex.request_hash(first)
    assert other_code["labels"]["cloudtrain_request"] != first["labels"]["cloudtrain_request"]


def test_render_without_a_bundle_says_how_to_pack() -> None:
    with pytest.raises(ProviderError, match=r"no code bundle URI.*pack_code"):
        vertex.provider.render(plan(load_spec(EXAMPLE), "vertex"))


def test_more_than_100_env_vars_is_a_spec_error_naming_the_count() -> None:
    overrides = [f"env.VAR_{i}=x" for i in range(99)]
    with pytest.raises(SpecError, match=r"at most 100 .* needs 101 \(99 from env, 2 set by cloudtrain\)"):
        vertex.provider.render(vertex_plan(overrides))


def labelled_plan(labels: dict[str, str]) -> Plan:
    spec = load_spec(EXAMPLE)
    spec = spec.model_copy(update={"vertex": spec.vertex.model_copy(update={"labels": labels})})
    return plan(spec, "vertex").with_bundle(BUNDLE).with_run("r1")


@pytest.mark.parametrize(
    ("raw_key", "raw_value", "key", "value"),
    [
        ("team", "ml", "team", "ml"),  # already valid
        ("Team Name", "ML", "team-name", "ml"),  # uppercase and space
        ("2024", "x", "k2024", "x"),  # keys must start with a letter
        ("cost.center", "Q3/Churn.v2", "cost-center", "q3-churn-v2"),  # no dots or slashes
        ("k" * 80, "v" * 70, "k" * 63, "v" * 63),  # at most 63 characters each
    ],
)
def test_labels_are_sanitised_to_vertex_rules(raw_key: str, raw_value: str, key: str, value: str) -> None:
    body = vertex.provider.render(labelled_plan({raw_key: raw_value}))
    assert body["labels"][key] == value
    parse_strictly(body)


def test_labels_that_collide_after_sanitising_are_refused() -> None:
    with pytest.raises(SpecError, match=r"'Team' becomes the label key 'team', which is already used"):
        vertex.provider.render(labelled_plan({"team": "a", "Team": "b"}))


def test_no_secret_from_the_environment_reaches_the_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", "/home/me/key-4f9a.json")
    monkeypatch.setenv("CLOUDSDK_AUTH_ACCESS_TOKEN", "ya29.secret-token")
    text = json.dumps(vertex.provider.render(vertex_plan(CASES["four_hosts"])))
    assert "key-4f9a" not in text
    assert "ya29" not in text


def test_render_imports_no_google_library() -> None:
    # regression guard for the import boundary: render builds plain dicts.
    code = (
        "import sys\n"
        "from cloudtrain.api import plan\n"
        "from cloudtrain.providers import vertex\n"
        "from cloudtrain.specfile import load_spec\n"
        f"vertex.provider.render(plan(load_spec({str(EXAMPLE)!r}), 'vertex').with_bundle({BUNDLE!r}).with_run('r1'))\n"
        "heavy = [m for m in sys.modules if m.startswith(('google.cloud.', 'google.auth', 'grpc', 'google.protobuf'))]\n"
        "print(heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("module", ["", ".render", ".job", ".logs", ".upload"])
def test_docstring_examples_run(module: str) -> None:
    found = importlib.import_module(f"cloudtrain.providers.vertex{module}")
    assert doctest.testmod(found, optionflags=doctest.ELLIPSIS).failed == 0
