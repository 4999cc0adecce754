"""The ``kubernetes:`` section of a job spec: which cluster, which namespace, which nodes.

Every field has the default a newcomer would pick on a cluster that has the JobSet
controller installed: the kubeconfig's current context and its namespace, nodes found
by the accelerator's resource alone, three gang restarts. Values are checked against
the shapes the Kubernetes API accepts (the names are RFC 1123 labels and subdomains,
https://kubernetes.io/docs/concepts/overview/working-with-objects/names/; label keys
and values, https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#syntax-and-character-set),
so a typo fails at ``validate``, not in the API server. This module imports nothing
of the provider's own, so building the spec does not load the provider.

Example:
>>> settings = KubernetesSettings(namespace="training", queue="team-a")
>>> settings.namespace, settings.max_restarts, settings.gpu_resource
('training', 3, 'nvidia.com/gpu')
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from cloudtrain.sections import Section, StoredSection, Whole, shaped

DNS_LABEL = r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?"
DNS_SUBDOMAIN = r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?"
# A label key: an optional DNS-subdomain prefix and '/', then a name of up to 63 characters.
LABEL_KEY = r"([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
LABEL_VALUE = r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?"
# An extended resource name such as nvidia.com/gpu (a domain, '/', a name).
RESOURCE_NAME = r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/[a-z0-9]([-a-z0-9_.]{0,61}[a-z0-9])?"
# A GCE machine type (n1-standard-8, a2-highgpu-1g) or an EC2 instance type (g5.xlarge, p4d.24xlarge).
NODE_TYPE = r"[a-z][a-z0-9]*([-.][a-z0-9]+)+"
# A cloud region, GCP's (us-central1) or AWS's (us-east-1).
REGION = r"[a-z]{2,}(-[a-z]+)+-?\d+"
# JobSet's own bound: failurePolicy.maxRestarts is an int32 (api/jobset/v1alpha2/jobset_types.go, FailurePolicy).
MAX_RESTARTS = 2**31 - 1

DnsLabel = Annotated[
    str, shaped("dns_label", DNS_LABEL, "is not a Kubernetes name; use lowercase letters, digits and '-'")
]
LabelKey = Annotated[
    str, shaped("label_key", LABEL_KEY, "is not a label key; use a name like team or example.com/team")
]
LabelValue = Annotated[
    str,
    shaped("label_value", LABEL_VALUE, "is not a label value; use letters, digits, '-', '_' and '.'"),
]
SecretName = Annotated[
    str, shaped("secret_name", DNS_SUBDOMAIN, "is not a Secret name; use lowercase letters, digits, '-', '.'")
]


class Toleration(Section):
    """A pod toleration (core/v1 Toleration), for nodes tainted for training or for GPUs."""

    key: LabelKey | None = Field(
        None,
        description="The taint key; none with operator Exists matches every taint.",
        examples=["nvidia.com/gpu"],
    )
    operator: Literal["Equal", "Exists"] = Field(
        "Equal", description="Equal: key and value match; Exists: key matches.", examples=["Exists"]
    )
    value: LabelValue | None = Field(
        None, description="The taint value, with operator Equal.", examples=["present"]
    )
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = Field(
        None,
        description="The taint effect to tolerate; none tolerates every effect.",
        examples=["NoSchedule"],
    )

    def to_manifest(self) -> dict[str, str]:
        """The toleration as the pod spec carries it, without the fields left unset."""
        return {key: value for key, value in self.model_dump().items() if value is not None}


class KubernetesSettings(StoredSection):
    """Kubernetes settings; only read when the provider is kubernetes."""

    provider: ClassVar[str] = "kubernetes"
    title: ClassVar[str] = "Kubernetes"
    summary: ClassVar[str] = "Kubernetes (JobSet) settings; read only on --provider kubernetes."
    examples: ClassVar[tuple[dict[str, Any], ...]] = (
        {"namespace": "training", "node_type": "g5.xlarge", "region": "us-east-1"},
    )
    # gs:// through GKE's Cloud Storage FUSE CSI driver, s3:// copied in and synced out (render).
    schemes: ClassVar[tuple[str, ...]] = ("gs://", "s3://")
    identity: ClassVar[str | None] = "service_account"
    scanned_fields: ClassVar[frozenset[str]] = frozenset({"labels"})
    # GKE and EKS node types and prices (generate_catalog), and the image of image: auto.
    catalog_dir: ClassVar[Path | None] = Path(__file__).with_name("catalog")

    context: Annotated[
        str | None,
        shaped("context", r"[^\s]{1,253}", "is not a kubeconfig context name (kubectl config get-contexts)"),
    ] = Field(
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
        description="gs:// or s3:// root used on Kubernetes instead of storage.root: gs:// is mounted by "
        "GKE's Cloud Storage FUSE CSI driver, s3:// is copied in and synced out by the AWS CLI.",
        examples=["gs://bucket/churn", "s3://bucket/churn"],
    )
    service_account: DnsLabel | None = Field(
        None,
        description="The Kubernetes ServiceAccount the pods run as; it must be allowed to read and "
        "write the storage root (Workload Identity Federation for GKE, IRSA or EKS Pod Identity).",
        examples=["trainer"],
    )
    node_type: Annotated[
        str | None,
        shaped("node_type", NODE_TYPE, "is not a machine type; use a GCE or EC2 type like g5.xlarge"),
    ] = Field(
        None,
        description="The machine type of the nodes (node.kubernetes.io/instance-type), a GCE or EC2 "
        "type the catalog prices: selects those nodes and prices the job.",
        examples=["g2-standard-8", "g5.xlarge"],
    )
    region: Annotated[
        str | None,
        shaped("region", REGION, "is not a cloud region; use one like us-central1 or us-east-1"),
    ] = Field(
        None,
        description="The cloud region of the nodes, to price node_type from the catalog.",
        examples=["us-central1", "us-east-1"],
    )
    node_selector: dict[LabelKey, LabelValue] = Field(
        default_factory=dict,
        description="Extra node labels every pod requires.",
        examples=[{"cloud.google.com/gke-nodepool": "a100-pool"}],
    )
    tolerations: list[Toleration] = Field(
        default_factory=list,
        max_length=64,
        description="Taints the pods tolerate (GPU or training node pools are often tainted).",
        examples=[[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]],
    )
    gpu_resource: Annotated[
        str,
        shaped("resource", RESOURCE_NAME, "is not an extended resource name; use one like nvidia.com/gpu"),
    ] = Field(
        "nvidia.com/gpu",
        description="The extended resource a GPU is requested as (the NVIDIA device plugin's name).",
        examples=["nvidia.com/gpu"],
    )
    queue: DnsLabel | None = Field(
        None,
        description="The Kueue LocalQueue every JobSet goes through (label kueue.x-k8s.io/queue-name; created "
        "suspended, Kueue admits it), and capacity: queue's default; none: no Kueue.",
        examples=["team-a"],
    )
    image_pull_secrets: list[SecretName] = Field(
        default_factory=list,
        max_length=16,
        description="Secrets in the namespace that hold the registry credentials for the image.",
        examples=[["registry-credentials"]],
    )
    max_restarts: Whole = Field(
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


SECTION = KubernetesSettings
