"""The Kubernetes provider object: its facts, and its methods, each calling one room of the package.

Example:
>>> provider.name, provider.schemes
('kubernetes', ('gs://', 's3://'))
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from cloudtrain.provider.cloud import CloudProvider
from cloudtrain.providers.kubernetes import discover, kubeconfig, nodes
from cloudtrain.providers.kubernetes.settings import KubernetesSettings

if TYPE_CHECKING:
    from cloudtrain.bundle import Bundle
    from cloudtrain.catalog import Machine
    from cloudtrain.outputs import Outputs
    from cloudtrain.planning import Plan
    from cloudtrain.progress import OnProgress
    from cloudtrain.provider.base import Discovered, Job, JobSummary, Provider
    from cloudtrain.provider.quotas import QuotaNeed, QuotaReading
    from cloudtrain.sources import Sources
    from cloudtrain.spec import JobSpec
    from cloudtrain_runtime.diagnosis import Check


class Kubernetes(CloudProvider):
    """A Kubernetes cluster with the JobSet controller (GKE, EKS or any other)."""

    name = "kubernetes"
    section = KubernetesSettings
    # A Job's activeDeadlineSeconds (limits.max_runtime) has no upper bound of the API's own.
    max_runtime_s = None
    max_runtime_field = ""
    unsupported: Mapping[str, str] = MappingProxyType({})
    catalog_dir = KubernetesSettings.catalog_dir
    color = "#326ce5"

    def region(self, spec: JobSpec) -> str:
        """The nodes' cloud region (``kubernetes.region``), for prices; empty when not given."""
        return KubernetesSettings.of(spec).region or ""

    def machine(self, spec: JobSpec) -> Machine:
        return nodes.machine(spec)

    def unpriced(self, spec: JobSpec) -> str | None:
        return nodes.unpriced(spec)

    def check(self, spec: JobSpec) -> list[str]:
        from cloudtrain.providers.kubernetes import checks

        return checks.problems(spec)

    def render(self, plan: Plan) -> dict[str, Any]:
        from cloudtrain.providers.kubernetes import render

        return render.render(plan)

    def outputs(self, plan: Plan, request: dict[str, Any] | None = None) -> Outputs:
        from cloudtrain.providers.kubernetes import outputs

        return outputs.of_plan(plan, request)

    # The rooms that talk to the cluster and the storage are imported on first use, so the
    # spec commands never load them.
    def upload(
        self, plan: Plan, bundle: Bundle, *, clients: Any = None, progress: OnProgress | None = None
    ) -> None:
        from cloudtrain.providers.kubernetes import upload

        upload.upload_bundle(plan, bundle, progress)

    def submit(
        self,
        plan: Plan,
        request: dict[str, Any],
        bundle: Bundle,
        *,
        clients: Any = None,
        progress: OnProgress | None = None,
    ) -> Job:
        from cloudtrain.providers.kubernetes import job

        self.upload(plan, bundle, progress=progress)
        return job.submit(request, clients or _clients(KubernetesSettings.of(plan.spec)))

    def attach(self, job_id: str, *, clients: Any = None) -> Job:
        from cloudtrain.providers.kubernetes import job

        return job.attach(job_id, clients)

    def owns(self, job_id: str) -> bool:
        from cloudtrain.providers.kubernetes import job

        return job.owns(job_id)

    def quota_needs(self, plan: Plan) -> list[QuotaNeed]:
        from cloudtrain.providers.kubernetes import quotas

        return quotas.plan_needs(plan)

    def read_quotas(self, plan: Plan, needs: list[QuotaNeed], *, clients: Any = None) -> list[QuotaReading]:
        from cloudtrain.providers.kubernetes import quotas

        return quotas.read(plan, needs, clients or _clients(KubernetesSettings.of(plan.spec)))

    def discover_target_settings(self, environ: Mapping[str, str]) -> dict[str, Discovered]:
        """The kubeconfig's context and namespace, read only for a job sent to Kubernetes."""
        return discover.discover(environ)

    def check_setup(self, spec: JobSpec, sources: Sources) -> list[Check]:
        from cloudtrain.providers.kubernetes import setup_checks

        return setup_checks.check_setup(_clients(KubernetesSettings.of(spec)))

    def emulate(self, plan: Plan, request: dict[str, Any]) -> dict[str, Any]:
        from cloudtrain.providers.kubernetes import emulate

        return emulate.replicas(request)

    def job_names(self, first: str) -> Iterator[str]:
        from cloudtrain.providers.kubernetes import emulate

        return emulate.job_names(first)

    def configured(self, settings: JobSpec) -> str | None:
        """Whether a cluster is known here: a kubeconfig file, or a pod's service account."""
        environ = os.environ
        if any(path.exists() for path in kubeconfig.kubeconfig_files(environ)):
            return None
        if environ.get("KUBERNETES_SERVICE_HOST"):
            return None
        return "no kubeconfig ($KUBECONFIG or ~/.kube/config) and not in a pod"

    def list_jobs(self, settings: JobSpec, *, limit: int | None, clients: Any = None) -> list[JobSummary]:
        """cloudtrain's JobSets in the settings' namespace (labelled ``cloudtrain/job``)."""
        from cloudtrain.providers.kubernetes import job

        return job.list_jobs(clients or _clients(KubernetesSettings.of(settings)), limit=limit)

    def jobs_of_run(self, run_id: str, settings: JobSpec, *, clients: Any = None) -> list[JobSummary]:
        """The JobSets annotated ``cloudtrain/run`` = ``run_id`` in the settings' namespace (``job``)."""
        from cloudtrain.providers.kubernetes import job

        return job.jobs_of_run(clients or _clients(KubernetesSettings.of(settings)), run_id)


def _clients(settings: KubernetesSettings) -> Any:
    from cloudtrain.providers.kubernetes.clients import KubernetesClients

    return KubernetesClients(context=settings.context, namespace=settings.namespace)


provider: Provider = Kubernetes()
