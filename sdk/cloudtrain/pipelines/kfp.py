"""cloudtrain as a Vertex AI Pipelines (KFP v2) step: the job runs as a CustomJob, no pipeline VM waits.

``training_job`` stages the spec for Vertex (``cloudtrain.stage``: plan, pack and upload
the code once, render the CustomJob) and returns Google Cloud Pipeline Components'
``CustomTrainingJobOp`` task built from that request, so the job the pipeline creates is
the one ``cloudtrain submit --provider vertex`` would create. The op's launcher creates the
CustomJob and waits for it from the pipeline's own service, not from a VM running user
code ("Custom job", https://cloud.google.com/vertex-ai/docs/pipelines/customjob-component).

Every field of the rendered request goes to an argument of the op; a field the op has no
argument for raises ``ProviderError`` naming it rather than being dropped. The op's
``labels`` carry cloudtrain's own (job name, request hash, run id). The op's launcher
builds the CustomJob with proto-plus from a dict, which knows fields only by their proto
names (``worker_pool_specs[].container_spec``), not by the JSON names ``render`` prints
(``workerPoolSpecs[].containerSpec``): the arguments carry the proto names
(google-cloud-pipeline-components 2.22.0,
``container/v1/gcp_launcher/job_remote_runner.py``, ``JobRemoteRunner.create_job``).

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
import re
from typing import TYPE_CHECKING, Any, NamedTuple

from cloudtrain import api
from cloudtrain.errors import ProviderError, require

if TYPE_CHECKING:
    from google.protobuf.descriptor import Descriptor

    from cloudtrain.spec import JobSpec

PROVIDER = "vertex"
# Vertex AI's prebuilt TensorFlow serving container for CPU, the newest in google-cloud-aiplatform's
# own table (google/cloud/aiplatform/constants/prediction.py, TF2_CONTAINER_URIS;
# https://cloud.google.com/vertex-ai/docs/predictions/pre-built-containers).
SERVING_IMAGE = "us-docker.pkg.dev/vertex-ai/prediction/tf2-cpu.2-15:latest"
# CustomTrainingJobOp's arguments are named as the CustomJob fields they fill, by where the
# field sits in the request (google_cloud_pipeline_components/v1/custom_job/component.py).
TOP = ("display_name", "labels")
JOB_SPEC = (
    "worker_pool_specs",
    "service_account",
    "tensorboard",
    "enable_web_access",
    "network",
    "reserved_ip_ranges",
    "persistent_resource_id",
    "psc_interface_config",
)
SCHEDULING = ("timeout", "restart_job_on_worker_restart", "strategy", "max_wait_duration")
# The op's defaults that would add a field the render leaves out (component.py: timeout
# 604800s, strategy STANDARD, max_wait_duration 86400s). The launcher drops empty values
# before it builds the request (container/v1/gcp_launcher/utils/json_util.py,
# recursive_remove_empty), so an empty argument leaves the field unset, as rendered.
UNSET = {"timeout": "", "strategy": "", "max_wait_duration": ""}


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

    Values are in the proto's field names, as the op's launcher parses them; the op's
    defaults for fields the request leaves out are emptied (``UNSET``), so the launcher
    sends exactly the request.

    Raises:
        ProviderError: a field has no argument of the op to go to.

    Example:
    >>> pool = {"replicaCount": 1, "containerSpec": {"imageUri": "i", "env": [{"name": "A", "value": "1"}]}}
    >>> arguments = op_arguments({"displayName": "d", "jobSpec": {"workerPoolSpecs": [pool]}})
    >>> arguments["worker_pool_specs"]
    [{'replica_count': 1, 'container_spec': {'image_uri': 'i', 'env': [{'name': 'A', 'value': '1'}]}}]
    >>> arguments["strategy"], arguments["display_name"]
    ('', 'd')
    """
    from google.cloud import aiplatform_v1

    job = _proto_field_names(request, aiplatform_v1.CustomJob.pb().DESCRIPTOR)
    job_spec = dict(job.get("job_spec", {}))
    scheduling = job_spec.pop("scheduling", {})
    output = job_spec.pop("base_output_directory", None)
    encryption = job.get("encryption_spec")
    arguments = {
        **UNSET,
        **_mapped(job, TOP, "", skip=("job_spec", "encryption_spec")),
        **_mapped(job_spec, JOB_SPEC, "jobSpec."),
        **_mapped(scheduling, SCHEDULING, "jobSpec.scheduling."),
    }
    if output is not None:
        arguments["base_output_directory"] = output["output_uri_prefix"]
    if encryption is not None:
        arguments["encryption_spec_key_name"] = encryption["kms_key_name"]
    return arguments


def _proto_field_names(message: dict[str, Any], descriptor: Descriptor) -> dict[str, Any]:
    """``message``, in the proto's JSON form, with every field under its proto name; values unchanged.

    The names come from the message's own descriptor, as ``json_format`` maps them; map
    keys (``labels``) and well-known types with a JSON form of their own (``Duration``'s
    ``"3600s"``) are values, left as they are.

    Raises:
        ProviderError: a key is no field of the message.

    Example:
    >>> from google.cloud import aiplatform_v1
    >>> _proto_field_names({"imageUri": "i"}, aiplatform_v1.ContainerSpec.pb().DESCRIPTOR)
    {'image_uri': 'i'}
    """
    fields = {**descriptor.fields_by_name, **{field.json_name: field for field in descriptor.fields}}
    named: dict[str, Any] = {}
    for key, value in message.items():
        field = fields.get(key)
        if field is None:
            raise ProviderError(
                f"{key}: {descriptor.full_name} has no such field, so Vertex AI would reject the request. "
                "The render is wrong: report it with the spec."
            )
        named[field.name] = _value_names(value, field.message_type)
    return named


def _value_names(value: Any, descriptor: Descriptor | None) -> Any:
    """A field's ``value`` with proto names inside: a message, or a list of them; anything else as it is."""
    if (
        descriptor is None
        or descriptor.GetOptions().map_entry
        or descriptor.file.package == "google.protobuf"
    ):
        return value
    if isinstance(value, list):
        return [_proto_field_names(item, descriptor) for item in value]
    return _proto_field_names(value, descriptor)


def _mapped(
    fields: dict[str, Any], names: tuple[str, ...], where: str, skip: tuple[str, ...] = ()
) -> dict[str, Any]:
    """The ``fields`` that are arguments of the op; a field without one is an error, not a silent drop.

    The error names the field as ``render`` prints it: ``where`` and the JSON name.
    """
    unknown = sorted(set(fields) - set(names) - set(skip))
    if unknown:
        raise ProviderError(
            f"{', '.join(where + _json_name(name) for name in unknown)}: google-cloud-pipeline-components' "
            "CustomTrainingJobOp has no argument for this CustomJob field, so the pipeline's job would "
            "differ from cloudtrain's. Leave it out of the spec, or submit with cloudtrain.submit."
        )
    return {name: value for name, value in fields.items() if name in names}


def _json_name(name: str) -> str:
    """A proto field's JSON name, as protobuf makes it: each ``_x`` becomes ``X``.

    Example:
    >>> _json_name("restart_job_on_worker_restart")
    'restartJobOnWorkerRestart'
    """
    return re.sub(r"_([a-z0-9])", lambda match: match.group(1).upper(), name)
