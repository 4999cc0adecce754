"""A sweep trial on the Deep Learning Container (``image: auto``), through the real SageMaker training toolkit.

Runs in the ``sagemaker-toolkit`` lane (tests/lanes/sagemaker-toolkit.txt: the toolkits at the
versions the TensorFlow 2.21 images lock); elsewhere it is skipped. The rendered
CreateHyperParameterTuningJob's training definition is what one trial gets: its static
hyperparameters plus the trial's values in ``hyperparameters.json``, its environment, its
``code`` channel, in an emulated ``/opt/ml`` (the toolkit's ``SAGEMAKER_BASE_DIR``; the runtime's
``CLOUDTRAIN_ROOT``). The container starts as SageMaker starts it, ``docker run IMAGE train``:
the image's own entrypoint (its scripts, ``dlc/``), then the toolkit's ``train`` with the image's
``SAGEMAKER_TRAINING_MODULE``, which downloads ``sagemaker_submit_directory`` from S3 (moto on
loopback) and runs ``sagemaker_program``. Two stand-ins: ``SM_STUDIO_LOCAL_MODE`` skips the
toolkit's wait for ``algo-1`` to resolve (it does on SageMaker), and this machine's Python is the
image's.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cloudtrain import api
from cloudtrain.providers.sagemaker import emulate, toolkit
from tests.cloudtrain.providers.fakes import sagemaker_model
from tests.cloudtrain.providers.fakes.sagemaker_aws import BUCKET, LoopbackAws

pytest.importorskip("sagemaker_training")
pytest.importorskip("sagemaker_tensorflow_container.training")  # the image's SAGEMAKER_TRAINING_MODULE

EXAMPLE = Path(__file__).resolve().parents[4] / "examples" / "tuning" / "job.yaml"
CPU_SWEEP = ("resources.accelerator=cpu", "training.epochs=1", f"sagemaker.storage_root=s3://{BUCKET}/tuning")
# docker/tensorflow/2.21/Dockerfile.cuda (aws/deep-learning-containers @e0ecede): ENV SAGEMAKER_TRAINING_MODULE
TRAINING_MODULE = "sagemaker_tensorflow_container.training:main"
TRIAL_JOB = "tuning-example-abc123-001-0123abcd"


def opt_ml(root: Path, definition: dict, trial: dict[str, str], bundle: Path) -> None:
    """The files SageMaker gives a trial's one host under ``root``: config, the code channel, the image's scripts."""
    config = root / "opt" / "ml" / "input" / "config"
    config.mkdir(parents=True)
    hosts = ["algo-1"]
    group = {"instance_group_name": "homogeneousCluster", "instance_type": "ml.m5.2xlarge", "hosts": hosts}
    resource = {"current_host": "algo-1", "hosts": hosts, "current_group_name": "homogeneousCluster"}
    (config / "resourceconfig.json").write_text(json.dumps({**resource, "instance_groups": [group]}))
    (config / "hyperparameters.json").write_text(json.dumps({**definition["StaticHyperParameters"], **trial}))
    channels = {
        c["ChannelName"]: {"TrainingInputMode": c["InputMode"]} for c in definition["InputDataConfig"]
    }
    (config / "inputdataconfig.json").write_text(json.dumps(channels))
    code = root / "opt" / "ml" / "input" / "data" / "code"
    code.mkdir(parents=True)
    shutil.copy(bundle, code / bundle.name)
    for relative, text in emulate.image_files().items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)


@pytest.mark.timeout(600)
def test_a_trial_on_the_deep_learning_container_runs_the_runtime_through_the_toolkit(
    aws: LoopbackAws, tmp_path: Path
) -> None:
    submission = api.prepare(api.as_spec(EXAMPLE, CPU_SWEEP), "sagemaker", run_id="r1")
    body = submission.request
    assert sagemaker_model.problems("CreateHyperParameterTuningJob", body) == []
    definition = body["TrainingJobDefinition"]
    static = definition["StaticHyperParameters"]
    assert static["sagemaker_program"] == toolkit.PROGRAM
    code_uri = static["sagemaker_submit_directory"]
    assert code_uri == definition["InputDataConfig"][0]["DataSource"]["S3DataSource"]["S3Uri"]
    aws.client("s3").upload_file(str(submission.bundle.path), BUCKET, code_uri.split(f"{BUCKET}/", 1)[1])
    # The trial's values as SageMaker writes them, strings; the TensorFlow toolkit looks for the objective's key.
    trial = {"learning_rate": "0.05", "width": "7", "_tuning_objective_metric": "val_binary_accuracy"}
    root = tmp_path / "host"
    opt_ml(root, definition, trial, submission.bundle.path)
    env = {
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), *emulate.IMAGE_PATH]),
        "HOME": str(tmp_path),
        **{name: value for name, value in os.environ.items() if name.startswith("AWS_")},
        **definition["Environment"],
        "TRAINING_JOB_NAME": TRIAL_JOB,
        "SAGEMAKER_TRAINING_MODULE": TRAINING_MODULE,
        "SAGEMAKER_BASE_DIR": str(root / "opt" / "ml"),
        "CLOUDTRAIN_ROOT": str(root),
        "S3_ENDPOINT_URL": aws.env["AWS_ENDPOINT_URL_S3"],  # the toolkit's own (files.s3_download)
        "SM_STUDIO_LOCAL_MODE": "true",
    }
    done = subprocess.run(
        ["bash", "-m", str(root / "usr" / "local" / "bin" / "entrypoint.sh"), "train"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=540,
        check=False,
    )
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-6000:]
    # the toolkit ran the bundle's program, with the trial's values as shell words it then dropped
    assert re.search(rf"\./{re.escape(toolkit.PROGRAM)} .*--width 7", log), log[-6000:]
    assert (root / "opt" / "ml" / "code" / toolkit.PROGRAM).is_file()
    assert (root / "opt" / "ml" / "output" / "success").is_file()
    # SageMaker reads the objective off the log with the rendered regex
    objective = next(
        m
        for m in definition["AlgorithmSpecification"]["MetricDefinitions"]
        if m["Name"] == "val_binary_accuracy"
    )
    found = [re.search(objective["Regex"], re.sub(r"^\[[^\]]*\] ", "", line)) for line in log.splitlines()]
    assert [float(match.group(1)) for match in found if match], log[-6000:]
    # the chief exported the model where SageMaker collects it, built with the trial's width (7 units)
    import tensorflow as tf

    [saved] = (root / "opt" / "ml" / "model").rglob("saved_model.pb")
    shapes = [shape for _, shape in tf.train.list_variables(str(saved.parent / "variables" / "variables"))]
    assert [7] in shapes and [7, 1] in shapes  # the hidden layer's 7 units, and the output fed by them
