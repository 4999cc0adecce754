"""``compare`` of cloud runs: read back through each provider's own reader, priced from what was billed.

SageMaker jobs on the loopback SageMaker with moto's S3: each job's chief "leaves" its
history and result in ``output.tar.gz``, as SageMaker uploads ``/opt/ml/output/data``;
compare attaches to the job by its ARN, reads both out of the archive (streamed, never
extracted) and prices it from DescribeTrainingJob's BillableTimeInSeconds (``cost.actual``).
A URI of an archive is read the same way without a job.
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path
from typing import Any

import pytest

from cloudtrain import api
from cloudtrain.cost.actual import actual_cost
from cloudtrain.errors import SpecError
from cloudtrain.provider.base import Usage
from cloudtrain.providers.sagemaker import outputs as sagemaker_outputs
from cloudtrain.scaling import analysis, compare
from cloudtrain.specfile import load_spec
from tests.cloudtrain.providers.fakes.sagemaker_aws import BUCKET, REGION
from tests.cloudtrain.scaling.test_compare import write_run

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "binary_classifier" / "job.yaml"


def archive(folder: Path) -> bytes:
    """``output.tar.gz`` of a run folder: ``./name`` members, as SageMaker packs them."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path in sorted(folder.iterdir()):
            tar.add(path, arcname=f"./{path.name}")
    return buffer.getvalue()


def test_two_sagemaker_jobs_compare_at_what_sagemaker_billed(aws: Any, tmp_path: Path) -> None:
    runs = {
        1: write_run(tmp_path / "one", replicas=1, hosts=1, epoch_s=10.0, accuracy=[0.8, 0.9, 0.95]),
        2: write_run(tmp_path / "two", replicas=2, hosts=2, epoch_s=6.0, accuracy=[0.8, 0.9, 0.95]),
    }

    def play_the_job(request: dict[str, Any]) -> None:
        folder = runs[request["ResourceConfig"]["InstanceCount"]]
        key = sagemaker_outputs.of_request(request, region=REGION).history.partition("#")[0]
        aws.client("s3").put_object(
            Bucket=BUCKET, Key=key.removeprefix(f"s3://{BUCKET}/"), Body=archive(folder)
        )

    aws.sagemaker.on_create = play_the_job
    spec = load_spec(EXAMPLE, ())
    jobs = [
        api.submit(load_spec(EXAMPLE, (f"resources.hosts={hosts}",)), "sagemaker", force=True)
        for hosts in (1, 2)
    ]
    for job, billed in zip(jobs, (40, 30), strict=True):
        assert job.wait(poll_s=0).state == "succeeded"
        aws.sagemaker.jobs[job.id.rpartition("/")[2]].billable_s = billed  # the fake keys jobs by name

    found = compare(*(job.id for job in jobs), settings=spec)

    assert [run.replicas for run in found.runs] == [1, 2]
    machine = api.plan(spec, "sagemaker").machine
    assert machine is not None
    usage = Usage(REGION, machine.machine_type, "t4", hosts=2, seconds=30, spot=False, measure="")
    expected = actual_cost("sagemaker", usage)
    assert expected.usd is not None
    assert found.runs[1].cost.usd_per_hour == pytest.approx(expected.usd / 30 * 3600)
    assert found.runs[1].cost.source.startswith("billed: ")
    assert "(2 × 30 s billed, BillableTimeInSeconds" in found.runs[1].cost.source, found.runs[1].cost.source
    (verdict,) = found.verdicts
    assert verdict.time_ratio == pytest.approx(18 / 30)
    assert verdict.kind in (analysis.PAID, analysis.PAID_IN_TIME)


def test_an_archive_uri_is_read_without_a_job(aws: Any, tmp_path: Path) -> None:
    keys = []
    for name, replicas in (("one", 1), ("two", 2)):
        folder = write_run(tmp_path / name, replicas=replicas, hosts=replicas, epoch_s=10.0, accuracy=[0.9])
        key = f"run/{name}/output/output.tar.gz"
        aws.client("s3").put_object(Bucket=BUCKET, Key=key, Body=archive(folder))
        keys.append(f"s3://{BUCKET}/{key}")

    found = compare(*keys, settings=load_spec(EXAMPLE, ()))

    assert [run.label for run in found.runs] == keys
    assert found.runs[1].cost.source.startswith("catalog: 2 × sagemaker ")  # priced where it was read


def test_reading_s3_without_sagemaker_settings_says_which_are_missing(aws: Any) -> None:
    settings = load_spec(EXAMPLE, ("sagemaker.role=null",))
    with pytest.raises(SpecError) as error:
        compare(f"s3://{BUCKET}/a/output.tar.gz", f"s3://{BUCKET}/b/output.tar.gz", settings=settings)
    assert (
        error.value.problems[0]
        == "Reading sagemaker outputs needs its settings in your profile or environment:"
    )
    assert any("sagemaker.role" in problem for problem in error.value.problems[1:])


def test_run_ids_on_sagemaker_read_each_runs_history_from_its_kept_backup(aws: Any, tmp_path: Path) -> None:
    spec = load_spec(EXAMPLE, ())
    planned = api.plan(spec, "sagemaker")
    for run_id, replicas in (("week-1", 1), ("week-2", 2)):
        folder = write_run(tmp_path / run_id, replicas=replicas, hosts=replicas, epoch_s=10.0, accuracy=[0.9])
        backup = planned.with_run(
            run_id
        ).outputs.backup  # SageMaker keeps it: the export is durable only at the end
        key = f"{backup.removeprefix(f's3://{BUCKET}/')}/cloudtrain-history.json"
        aws.client("s3").put_object(
            Bucket=BUCKET, Key=key, Body=(folder / "cloudtrain-history.json").read_bytes()
        )

    found = compare("week-1", "week-2", spec=spec, provider="sagemaker", settings=spec, clients=aws.clients())

    # the result's place depends on the job's name: the shape is the plan's where the history agrees
    assert [(run.label, run.replicas, run.hosts, run.accelerator) for run in found.runs] == [
        ("week-1", 1, 1, "unknown"),  # ran on 1 replica, not the plan's 2: the history alone
        ("week-2", 2, 2, "t4"),
    ]
    assert found.runs[1].cost.source.startswith("catalog: 2 × sagemaker ")
