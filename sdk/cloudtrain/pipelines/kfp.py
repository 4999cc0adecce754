"""cloudtrain as a Vertex AI Pipelines (KFP v2) step: the job runs as a CustomJob, no pipeline VM waits.

``training_job`` stages the spec for Vertex (``cloudtrain.stage``: plan, pack and upload
the code once, render the CustomJob) and returns Google Cloud Pipeline Components'
``CustomTrainingJobOp`` task built from that request, so the job the pipeline creates is
the one ``cloudtrain submit --provider vertex`` would create. The op's launcher creates the
CustomJob and waits for it from the pipeline's own service, not from a VM running user
code ("Custom job", https://cloud.google.com/vertex-ai/docs/pipelines/customjob-component).

Every field of the rendered request goes to an argument of the op; a field the op has no
argument for raises ``ProviderError`` naming it rather than being dropped. The op's
``labels`` carry cloudtrain's own (job name, request hash, run id).

The model: an ``importer`` of the export folder (``outputs.model``) as a
``google.UnmanagedContainerModel`` with the serving container, run after the training task,
is what ``ModelUploadOp(unmanaged_container_model=...)`` takes.

Example:
>>> from kfp import dsl  # doctest: +SKIP
>>> @dsl.pipeline(name="train")  # doctest: +SKIP
... def pipeline() -> None:
...     train = training_job("job.yaml", serving_image=SERVING_IMAGE)
...     ModelUploadOp(display_name="model", unmanaged_container_model=train.model)
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, NamedTuple

from cloudtrain import api
from cloudtrain.errors import ProviderError, require

if TYPE_CHECKING:
    from cloudtrain.spec import JobSpec

PROVIDER = "vertex"
# Vertex AI's prebuilt TensorFlow serving container for CPU, the newest in google-cloud-aiplatform's
# own table (google/cloud/aiplatform/constants/prediction.py, TF2_CONTAINER_URIS;
# https://cloud.google.com/vertex-ai/docs/predictions/pre-built-containers).
SERVING_IMAGE = "us-docker.pkg.dev/vertex-ai/prediction/tf2-cpu.2-15:latest"
# CustomJob fields -> CustomTrainingJobOp arguments, by where they sit in the request.
TOP = {"displayName": "display_name", "labels": "labels"}
JOB_SPEC = {
    "workerPoolSpecs": "worker_pool_specs",
    "serviceAccount": "service_account",
    "tensorboard": "tensorboard",
    "enableWebAccess": "enable_web_access",
    "network": "network",
    "reservedIpRanges": "reserved_ip_ranges",
    "persistentResourceId": "persistent_resource_id",
}
SCHEDULING = {
    "timeout": "timeout",
    "restartJobOnWorkerRestart": "restart_job_on_worker_restart",
    "strategy": "strategy",
    "maxWaitDuration": "max_wait_duration",
}


class TrainingJob(NamedTuple):
    """The pipeline tasks of one cloudtrain job: ``task`` trains, ``model`` is the exported model artifact."""

    task: Any
    model: Any


def training_job(
    spec: JobSpec | str | os.PathLike[str],
    *,
    serving_image: str = SERVING_IMAGE,
    run_id: str | None = None,
) -> TrainingJob:
    """Stage ``spec`` for Vertex and add its CustomJob, and its model, to the pipeline being defined.

    Call it inside a ``@dsl.pipeline`` function. The code bundle is uploaded now, when
    the pipeline is compiled, to the spec's storage root (content-hashed: once).

    Args:
        spec: a JobSpec, or the path of a job.yaml.
        serving_image: the container that serves the SavedModel, for ``ModelUploadOp``.
        run_id: the run this is; see ``cloudtrain.stage``.

    Raises:
        ProviderError: the request has a field the op cannot pass on.
        MissingDependencyError: kfp or google-cloud-pipeline-components is missing.
    """
    require("kfp", "kfp")
    require("google_cloud_pipeline_components", "kfp")
    from google_cloud_pipeline_components.types import artifact_types  # type: ignore[import-not-found]
    from google_cloud_pipeline_components.v1.custom_job import CustomTrainingJobOp  # type: ignore[import-not-found]
    from kfp import dsl  # type: ignore[import-not-found]

    staged = api.stage(spec, PROVIDER, run_id=run_id)
    vertex = staged.plan.spec.vertex
    task = CustomTrainingJobOp(project=vertex.project, location=vertex.region, **op_arguments(staged.request))
    model = dsl.importer(
        artifact_uri=staged.outputs.model,
        artifact_class=artifact_types.UnmanagedContainerModel,
        metadata={"containerSpec": {"imageUri": serving_image}},
    ).after(task)
    return TrainingJob(task, model.output)


def op_arguments(request: dict[str, Any]) -> dict[str, Any]:
    """``CustomTrainingJobOp`` arguments carrying every field of the rendered CustomJob ``request``.

    Raises:
        ProviderError: a field has no argument of the op to go to.

    Example:
    >>> op_arguments({"displayName": "d", "jobSpec": {"workerPoolSpecs": [], "scheduling": {"timeout": "60s"}}})
    {'display_name': 'd', 'worker_pool_specs': [], 'timeout': '60s'}
    """
    job_spec = dict(request.get("jobSpec", {}))
    scheduling = job_spec.pop("scheduling", {})
    output = job_spec.pop("baseOutputDirectory", None)
    encryption = request.get("encryptionSpec")
    arguments = {
        **_mapped(request, TOP, "", skip=("jobSpec", "encryptionSpec")),
        **_mapped(job_spec, JOB_SPEC, "jobSpec."),
        **_mapped(scheduling, SCHEDULING, "jobSpec.scheduling."),
    }
    if output is not None:
        arguments["base_output_directory"] = output["outputUriPrefix"]
    if encryption is not None:
        arguments["encryption_spec_key_name"] = encryption["kmsKeyName"]
    return arguments


def _mapped(
    fields: dict[str, Any], names: dict[str, str], where: str, skip: tuple[str, ...] = ()
) -> dict[str, Any]:
    """``fields`` under the op's argument names; a field without one is an error, not a silent drop."""
    unknown = sorted(set(fields) - set(names) - set(skip))
    if unknown:
        raise ProviderError(
            f"{', '.join(where + name for name in unknown)}: google-cloud-pipeline-components' "
            "CustomTrainingJobOp has no argument for this CustomJob field, so the pipeline's job would "
            "differ from cloudtrain's. Leave it out of the spec, or submit with cloudtrain.submit."
        )
    return {names[name]: value for name, value in fields.items() if name in names}
