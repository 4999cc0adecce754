"""The SageMaker pipeline example, built by the real sagemaker SDK against loopback AWS.

The example's definition JSON is written as a user would (``python FILE --out PATH``,
in-process), its code bundle uploaded to moto's S3; the training step's arguments are
compared with ``cloudtrain render --provider sagemaker`` field by field. The SDK runs in
the ``pipelines-sagemaker`` lane (tests/lanes/pipelines-sagemaker.txt); without it these
tests skip.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from cloudtrain.errors import ProviderError
from cloudtrain.pipelines.sagemaker import SDK_FORMS, differences
from tests.cloudtrain.providers.fakes.sagemaker_aws import LoopbackAws
from tests.conftest import REPO, Result

pytest.importorskip("sagemaker")

pytestmark = [
    # The SDK's own notices about itself: v2 is "on path of deprecation" (v3 is a rewrite).
    pytest.mark.filterwarnings("ignore:.*is part of the SageMaker Python SDK v2"),
    # ... and that the example's ``model.register`` under a PipelineSession builds, not runs.
    pytest.mark.filterwarnings("ignore:Running within a PipelineSession:UserWarning"),
]

EXAMPLE = REPO / "examples" / "pipelines" / "sagemaker_pipeline.py"
# Every optional field cloudtrain renders, on top of the bundled example's.
EVERY_FIELD = {
    "resources": {"spot": True},
    "data": {"train": "s3://my-bucket/data/train/"},
    "sagemaker": {
        "max_retries": 2,
        "subnets": ["subnet-0123456789abcdef0"],
        "security_groups": ["sg-0123456789abcdef0"],
        "tags": {"team": "search"},
        "input_mode": "FastFile",
    },
}


@pytest.fixture(scope="module")
def loopback() -> Iterator[LoopbackAws]:
    with LoopbackAws() as services:
        yield services


@pytest.fixture
def aws(loopback: LoopbackAws, monkeypatch: pytest.MonkeyPatch) -> LoopbackAws:
    """Empty loopback S3 and SageMaker, and a user's AWS environment pointing at them."""
    loopback.reset()
    loopback.install(monkeypatch)
    return loopback


@pytest.fixture(scope="module")
def example() -> ModuleType:
    """examples/pipelines/sagemaker_pipeline.py, imported from its file as a user runs it."""
    found = importlib.util.spec_from_file_location("sagemaker_pipeline", EXAMPLE)
    assert found is not None and found.loader is not None
    module = importlib.util.module_from_spec(found)
    found.loader.exec_module(module)
    return module


def every_field_job(tmp_path: Path) -> Path:
    """The binary classifier with spot, retries, a VPC, tags and a data channel."""
    project = tmp_path / "binary_classifier"
    shutil.copytree(
        REPO / "examples" / "binary_classifier", project, ignore=shutil.ignore_patterns("outputs")
    )
    job = yaml.safe_load((project / "job.yaml").read_text())
    for section, values in EVERY_FIELD.items():
        job[section] = {**job.get(section, {}), **values}
    (project / "job.yaml").write_text(yaml.safe_dump(job))
    return project / "job.yaml"


def definition_of(example: ModuleType, job: Path, tmp_path: Path) -> dict[str, Any]:
    out = tmp_path / "definition.json"
    example.main(["--out", str(out), "--spec", str(job)])
    definition: dict[str, Any] = json.loads(out.read_text())
    return definition


def step(definition: dict[str, Any], kind: str) -> dict[str, Any]:
    [found] = [step for step in definition["Steps"] if step["Type"] == kind]
    return found


@pytest.mark.parametrize("variant", ["example", "every-field"])
def test_training_step_arguments_equal_the_render_field_by_field(
    variant: str,
    aws: LoopbackAws,
    example: ModuleType,
    run_cli: Callable[..., Result],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    job = (
        REPO / "examples" / "binary_classifier" / "job.yaml"
        if variant == "example"
        else every_field_job(tmp_path)
    )
    arguments = step(definition_of(example, job, tmp_path), "Training")["Arguments"]
    capsys.readouterr()  # the example's own output, before render's
    render = run_cli("render", str(job), "--provider", "sagemaker")
    assert render.code == 0, render.err
    rendered = json.loads(render.out)

    for field in sorted(rendered.keys() - {"TrainingJobName"} - SDK_FORMS.keys()):
        assert arguments.get(field) == rendered[field], f"{field} differs from cloudtrain render"
    extra = arguments.keys() - rendered.keys() - SDK_FORMS.keys()
    assert not extra, f"the step adds fields cloudtrain does not render: {sorted(extra)}"
    for field, form in SDK_FORMS.items():
        pair = (rendered.get(field), arguments.get(field))
        assert pair[0] == pair[1] or pair == form, f"{field}: render and step {pair}, SDK form {form}"


def test_every_field_variant_reaches_the_optional_fields(
    aws: LoopbackAws, example: ModuleType, tmp_path: Path
) -> None:
    """The variant above really carries spot + MaxWait, retries, VPC, tags and a second channel."""
    arguments = step(definition_of(example, every_field_job(tmp_path), tmp_path), "Training")["Arguments"]

    assert arguments["EnableManagedSpotTraining"] is True
    assert arguments["StoppingCondition"] == {"MaxRuntimeInSeconds": 3600, "MaxWaitTimeInSeconds": 7200}
    assert arguments["RetryStrategy"] == {"MaximumRetryAttempts": 2}
    assert arguments["VpcConfig"]["Subnets"] == ["subnet-0123456789abcdef0"]
    assert {"Key": "team", "Value": "search"} in arguments["Tags"]
    assert [channel["ChannelName"] for channel in arguments["InputDataConfig"]] == ["code", "train"]


def test_the_code_bundle_is_uploaded_where_the_code_channel_reads(
    aws: LoopbackAws, example: ModuleType, tmp_path: Path
) -> None:
    arguments = step(
        definition_of(example, REPO / "examples/binary_classifier/job.yaml", tmp_path), "Training"
    )
    uri = arguments["Arguments"]["InputDataConfig"][0]["DataSource"]["S3DataSource"]["S3Uri"]
    bucket, key = uri.removeprefix("s3://").split("/", 1)

    assert aws.client("s3").head_object(Bucket=bucket, Key=key)["ContentLength"] > 0


def test_the_model_artifact_is_registered_by_the_next_step(
    aws: LoopbackAws, example: ModuleType, tmp_path: Path
) -> None:
    definition = definition_of(example, REPO / "examples/binary_classifier/job.yaml", tmp_path)
    train, register = step(definition, "Training"), step(definition, "RegisterModel")

    [container] = register["Arguments"]["InferenceSpecification"]["Containers"]
    assert container["ModelDataUrl"] == {"Get": f"Steps.{train['Name']}.ModelArtifacts.S3ModelArtifacts"}


def test_differences_name_each_field_the_sdk_would_change() -> None:
    arguments = {"RoleArn": "arn:a", "ProfilerConfig": {"DisableProfiler": False}}
    request = {"TrainingJobName": "job-0123456789", "RoleArn": "arn:b", "EnableManagedSpotTraining": False}

    assert differences(arguments, request) == [
        "ProfilerConfig: the step has {'DisableProfiler': False}, cloudtrain renders nothing",
        "RoleArn: the step has 'arn:a', cloudtrain renders 'arn:b'",
    ]


def test_a_field_the_sdk_drops_fails_loudly(aws: LoopbackAws, monkeypatch: pytest.MonkeyPatch) -> None:
    """regression guard: a render field with no Estimator argument must not vanish from the step."""
    from cloudtrain.pipelines import sagemaker as module

    sagemaker_render = importlib.import_module("cloudtrain.providers.sagemaker.render")

    original = sagemaker_render.delivery
    monkeypatch.setattr(
        sagemaker_render, "delivery", lambda plan: {**original(plan), "EnableNetworkIsolation": True}
    )
    session = module.pipeline_session("us-east-1", telemetry=False)

    with pytest.raises(ProviderError) as refused:
        module.training_step(REPO / "examples/binary_classifier/job.yaml", session=session)
    assert "EnableNetworkIsolation: the step has nothing, cloudtrain renders True" in str(refused.value)


def test_cloudtrain_help_imports_no_sagemaker() -> None:
    """Only pipeline files import the SDK: no CLI start-up path loads it."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "cloudtrain", "--help"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert " sagemaker" not in done.stderr


def test_example_help_runs() -> None:
    done = subprocess.run([sys.executable, str(EXAMPLE), "--help"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "--out" in done.stdout
