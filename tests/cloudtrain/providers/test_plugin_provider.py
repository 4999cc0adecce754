"""A provider installed from another package appears everywhere, with no edit to cloudtrain.

``toycloud`` (tests/cloudtrain/providers/plugin/) is installed by the ``toycloud`` fixture
as a distribution with three entry points: the provider (``cloudtrain.providers``), its
spec section ``toycloud:`` with its own ``toy://`` storage scheme and catalog rows
(``cloudtrain.spec_sections``), and its environment inside the container
(``cloudtrain.runtime_environments``). Each test drives the real CLI or the real runtime.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from cloudtrain.provider import registry
from tests.conftest import Result

pytestmark = pytest.mark.usefixtures("toycloud")

RunCli = Callable[..., Result]
# Toy Cloud's jobs keep their files in its own store.
TOY = ("--provider", "toycloud", "--set", "toycloud.storage_root=toy://lake/binary-classifier")


def test_it_is_a_provider_choice_of_every_command(run_cli: RunCli, example_job: Path) -> None:
    assert "toycloud" in registry.names()
    assert "toycloud" in run_cli("submit", "--help").out
    wrong = run_cli("plan", str(example_job), "--provider", "toycloudd")
    assert wrong.code == 2
    assert "'toycloud'" in wrong.err


def test_plan_uses_its_catalog_rows_and_region(run_cli: RunCli, example_job: Path) -> None:
    result = run_cli("plan", str(example_job), *TOY, "--json")
    planned = json.loads(result.out)
    assert planned["provider"] == "toycloud"
    assert planned["region"] == "toy-east-1"
    assert planned["machine"]["machine_type"] == "toy-t4-1"  # the example asks for 1 × T4 per host
    assert planned["image"] == "registry.toy/tensorflow:2.21-gpu"
    assert planned["replicas"] == 2


def test_its_own_checks_and_limits_reach_validate(run_cli: RunCli, example_job: Path) -> None:
    result = run_cli(
        "validate",
        str(example_job),
        *TOY,
        "--set",
        "resources.hosts=5",
        "--set",
        "limits.max_runtime=3d",
    )
    assert result.code == 2
    assert result.errors == [
        "limits.max_runtime: 3d exceeds the 2-day maximum for training on Toy Cloud (limits.max_runtime). "
        "Set limits.max_runtime to 2d or less.",
        "resources.hosts: Toy Cloud runs at most 4 hosts.",
    ]


def test_render_and_dry_run_print_its_request(run_cli: RunCli, example_job: Path) -> None:
    rendered = json.loads(run_cli("render", str(example_job), *TOY).out)
    dry_run = json.loads(run_cli("submit", str(example_job), *TOY, "--dry-run").out)
    assert rendered == dry_run
    assert rendered["machine"] == "toy-t4-1"
    assert rendered["hosts"] == 2


def test_submit_then_status_finds_the_owner_from_the_id(run_cli: RunCli, example_job: Path) -> None:
    job_id = run_cli("submit", str(example_job), *TOY, "--no-wait").out.strip()
    assert job_id.startswith("toy:")
    assert run_cli("status", job_id).out.strip() == "queued (QUEUED)"
    assert run_cli("status", job_id, "--json").out.strip() == json.dumps(
        {
            "id": job_id,
            "state": "running",
            "provider_state": "RUNNING",
            "detail": "",
            "failure": None,
            "pending_since": None,  # a plugin that says nothing of why it waits: the defaults
            "pending_reason": "",
            "done": False,
            "progress": None,  # a plugin's job reads no progress record back
            "backup_kept": None,
            "lineage": None,  # submitted without --run-id: no lineage of attempts
        }
    )


def test_a_fresh_process_finds_it_through_the_entry_point(example_job: Path) -> None:
    planned = subprocess.run(
        [sys.executable, "-m", "cloudtrain", "plan", str(example_job), *TOY, "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(planned.stdout)["machine"]["machine_type"] == "toy-t4-1"


def test_cost_prices_it_beside_the_built_in_clouds(
    run_cli: RunCli, example_job: Path, tmp_path: Path
) -> None:
    args = ("cost", str(example_job), "--throughput", "1200@t4")
    options = json.loads(run_cli(*args, "--json").out)["options"]
    toy = [option for option in options if option["provider"] == "toycloud"]
    assert {option["region"] for option in toy} == {"toy-east-1"}
    assert {option["machine_type"] for option in toy} >= {"toy-t4-1"}
    assert "toycloud" in run_cli(*args).out
    plot = tmp_path / "cost.png"
    assert run_cli(*args, "--plot", str(plot)).code == 0
    assert plot.stat().st_size > 0


def test_its_section_is_a_section_of_the_spec(run_cli: RunCli, example_job: Path) -> None:
    moved = json.loads(
        run_cli("plan", str(example_job), *TOY, "--set", "toycloud.region=toy-west-2", "--json").out
    )
    assert moved["region"] == "toy-west-2"
    assert moved["sources"]["toycloud.region"] == "set"
    typo = run_cli("validate", str(example_job), *TOY, "--set", "toycloud.regoin=toy-west-2")
    assert (typo.code, typo.errors) == (2, ["toycloud.regoin: unknown field. Did you mean 'region'?"])
    wrong = run_cli("validate", str(example_job), *TOY, "--set", "toycloud.region=mars")
    assert wrong.errors == ["toycloud.region: 'mars' is not a Toy Cloud region; use one like toy-east-1."]
    schema = json.loads(run_cli("schema").out)
    assert (
        schema["properties"]["toycloud"]["description"]
        == "Toy Cloud settings; read only on --provider toycloud."
    )
    assert "region" in schema["$defs"]["ToyCloudSettings"]["properties"]


def test_its_storage_scheme_is_its_own(run_cli: RunCli, example_job: Path) -> None:
    planned = json.loads(run_cli("plan", str(example_job), *TOY, "--run-id", "r1", "--json").out)
    assert planned["storage"]["export"] == "toy://lake/binary-classifier/runs/r1/model"
    # another provider's section refuses it: only Toy Cloud reads and writes toy://
    refused = run_cli("validate", str(example_job), "--set", "vertex.storage_root=toy://lake/x")
    assert refused.errors[0].startswith("vertex.storage_root: 'toy://lake/x' uses an unsupported scheme")
    # the spec's own storage.root takes every installed provider's scheme
    assert run_cli("validate", str(example_job), *TOY, "--set", "storage.root=toy://lake/y").code == 0


def test_its_profile_keys_fill_the_section(
    run_cli: RunCli, example_job: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config" / "cloudtrain" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text(
        "profiles:\n  default:\n    toycloud:\n      region: toy-north-1\n      account: trainer\n"
    )
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    planned = json.loads(run_cli("plan", str(example_job), *TOY, "--json").out)
    assert (planned["region"], planned["sources"]["toycloud.region"]) == ("toy-north-1", "profile")
    config.write_text("profiles:\n  default:\n    toycloud:\n      zone: a\n")
    bad = run_cli("plan", str(example_job), *TOY)
    assert bad.code != 0 and f"{config}: profiles.default.toycloud.zone: unknown key." in bad.err


def test_its_runtime_environment_is_found_inside_the_container(tmp_path: Path) -> None:
    """The runtime alone, as in the container: Toy Cloud's environment, cluster and scheme, from the entry point."""
    from cloudtrain_runtime import environments, locations
    from cloudtrain_runtime.config import from_dict
    from tests.cloudtrain_runtime.harness import runtime_config

    env = {"TOYCLOUD_JOB": "42"}
    found = environments.detect(env, str(tmp_path))
    assert (found.provider, found.label) == ("toycloud", "Toy Cloud")
    raw = runtime_config(
        tmp_path,
        backup_dir="toy://lake/demo/runs/r1/checkpoints",
        tensorboard_dir="toy://lake/demo/runs/r1/logs",
        export_dir="toy://lake/demo/runs/r1/model",
    )
    where = locations.resolve(
        from_dict(raw, "the test"), found.cluster(env, str(tmp_path)), env, str(tmp_path)
    )
    assert where.export == tmp_path / "toy/lake/demo/runs/r1/model"


def test_the_local_stand_in_buckets_hold_its_scheme_too() -> None:
    from cloudtrain.provider.emulation import bucket_path

    assert bucket_path("toy://lake/demo/code/0123.tar.gz") == "<buckets>/toy/lake/demo/code/0123.tar.gz"
