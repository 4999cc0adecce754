"""render(plan) for SageMaker: golden requests, botocore's service model, limits, the container command."""

from __future__ import annotations

import doctest
import importlib
import json
import os
from pathlib import Path

import pytest

from cloudtrain import container
from cloudtrain.api import plan
from cloudtrain.errors import ProviderError, SpecError
from cloudtrain.planning import Plan
from cloudtrain.providers import sagemaker
from cloudtrain.providers.sagemaker.render import stopping_condition
from cloudtrain.specfile import load_spec
from cloudtrain_runtime.config import join_pieces
from tests.cloudtrain.providers.fakes import sagemaker_model

ROOT = Path(__file__).resolve().parents[4]
EXAMPLE = ROOT / "examples" / "binary_classifier" / "job.yaml"
GOLDEN = ROOT / "tests" / "golden" / "sagemaker"
BUNDLE = "0123456789abcdef.tar.gz"
PLAN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/p4d-week"
MLFLOW = "arn:aws:sagemaker:us-east-1:123456789012:mlflow-tracking-server/team"

SHAPES = {
    "1host-1gpu": ["resources.hosts=1"],  # ml.g4dn.xlarge, one-device
    "1host-8gpu": ["resources.accelerator=a100-40gb", "resources.per_host=8", "resources.hosts=1"],  # p4d
    "4hosts-8gpu": ["resources.accelerator=a100-40gb", "resources.per_host=8", "resources.hosts=4"],
    "spot": ["resources.spot=true"],  # the example's 2 × T4 on spot capacity
    "plan": [  # 2 × p4d on a training plan's reserved capacity, kept warm 10 minutes after
        "resources.accelerator=a100-40gb",
        "resources.per_host=8",
        f"resources.capacity={{mode: plan, arn: '{PLAN}'}}",
        "sagemaker.keep_alive=10m",
    ],
    "mlflow": [  # tracked on SageMaker managed MLflow: MlflowConfig, the run id as the MLflow run's name
        f"tracking={{uri: '{MLFLOW}', experiment: churn, tags: {{team: growth}}}}",
    ],
    "shapes": [  # ml.g5.12xlarge, else ml.g6.12xlarge: InstancePreferences, each 2 hosts of 4 GPUs
        "resources.accelerator=a10g",
        "resources.per_host=4",
        "resources.capacity={shapes: [ml.g6.12xlarge]}",
    ],
}


def planned(*overrides: str) -> Plan:
    """The example planned for SageMaker, with a fixed bundle name so requests are stable."""
    p = plan(load_spec(EXAMPLE, overrides), "sagemaker")
    return p.with_bundle(f"{p.storage.code}/{BUNDLE}").with_run("r1")


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_request_matches_golden_file(shape: str) -> None:
    request = sagemaker.provider.render(planned(*SHAPES[shape]))
    golden = GOLDEN / f"binary_classifier-{shape}.json"
    if os.environ.get("CLOUDTRAIN_UPDATE_GOLDEN") == "1":
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(json.dumps(request, indent=2) + "\n")
    assert request == json.loads(golden.read_text())


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_request_passes_botocore_service_model(shape: str) -> None:
    assert (
        sagemaker_model.problems("CreateTrainingJob", sagemaker.provider.render(planned(*SHAPES[shape])))
        == []
    )


def test_only_a_managed_mlflow_arn_renders_mlflow_config() -> None:
    tracked = sagemaker.provider.render(planned(*SHAPES["mlflow"]))
    assert tracked["MlflowConfig"] == {
        "MlflowResourceArn": MLFLOW,
        "MlflowExperimentName": "churn",
        "MlflowRunName": "r1",
    }
    server = sagemaker.provider.render(planned("tracking={uri: 'http://10.0.0.5:5000'}"))
    assert "MlflowConfig" not in server
    assert json.loads(join_pieces(server["HyperParameters"]))["tracking_uri"] == "http://10.0.0.5:5000"


def test_checker_catches_what_botocore_skips() -> None:
    # regression guard for the checker itself: botocore alone accepts a 64-character name.
    request = sagemaker.provider.render(planned())
    request["TrainingJobName"] = "x" * 64
    request["ResourceConfig"]["InstanceType"] = "ml.nonexistent"
    found = sagemaker_model.problems("CreateTrainingJob", request)
    assert any("TrainingJobName" in p for p in found)
    assert any("InstanceType" in p for p in found)


def test_render_is_deterministic_and_the_name_follows_the_content() -> None:
    first, again = sagemaker.provider.render(planned()), sagemaker.provider.render(planned())
    other = sagemaker.provider.render(planned("training.epochs=4"))
    assert first == again
    assert first["TrainingJobName"] != other["TrainingJobName"]
    assert first["TrainingJobName"].startswith("binary-classifier-")


def test_long_job_name_is_cut_to_63_characters() -> None:
    name = "a" + "-b" * 31  # 63 characters, the spec's maximum
    request = sagemaker.provider.render(planned(f"name={name}"))
    assert len(request["TrainingJobName"]) == 63
    assert sagemaker_model.problems("CreateTrainingJob", request) == []


def test_request_fields_come_from_the_plan() -> None:
    p = planned("resources.spot=true", "sagemaker.max_retries=2", "resources.disk_gb=200")
    request = sagemaker.provider.render(p)
    assert request["ResourceConfig"] == {
        "InstanceType": "ml.g4dn.xlarge",
        "InstanceCount": 2,
        "VolumeSizeInGB": 200,
    }
    assert request["StoppingCondition"] == {"MaxRuntimeInSeconds": 3600, "MaxWaitTimeInSeconds": 7200}
    assert request["RetryStrategy"] == {"MaximumRetryAttempts": 2}
    assert request["CheckpointConfig"]["S3Uri"].endswith("/checkpoints/")
    pieces = request["HyperParameters"]
    assert all(len(value) <= 256 for value in pieces.values())  # the documented per-value limit
    assert json.loads(join_pieces(pieces)) == json.loads(
        container.runtime_config_json(p)
    )  # as the runtime reads it
    assert request["Environment"][container.BUNDLE_ENV] == f"/opt/ml/input/data/code/{BUNDLE}"
    assert request["InputDataConfig"][0]["DataSource"]["S3DataSource"]["S3Uri"] == p.bundle


@pytest.mark.parametrize(
    ("runtime", "spot", "expected"),
    [
        (3600, False, {"MaxRuntimeInSeconds": 3600}),  # on demand: no wait time
        (3600, True, {"MaxRuntimeInSeconds": 3600, "MaxWaitTimeInSeconds": 7200}),  # twice the runtime
        (20 * 86400, True, {"MaxRuntimeInSeconds": 20 * 86400, "MaxWaitTimeInSeconds": 28 * 86400}),  # capped
        (
            28 * 86400,
            True,
            {"MaxRuntimeInSeconds": 28 * 86400, "MaxWaitTimeInSeconds": 28 * 86400},
        ),  # = runtime
    ],
)
def test_stopping_condition(runtime: int, spot: bool, expected: dict[str, int]) -> None:
    assert stopping_condition(runtime, spot=spot) == expected


def test_data_channels_and_vpc_and_tags() -> None:
    request = sagemaker.provider.render(
        planned(
            "data.train=s3://my-bucket/train/",
            "data.eval=s3://my-bucket/eval/",
            "sagemaker.input_mode=FastFile",
            "sagemaker.subnets=[subnet-0abc]",
            "sagemaker.security_groups=[sg-0abc]",
            "sagemaker.tags={team: ml}",
        )
    )
    channels = [(c["ChannelName"], c["InputMode"]) for c in request["InputDataConfig"]]
    assert channels == [("code", "File"), ("eval", "FastFile"), ("train", "FastFile")]
    assert request["VpcConfig"] == {"SecurityGroupIds": ["sg-0abc"], "Subnets": ["subnet-0abc"]}
    assert request["Tags"] == [
        {"Key": "cloudtrain:job", "Value": "binary-classifier"},
        {"Key": "cloudtrain:run", "Value": "r1"},
        {"Key": "team", "Value": "ml"},
    ]
    assert sagemaker_model.problems("CreateTrainingJob", request) == []


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["sagemaker.subnets=[subnet-0abc]"], "sagemaker.subnets and sagemaker.security_groups go together"),
        (
            ["env={BIG: " + "x" * 600 + "}"],
            "env.BIG: the value has 600 characters; SageMaker allows at most 512",
        ),
        (
            ["code.args=[" + ",".join(["a" * 100] * 300) + "]"],
            "SageMaker allows at most 100. Shorten code.args",
        ),
        (["sagemaker.tags={'aws:x': y}"], "'aws:x' uses the reserved prefix 'aws:'"),
        (["sagemaker.tags={" + ",".join(f"t{i}: v" for i in range(49)) + "}"], "51 tags"),
    ],
)
def test_limits_raise_spec_errors_naming_the_field(overrides: list[str], message: str) -> None:
    with pytest.raises(SpecError) as caught:
        sagemaker.provider.render(planned(*overrides))
    assert message in str(caught.value)


def test_environment_values_are_not_echoed_in_errors() -> None:
    with pytest.raises(SpecError) as caught:
        sagemaker.provider.render(planned("env={BIG: " + "private" * 100 + "}"))
    assert "private" not in str(caught.value)


def test_render_needs_a_packed_s3_bundle() -> None:
    unpacked = plan(load_spec(EXAMPLE), "sagemaker")
    with pytest.raises(ProviderError, match=r"Pack the code first: cloudtrain.api.pack_code\(plan\)"):
        sagemaker.provider.render(unpacked)


def test_own_image_runs_its_entrypoint() -> None:
    request = sagemaker.provider.render(
        planned("image=123456789012.dkr.ecr.us-east-1.amazonaws.com/trainer:1")
    )
    assert "ContainerEntrypoint" not in request["AlgorithmSpecification"]
    assert request["AlgorithmSpecification"]["TrainingImage"].endswith("/trainer:1")


@pytest.mark.parametrize("module", ["", ".render", ".job", ".logs", ".upload"])
def test_docstring_examples_run(module: str) -> None:
    found = importlib.import_module(f"cloudtrain.providers.sagemaker{module}")
    assert doctest.testmod(found, optionflags=doctest.ELLIPSIS).failed == 0
