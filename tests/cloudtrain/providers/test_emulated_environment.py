"""What an emulated replica gets is what the provider documents it gives, and job names are never reused.

The documented lists below come from the providers' own pages and SDKs, not from the
emulators, so an emulator that forgets a variable fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cloudtrain import api
from cloudtrain.providers import local
from cloudtrain.providers.local.emulate import take_job_name
from cloudtrain.providers.local.launcher import expand, replica_env
from cloudtrain.specfile import load_spec

# Every variable Vertex AI gives each replica of a custom job with a base output directory.
VERTEX_DOCUMENTED = [
    "CLUSTER_SPEC",  # training/distributed-training: "set on every replica"
    "AIP_MODEL_DIR",  # training/code-requirements: set with baseOutputDirectory
    "AIP_CHECKPOINT_DIR",  # same
    "AIP_TENSORBOARD_LOG_DIR",  # same
    "CLOUD_ML_JOB_ID",  # google-cloud-aiplatform training_utils/environment_variables.py
    "CLOUD_ML_PROJECT_ID",  # training/code-requirements: the project number
]
VERTEX_DISTRIBUTED = ["TF_CONFIG"]  # "does not set TF_CONFIG for single-replica training jobs"
# SageMaker: TRAINING_JOB_NAME and TRAINING_JOB_ARN in the environment, the /opt/ml/input/config files
# (your-algorithms-training-algo-running-container.html, -dist-training.html).
SAGEMAKER_DOCUMENTED = ["TRAINING_JOB_NAME", "TRAINING_JOB_ARN"]
SAGEMAKER_FILES = [
    "resourceconfig.json",
    "hyperparameters.json",
    "inputdataconfig.json",
    "checkpointconfig.json",
]


def _request(example_job: Path, emulate: str, hosts: int) -> dict:
    spec = load_spec(example_job, [f"resources.hosts={hosts}", "resources.spot=true"])
    return api.prepare(spec, local.Local(emulate=emulate), run_id="r1").request


@pytest.mark.parametrize("hosts", [1, 3])
def test_every_emulated_vertex_replica_gets_every_documented_variable(example_job: Path, hosts: int) -> None:
    request = _request(example_job, "vertex", hosts)
    expected = VERTEX_DOCUMENTED + (VERTEX_DISTRIBUTED if hosts > 1 else [])
    for replica in request["replicas"]:
        env = replica_env(request, replica["name"])
        assert [name for name in expected if name not in env] == []
        assert ("TF_CONFIG" in env) == (hosts > 1)
        assert env["AIP_MODEL_DIR"].endswith("/runs/r1/model/")
        assert env["CLOUD_ML_JOB_ID"] == "<job>"  # one ID for the job, taken at submit
        assert re.fullmatch(r"[0-9]{12}", env["CLOUD_ML_PROJECT_ID"])  # a number, as on Vertex


def test_every_emulated_sagemaker_host_gets_every_documented_variable_and_file(example_job: Path) -> None:
    request = _request(example_job, "sagemaker", 2)
    for replica in request["replicas"]:
        host = expand(request["cluster"], replica)
        env = replica_env(request, replica["name"])
        assert [name for name in SAGEMAKER_DOCUMENTED if name not in env] == []
        assert env["TRAINING_JOB_ARN"].endswith(":training-job/<job>")
        config = [path.rsplit("/", 1)[1] for path in host["files"] if path.startswith("opt/ml/input/config/")]
        assert sorted(config) == sorted(SAGEMAKER_FILES)


def test_an_emulated_sagemaker_job_name_is_never_given_twice(example_job: Path, tmp_path: Path) -> None:
    """A resubmit of the same request after a failure is the next attempt name, as SageMaker's own."""
    request = _request(example_job, "sagemaker", 1)
    names = [take_job_name(request, tmp_path) for _ in range(3)]
    assert names == [request["job"], f"{request['job']}-r2", f"{request['job']}-r3"]


def test_an_emulated_vertex_job_gets_a_new_numeric_id_each_time(example_job: Path, tmp_path: Path) -> None:
    request = _request(example_job, "vertex", 1)
    ids = [take_job_name(request, tmp_path) for _ in range(2)]
    assert len(set(ids)) == 2 and all(re.fullmatch(r"[1-9][0-9]{18}", job) for job in ids)
