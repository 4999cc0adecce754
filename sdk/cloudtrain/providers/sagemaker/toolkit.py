"""A sweep trial on a Deep Learning Container: the SageMaker training toolkit's contract.

A tuning job's training definition has no ``ContainerEntrypoint``
(``HyperParameterAlgorithmSpecification``: TrainingImage, TrainingInputMode, AlgorithmName,
MetricDefinitions; botocore's sagemaker model), so with ``image: auto`` a trial starts as
the image starts: ``docker run IMAGE train``. On the TensorFlow Deep Learning Containers
``train`` is the SageMaker training toolkit (``sagemaker-training``; the image sets
``SAGEMAKER_TRAINING_MODULE=sagemaker_tensorflow_container.training:main``, aws/deep-learning-containers
@e0ecede ``docker/tensorflow/2.21/Dockerfile.cuda``), which runs the user's code as its
hyperparameters say (aws/sagemaker-training-toolkit @3383937, ``src/sagemaker_training``):

- ``sagemaker_submit_directory`` (``params.SUBMIT_DIR_PARAM``): a ``.tar.gz`` on S3, downloaded
  with boto3 in ``sagemaker_region`` and unpacked into ``/opt/ml/code`` (``files.download_and_extract``):
  here the code bundle, at the URI of the job's ``code`` channel;
- ``sagemaker_program`` (``params.USER_PROGRAM_PARAM``): the file it runs there. A name ending
  in ``.sh`` is a command (``_entry_point_type.get``), run without installing the project
  (a ``setup.py``) or its ``requirements.txt`` (``entry_point.install``):
  ``cloudtrain_runtime/providers/sagemaker_trial.sh`` of the bundle's runtime, which sources the
  image's CUDA set-up (``CLOUDTRAIN_IMAGE_SETUP``) and starts the runtime;
- ``sagemaker_region`` and ``sagemaker_container_log_level`` (``params.REGION_NAME_PARAM``,
  ``LOG_LEVEL_PARAM``), as the SageMaker Python SDK sets them (20: INFO).

Every other hyperparameter becomes an argument of that command: the toolkit joins
``./PROGRAM --name value ...`` into one shell line (``process.run_async``:
``create_subprocess_shell(" ".join(cmd))``, the TensorFlow toolkit running it with
``capture_error=True``). The runtime's JSON configuration cannot travel so, and goes in the
definition's ``Environment`` instead, as ``CLOUDTRAIN_CONFIG_0``, ``_1``, ... of at most 512
characters (``cloudtrain_runtime.config.join_pieces``); the trials' own values (numbers, and
categorical values of shell-safe characters only, ``check_values``) stay hyperparameters,
which the runtime reads from ``hyperparameters.json``.

Example:
>>> shell_word("relu"), shell_word("a b")
(True, False)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from cloudtrain import catalog, container
from cloudtrain.errors import SpecError
from cloudtrain.provider.transfer import bundle_uri
from cloudtrain.providers.sagemaker.render import image_kind
from cloudtrain_runtime.config import CONFIG_ENV

if TYPE_CHECKING:
    from cloudtrain.planning import Plan
    from cloudtrain.spec import Tuning

# Where the bundle's runtime ships the trial's command (``bundle.RUNTIME_PREFIX``).
PROGRAM = ".cloudtrain-runtime/cloudtrain_runtime/providers/sagemaker_trial.sh"
IMAGE_SETUP_ENV = "CLOUDTRAIN_IMAGE_SETUP"
# The SageMaker Python SDK's default container log level (logging.INFO).
LOG_LEVEL = "20"
# Environment values are at most 512 characters (botocore: HyperParameterTrainingJobEnvironmentValue).
ENVIRONMENT_VALUE_MAX = 512
# What a shell takes as one plain word: no quoting, expansion, globbing or redirection.
SHELL_WORD = re.compile(r"[A-Za-z0-9_.,:=+@%/-]+")


def hyperparameters(plan: Plan) -> dict[str, str]:
    """The toolkit's own hyperparameters: where the code is, what to run, the region, the log level."""
    return {
        "sagemaker_container_log_level": LOG_LEVEL,
        "sagemaker_program": PROGRAM,
        "sagemaker_region": plan.region,
        "sagemaker_submit_directory": bundle_uri(plan, scheme="s3://"),
    }


def environment(plan: Plan) -> dict[str, str]:
    """The runtime configuration in pieces, and the image's CUDA set-up to source (where it has one)."""
    found = container.split_config(
        container.runtime_config_json(plan), size=ENVIRONMENT_VALUE_MAX, prefix=CONFIG_ENV
    )
    startup = catalog.image_startup(plan.provider, image_kind(plan))
    if startup is not None and startup.setup:
        found[IMAGE_SETUP_ENV] = startup.setup
    return found


def check_values(tuning: Tuning) -> None:
    """Every categorical value is one plain shell word, as the toolkit's command line needs.

    Raises:
        SpecError: naming the parameter and the characters allowed.
    """
    for name, parameter in tuning.parameters.items():
        if parameter.type != "categorical":
            continue
        bad = next((str(v) for v in parameter.values or [] if not shell_word(str(v))), None)
        if bad is not None:
            raise SpecError(
                f"tuning.parameters.{name}: {bad[:40]!r} cannot reach a trial on SageMaker with image: auto: "
                "the training toolkit passes each value to a shell unquoted, so values may hold letters, "
                "digits and _ . , : = + @ % / - only. Rename the value, or use your own image (containers/)."
            )


def shell_word(text: str) -> bool:
    """Whether ``text`` reaches a command unchanged as one word of an unquoted shell line."""
    return bool(SHELL_WORD.fullmatch(text))


def definition(plan: Plan, job: dict[str, Any]) -> dict[str, Any]:
    """The definition's hyperparameters and environment for a trial the toolkit starts."""
    tuning = plan.spec.tuning
    assert tuning is not None  # only a sweep has trials
    check_values(tuning)
    return {
        "StaticHyperParameters": hyperparameters(plan),
        "Environment": {**job["Environment"], **environment(plan)},
    }
