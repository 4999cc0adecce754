"""Where a Kubernetes job's artifacts are: under the run's prefix of the storage root, as the runtime writes them.

Every pod opens the storage root at the same place (``storage``: ``gs://`` mounted by
GKE's Cloud Storage FUSE CSI driver, ``s3://`` copied in and synced back out), and the
runtime writes the export, backups, TensorBoard logs and result files under the run's
prefix, ``ROOT/runs/<run_id>`` (``cloudtrain.planning.storage_paths``), so they are where
the plan says. The containers' output stays with the pods: ``kubectl logs`` reads it
until the JobSet is deleted (``{job}`` is the JobSet's name).

Example:
>>> logs_command(None, "training", "demo-0123456789")
'kubectl -n training logs -l jobset.sigs.k8s.io/jobset-name=demo-0123456789 -c trainer --prefix --tail=-1'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cloudtrain.outputs import JOB, Outputs, standard
from cloudtrain.providers.kubernetes.render import CONTAINER, JOBSET_NAME_KEY
from cloudtrain.providers.kubernetes.settings import KubernetesSettings

if TYPE_CHECKING:
    from cloudtrain.planning import Plan


def of_plan(plan: Plan, request: dict[str, Any] | None = None) -> Outputs:
    """The outputs of the JobSet ``render(plan)`` (or ``request``) creates; ``{job}``: its name."""
    settings = KubernetesSettings.of(plan.spec)
    outputs = standard(plan.storage.run, logs=logs_command(settings.context, settings.namespace, JOB))
    return outputs.for_job(request["metadata"]["name"]) if request is not None else outputs


def logs_command(context: str | None, namespace: str | None, job: str) -> str:
    """The ``kubectl logs`` command that prints every pod's log of the JobSet ``job``."""
    where = (f" --context {context}" if context else "") + (f" -n {namespace}" if namespace else "")
    return f"kubectl{where} logs -l {JOBSET_NAME_KEY}={job} -c {CONTAINER} --prefix --tail=-1"
