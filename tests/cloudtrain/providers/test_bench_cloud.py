"""``cloudtrain bench`` on a cloud: the bench jobs' requests, and the budget guard before them.

A bench run is its own job: its containers get ``CLOUDTRAIN_BENCH`` from render, so its
request hash (Vertex's ``cloudtrain_request`` label, SageMaker's TrainingJobName) differs
from the training job's, and submit's idempotency can never attach one to the other.
"""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest

from cloudtrain import bench
from cloudtrain.cost import budget
from cloudtrain.errors import ProviderError
from cloudtrain.outputs import standard
from cloudtrain.planning import Plan
from cloudtrain.progress import Progress
from cloudtrain.provider import registry
from cloudtrain.providers import local, sagemaker, vertex
from cloudtrain.providers.sagemaker import outputs as sagemaker_outputs
from cloudtrain.specfile import load_spec
from cloudtrain.uris import sibling
from tests.cloudtrain.providers.fakes import sagemaker_model
from tests.cloudtrain.providers.fakes.sagemaker_aws import BUCKET, REGION
from tests.cloudtrain.test_bench import runtime_result

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "binary_classifier" / "job.yaml"
BUNDLE = "0123456789abcdef.tar.gz"
STEPS = 40


def bundled(planned: Plan) -> Plan:
    """``planned`` with a fixed bundle name, so requests are stable."""
    return planned.with_bundle(f"{planned.storage.code}/{BUNDLE}").with_run("r1")


def bench_and_training(provider: str, tmp_path: Path) -> tuple[list[Plan], Plan]:
    """The bench runs' plans of the example on ``provider`` (2 hosts: 1 replica, then 2), and its training plan."""
    spec = load_spec(EXAMPLE, ())
    target = registry.get(provider)
    runs = bench.bench_plans(spec, target, STEPS, tmp_path)
    return [bundled(run) for run in runs], bundled(target.plan(spec))


def vertex_env(request: dict[str, Any]) -> list[dict[str, str]]:
    return [pool["containerSpec"]["env"] for pool in request["jobSpec"]["workerPoolSpecs"]]


def test_every_vertex_pool_of_a_bench_run_gets_the_variable_and_a_label_of_its_own(tmp_path: Path) -> None:
    runs, training = bench_and_training("vertex", tmp_path)
    requests = [vertex.provider.render(run) for run in runs]
    assert [len(pools) for pools in map(vertex_env, requests)] == [1, 2]
    for request in requests:
        for env in vertex_env(request):
            assert {"name": "CLOUDTRAIN_BENCH", "value": str(STEPS)} in env
        assert request["labels"]["cloudtrain_request"] == vertex.request_hash(request)
    labels = {
        request["labels"]["cloudtrain_request"] for request in [*requests, vertex.provider.render(training)]
    }
    assert len(labels) == 3
    assert all(
        env["name"] != "CLOUDTRAIN_BENCH"
        for pool in vertex_env(vertex.provider.render(training))
        for env in pool
    )


def test_a_sagemaker_bench_run_has_the_variable_a_name_of_its_own_and_a_short_runtime(tmp_path: Path) -> None:
    runs, training = bench_and_training("sagemaker", tmp_path)
    requests = [sagemaker.provider.render(run) for run in runs]
    trained = sagemaker.provider.render(training)
    for request in requests:
        assert sagemaker_model.problems("CreateTrainingJob", request) == []
        assert request["Environment"]["CLOUDTRAIN_BENCH"] == str(STEPS)
        assert request["StoppingCondition"]["MaxRuntimeInSeconds"] == 30 * 60
        assert request["OutputDataConfig"]["S3OutputPath"].startswith(f"{training.storage.root}/bench/")
    assert "CLOUDTRAIN_BENCH" not in trained["Environment"]
    names = {request["TrainingJobName"] for request in [*requests, trained]}
    assert len(names) == 3


def test_local_bench_replicas_get_the_variable_through_render(tmp_path: Path) -> None:
    runs, _ = bench_and_training("local", tmp_path)
    for run in runs:
        replicas = local.render(run)["replicas"]
        assert [replica["env"]["CLOUDTRAIN_BENCH"] for replica in replicas] == [str(STEPS)] * run.replicas


def test_the_worst_case_is_both_runs_on_every_host_for_the_bench_runtime(tmp_path: Path) -> None:
    runs, _ = bench_and_training("sagemaker", tmp_path)
    each = [budget.worst_case(run) for run in runs]
    assert [case.billed_s for case in each] == [30 * 60, 30 * 60]
    assert bench.worst_cost(load_spec(EXAMPLE, ()), "sagemaker") == pytest.approx(
        sum(case.usd for case in each)
    )
    assert bench.worst_cost(load_spec(EXAMPLE, ()), "local") is None


def test_a_bench_over_the_budget_is_refused_before_anything_is_created(
    run_cli, aws: Any, tmp_path: Path
) -> None:
    first = budget.worst_case(bench_and_training("sagemaker", tmp_path)[0][0])
    result = run_cli("bench", str(EXAMPLE), "--provider", "sagemaker", "--set", "limits.max_cost_usd=0.01")
    assert result.code == 3  # submit's exit code for a job over its budget
    assert "bench: the runs can cost at most $" in result.err
    assert result.errors == [
        f"The bench run on 1 replica(s) can cost ${first.usd:.2f} (1 host(s) for all of its 30m), over "
        "limits.max_cost_usd=0.01. Raise the limit (--set limits.max_cost_usd=...) or pass --force to run anyway."
    ]
    assert aws.client("sagemaker").list_training_jobs()["TrainingJobSummaries"] == []
    assert "Contents" not in aws.client("s3").list_objects_v2(Bucket=BUCKET)


def output_archive(files: dict[str, bytes]) -> bytes:
    """``output.tar.gz`` as SageMaker uploads ``/opt/ml/output/data``: ``./name`` members."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(f"./{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_bench_on_the_sagemaker_fake_reads_each_runs_file_and_judges_them(aws: Any) -> None:
    speeds = {1: (1000.0, 1100.0), 2: (1500.0, 2000.0)}  # replicas: (pipeline, ceiling) examples/s

    def play_the_job(request: dict[str, Any]) -> None:
        """What the chief of a bench job leaves behind: its bench file in the output archive."""
        assert request["Environment"]["CLOUDTRAIN_BENCH"] == str(STEPS)
        replicas = request["ResourceConfig"]["InstanceCount"]
        pipeline, ceiling = speeds[replicas]
        bench_file = runtime_result(pipeline=pipeline, ceiling=ceiling, replicas=replicas, hosts=replicas)
        archive, _, _ = sagemaker_outputs.of_request(request, region=REGION).result.partition("#")
        bucket, _, key = archive.removeprefix("s3://").partition("/")
        body = output_archive({"cloudtrain-bench.json": json.dumps(bench_file).encode()})
        aws.client("s3").put_object(Bucket=bucket, Key=key, Body=body)

    aws.sagemaker.on_create = play_the_job
    seen: list[Progress] = []
    result = bench.bench(EXAMPLE, provider="sagemaker", steps=STEPS, progress=seen.append, poll_s=0)

    assert [(run.replicas, run.pipeline) for run in result.runs] == [(1, 1000.0), (2, 1500.0)]
    assert result.efficiency == pytest.approx(1500.0 / (2 * 1000.0))
    assert result.scaling is not None
    assert result.scaling.kind == "scales"  # 0.75: between the cost table's Ethernet and NVLink figures
    assert [job.request["ResourceConfig"]["InstanceCount"] for job in aws.sagemaker.jobs.values()] == [1, 2]
    states = [event.name for event in seen if event.name.startswith("1 replica(s): ")]
    assert states[-1] == "1 replica(s): succeeded"  # the job's state, as it waits


@pytest.mark.usefixtures("fake_gcs")
def test_bench_on_the_vertex_fake_reads_each_runs_file_and_judges_them(fake_vertex: Any) -> None:
    from google.cloud import storage

    def play_the_job(job: Any) -> None:
        """What the chief of a bench job leaves behind: its bench file in the output folder."""
        pools = job.job_spec.worker_pool_specs
        env = {variable.name: variable.value for variable in pools[0].container_spec.env}
        assert env["CLOUDTRAIN_BENCH"] == str(STEPS)
        replicas = sum(pool.replica_count for pool in pools)
        pipeline = 1000.0 if replicas == 1 else 1900.0
        bench_file = runtime_result(pipeline=pipeline, ceiling=2000.0, replicas=replicas, hosts=replicas)
        base = job.job_spec.base_output_directory.output_uri_prefix
        result = standard(base, logs="").result
        bucket, _, name = sibling(result, "cloudtrain-bench.json").removeprefix("gs://").partition("/")
        storage.Client().bucket(bucket).blob(name).upload_from_string(json.dumps(bench_file))

    fake_vertex.on_create = play_the_job
    result = bench.bench(EXAMPLE, provider="vertex", steps=STEPS, poll_s=0)

    assert [(run.replicas, run.pipeline) for run in result.runs] == [(1, 1000.0), (2, 1900.0)]
    assert result.scaling is not None
    assert result.scaling.kind == "scales well"  # 0.95
    labels = [job.labels["cloudtrain_request"] for job in fake_vertex.jobs.values()]
    assert len(set(labels)) == 2


def test_a_failed_sagemaker_bench_run_is_a_provider_error_naming_the_run(aws: Any) -> None:
    aws.sagemaker.script(
        [("InProgress", "Starting", "Launching"), ("Failed", "Failed", "AlgorithmError: out of memory")],
        failure_reason="AlgorithmError: out of memory",
    )
    with pytest.raises(ProviderError) as error:
        bench.bench(EXAMPLE, provider="sagemaker", steps=STEPS, poll_s=0)
    assert str(error.value).startswith("The bench run on 1 replica(s) failed: ")
    assert "out of memory" in str(error.value)
    assert len(aws.sagemaker.jobs) == 1  # the second run never started
