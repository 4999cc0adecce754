"""Where a Vertex AI custom job's artifacts are: under ``baseOutputDirectory``, as AIP_*_DIR say.

Vertex derives ``AIP_MODEL_DIR`` (``<base>/model/``), ``AIP_CHECKPOINT_DIR``
(``<base>/checkpoints/``) and ``AIP_TENSORBOARD_LOG_DIR`` (``<base>/logs/``) from the
job's ``baseOutputDirectory.outputUriPrefix`` (CustomJobSpec.base_output_directory in
google-cloud-aiplatform 2.7.0, google/cloud/aiplatform_v1/types/custom_job.py; "Prepare
training code", https://cloud.google.com/vertex-ai/docs/training/code-requirements),
and the runtime writes to exactly those folders through the ``/gcs`` mount, so the
artifacts are wherever the request's base directory says: the run's own prefix,
``ROOT/runs/<run_id>`` (``render``). The container's output goes
to Cloud Logging under the job's numeric ID (``resource.labels.job_id``).

Example:
>>> outputs = of_request({"jobSpec": {"baseOutputDirectory": {"outputUriPrefix": "gs://b/run"}}},
...                      project="p", job="123")
>>> outputs.model, outputs.backup, outputs.result
('gs://b/run/model', 'gs://b/run/checkpoints', 'gs://b/run/cloudtrain-result.json')
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from cloudtrain.outputs import JOB, Outputs, standard
from cloudtrain.providers.vertex.settings import VertexSettings

if TYPE_CHECKING:
    from cloudtrain.planning import Plan

LOGS_URL = "https://console.cloud.google.com/logs/query;query={query}?project={project}"


def of_plan(plan: Plan, request: dict[str, Any] | None = None) -> Outputs:
    """The outputs of the job ``render(plan)`` (or ``request``) creates; ``{job}``: its numeric ID."""
    project = VertexSettings.of(plan.spec).project or ""  # the checks refuse a plan without one
    if request is not None:
        return of_request(request, project=project, job=JOB)
    return standard(plan.storage.run, logs=logs_url(project, JOB))


def of_request(request: dict[str, Any], *, project: str, job: str) -> Outputs:
    """The outputs of the custom job ``request`` (a CustomJob as JSON), numbered ``job``."""
    base = request["jobSpec"]["baseOutputDirectory"]["outputUriPrefix"]
    return standard(base, logs=logs_url(project, job))


def logs_url(project: str, job: str) -> str:
    """The Cloud Logging page with the job's entries (``resource.labels.job_id``).

    Braces stay unescaped so the ``{job}`` placeholder survives until the ID is known.
    """
    query = quote(f'resource.labels.job_id="{job}"', safe="{}")
    return LOGS_URL.format(query=query, project=project)
