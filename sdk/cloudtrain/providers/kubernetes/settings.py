"""The ``kubernetes:`` section of a job spec: which cluster, which namespace, which nodes.

Every field has the default a newcomer would pick on a cluster that has the JobSet
controller installed: the kubeconfig's current context and its namespace, nodes found
by the accelerator's resource alone, three gang restarts. The section is validated the
way the built-in providers' sections are (unknown keys are errors, values are checked
against the shape the Kubernetes API accepts), so a typo fails at ``validate``, not in
the API server.

Until provider-owned spec sections exist, ``JobSpec`` has no ``kubernetes`` field; the
render reads this model through ``cloudtrain.providers.kubernetes.render.settings_of``.

Example:
>>> settings = KubernetesSettings(namespace="training", queue="team-a")
>>> settings.namespace, settings.max_restarts, settings.gpu_resource
('training', 3, 'nvidia.com/gpu')
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

# RFC 1123 label (namespaces, service accounts, Kueue queues are all at least this strict):
# https://kubernetes.io/docs/concepts/overview/working-with-objects/names/#dns-label-names
DNS_LABEL = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
# RFC 1123 subdomain (Secret names): https://kubernetes.io/docs/concepts/overview/working-with-objects/names/
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$"
# A label key: an optional DNS-subdomain prefix and '/', then a name of up to 63 characters
# (https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#syntax-and-character-set).
LABEL_KEY = r"^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
LABEL_VALUE = r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$"
# An extended resource name such as nvidia.com/gpu or google.com/tpu.
RESOURCE_NAME = r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/[a-z0-9]([-a-z0-9_.]{0,61}[a-z0-9])?$"
# JobSet's own bound: failurePolicy.maxRestarts is an int32 (jobset_types.go, FailurePolicy).
MAX_RESTARTS = 2**31 - 1

DnsLabel = Annotated[str, StringConstraints(pattern=DNS_LABEL)]
LabelKey = Annotated[str, StringConstraints(pattern=LABEL_KEY)]
LabelValue = Annotated[str, StringConstraints(pattern=LABEL_VALUE)]


class _Section(BaseModel):
    # As the spec's own sections: unknown keys are errors, inputs never echo into an error.
    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)


class Toleration(_Section):
    """A pod toleration (core/v1 Toleration), for nodes tainted for training or for GPUs."""

    key: LabelKey | None = Field(
        None, description="The taint key; none with operator Exists matches every taint."
    )
    operator: Literal["Equal", "Exists"] = Field(
        "Equal", description="Equal: key and value match; Exists: key matches."
    )
    value: LabelValue | None = Field(None, description="The taint value, with operator Equal.")
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = Field(
        None, description="The taint effect to tolerate; none tolerates every effect."
    )

    def to_manifest(self) -> dict[str, str]:
        """The toleration as the pod spec carries it, without the fields left unset."""
        return {key: value for key, value in self.model_dump().items() if value is not None}


class KubernetesSettings(_Section):
    """Kubernetes settings; only read when the provider is kubernetes."""

    context: str | None = Field(
        None,
        description="The kubeconfig context to use; default: the current context, or the cluster "
        "this runs in (in-cluster service account).",
        examples=["gke_my-project_us-central1_training"],
    )
    namespace: DnsLabel | None = Field(
        None,
        description="The namespace of the JobSet; default: the context's namespace, else 'default'.",
        examples=["training"],
    )
    storage_root: str | None = Field(
        None,
        description="gs:// root used on Kubernetes instead of storage.root, mounted in every pod by "
        "the Cloud Storage FUSE CSI driver (GKE).",
        examples=["gs://bucket/churn"],
    )
    service_account: DnsLabel | None = Field(
        None,
        description="The Kubernetes ServiceAccount the pods run as; it must be allowed to read and "
        "write the storage root (Workload Identity Federation for GKE).",
        examples=["trainer"],
    )
    node_type: str | None = Field(
        None,
        description="The machine type of the nodes (node.kubernetes.io/instance-type), e.g. a GCE or "
        "EC2 type; selects those nodes and prices the job from the catalog.",
        examples=["a2-highgpu-1g", "g5.xlarge"],
    )
    node_selector: dict[LabelKey, LabelValue] = Field(
        default_factory=dict,
        description="Extra node labels every pod requires.",
        examples=[{"cloud.google.com/gke-nodepool": "a100-pool"}],
    )
    tolerations: list[Toleration] = Field(
        default_factory=list,
        description="Taints the pods tolerate (GPU or training node pools are often tainted).",
        examples=[[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]],
    )
    gpu_resource: Annotated[str, StringConstraints(pattern=RESOURCE_NAME)] = Field(
        "nvidia.com/gpu",
        description="The extended resource a GPU is requested as (the NVIDIA device plugin's name).",
        examples=["nvidia.com/gpu"],
    )
    queue: DnsLabel | None = Field(
        None,
        description="The Kueue LocalQueue to submit to (label kueue.x-k8s.io/queue-name); none: no Kueue.",
        examples=["team-a"],
    )
    image_pull_secrets: list[Annotated[str, StringConstraints(pattern=DNS_SUBDOMAIN)]] = Field(
        default_factory=list,
        description="Secrets in the namespace that hold the registry credentials for the image.",
        examples=[["registry-credentials"]],
    )
    max_restarts: int = Field(
        3,
        ge=0,
        le=MAX_RESTARTS,
        description="How many times JobSet recreates all the pods after one fails "
        "(failurePolicy.maxRestarts); training resumes from the last backup.",
        examples=[3],
    )
    labels: dict[LabelKey, LabelValue] = Field(
        default_factory=dict, description="Labels on the JobSet.", examples=[{"team": "search"}]
    )
