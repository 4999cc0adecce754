"""``cloudtrain validate``, ``plan``, ``schema`` and ``--version`` through the real entry point."""

from __future__ import annotations

import json

import pytest


def test_validate_reports_the_resolved_shape(run_cli, example_job) -> None:
    result = run_cli("validate", str(example_job), "--provider", "vertex")
    assert result.code == 0
    assert result.out.strip() == (
        f"{example_job} is valid for vertex: 2 × n1-standard-8, 2 replicas, global batch 32, strategy multi-worker"
    )


def test_validate_with_override(run_cli, example_job) -> None:
    result = run_cli(
        "validate", str(example_job), "-p", "sagemaker", "--set", "resources.per_host=4", "--json"
    )
    assert result.code == 0
    assert json.loads(result.out) == {
        "valid": True,
        "provider": "sagemaker",
        "summary": "2 × ml.g4dn.12xlarge, 8 replicas, global batch 128, strategy multi-worker",
        "warnings": [],
    }


def test_plan_json_for_both_clouds(run_cli, example_job) -> None:
    for provider, machine in (("vertex", "n1-standard-8"), ("sagemaker", "ml.g4dn.xlarge")):
        result = run_cli("plan", str(example_job), "--provider", provider, "--json")
        assert result.code == 0, result.err
        data = json.loads(result.out)
        assert data["provider"] == provider
        assert data["machine"]["machine_type"] == machine
        assert (data["replicas"], data["global_batch"], data["strategy"]) == (2, 32, "multi-worker")
        assert data["storage"]["backup"].endswith("/binary-classifier/runs/{run}/checkpoints")
        assert data["run_id"] is None


def test_plan_json_for_two_run_ids_names_two_homes_for_every_artifact(run_cli, example_job) -> None:
    """Each run's model, backups and TensorBoard logs have their own URIs, on every provider."""
    for provider in ("local", "vertex", "sagemaker"):
        planned = [
            json.loads(run_cli("plan", str(example_job), "-p", provider, "--run-id", run, "--json").out)
            for run in ("2026-12-03", "2026-12-10")
        ]
        for artifact in ("model", "backup", "tensorboard", "result"):
            first, second = (p["outputs"][artifact] for p in planned)
            assert "/runs/2026-12-03/" in first and first.replace("2026-12-03", "2026-12-10") == second
        assert [p["run_id"] for p in planned] == ["2026-12-03", "2026-12-10"]
        assert planned[0]["storage"]["latest"] == planned[1]["storage"]["latest"]


def test_plan_table_is_readable(run_cli, example_job) -> None:
    result = run_cli("plan", str(example_job), "--provider", "vertex")
    table, outputs = result.out.split("outputs\n")
    rows = dict(
        line.split(None, 1)
        for line in table.splitlines()
        if not line.startswith(("global", "learning", "max ", "mixed"))
    )
    assert rows["provider"].strip() == "vertex"
    assert rows["machine"].startswith("n1-standard-8 (8 vCPU, 30 GB, 1 × t4")
    assert rows["strategy"].startswith("multi-worker: 2 hosts: MultiWorkerMirroredStrategy")
    assert "global batch     32 (16 per replica)" in result.out
    assert dict(line.split() for line in outputs.splitlines())["backup"] == (
        "gs://my-bucket/binary-classifier/runs/{run}/checkpoints"
    )
    assert rows["run"].startswith("{run} (named at submit")


def test_missing_file_is_a_clean_error(run_cli, tmp_path) -> None:
    result = run_cli("validate", str(tmp_path / "nope.yaml"))
    assert result.code == 2
    assert result.errors == [
        f"{tmp_path / 'nope.yaml'}: no such file. Pass the path of a job spec, e.g. job.yaml."
    ]


def test_schema_describes_every_section(run_cli) -> None:
    result = run_cli("schema")
    schema = json.loads(result.out)
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) == {"name", "code"}
    assert {"resources", "training", "storage", "limits", "vertex", "sagemaker"} <= set(schema["properties"])


def test_version(run_cli) -> None:
    result = run_cli("--version")
    assert result.code == 0
    assert result.out.startswith("cloudtrain, version ")


def test_usage_errors_exit_2(run_cli, example_job) -> None:
    result = run_cli("plan", str(example_job), "--provider", "azure")
    assert result.code == 2
    assert "Invalid value for '--provider'" in result.err


@pytest.mark.parametrize(
    ("provider", "overrides", "error"),
    [
        # 101 user variables: Vertex accepts at most 100 per container (checked at render)
        (
            "vertex",
            [f"env.V{i}=x" for i in range(101)],
            "env: Vertex AI accepts at most 100 environment variables",
        ),
        # a 600-character value: SageMaker caps Environment values at 512
        (
            "sagemaker",
            ["env.LONG=" + "x" * 600],
            "env.LONG: the value has 600 characters; SageMaker allows at most 512",
        ),
    ],
)
def test_validate_checks_the_request_limits_submit_would_hit(
    run_cli, example_job, provider: str, overrides: list[str], error: str
) -> None:
    args = [arg for override in overrides for arg in ("--set", override)]
    result = run_cli("validate", str(example_job), "--provider", provider, *args)
    assert result.code == 2
    assert len(result.errors) == 1
    assert result.errors[0].startswith(error)


def test_plan_on_local_says_how_many_processes_start(run_cli, example_job) -> None:
    # regression: "hosts 2" while 4 processes started, one per device, unsaid
    result = run_cli("plan", str(example_job), "--set", "resources.per_host=2")
    rows = {
        line.split("  ")[0]: line.split("  ", 1)[1].strip()
        for line in result.out.splitlines()
        if "  " in line
    }
    assert rows["hosts"] == "2"
    assert rows["processes"].startswith("4, one CPU device each: TensorFlow's MultiWorkerMirroredStrategy")
    plain = run_cli("plan", str(example_job)).out
    assert "processes        2 (one per host, 1 CPU device each)" in plain
