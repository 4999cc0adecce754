"""The ``kubernetes:`` section of a job spec: which cluster, which namespace, which nodes.

Every field has the default a newcomer would pick on a cluster that has the JobSet
controller installed: the kubeconfig's current context and its namespace, nodes found
by the accelerator's resource alone, three gang restarts. Values are checked by
the API server's own rules (``apimachinery``: RFC 1123 labels and subdomains, qualified
label keys, label values, tolerations, extended resource names), so a typo fails at
``validate``, not in the API server. Of the provider's own modules this imports only
``apimachinery`` (the standard library alone), so building the spec loads no more.

Example:
>>> settings = KubernetesSettings(namespace="training", queue="team-a")
>>> settings.namespace, settings.max_restarts, settings.gpu_resource
('training', 3, 'nvidia.com/gpu')
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, Field, model_validator
from pydantic_core import PydanticCustomError

from cloudtrain.messages import quote
from cloudtrain.providers.kubernetes import apimachinery
from cloudtrain.sections import Section, StoredSection, Whole, shaped

# A GCE machine type (n1-standard-8, a2-highgpu-1g) or an EC2 instance type (g5.xlarge, p4d.24xlarge).
NODE_TYPE = r"[a-z][a-z0-9]*([-.][a-z0-9]+)+"
# A cloud region, GCP's (us-central1) or AWS's (us-east-1).
REGION = r"[a-z]{2,}(-[a-z]+)+-?\d+"
# JobSet's own bound: failurePolicy.maxRestarts is an int32 (api/jobset/v1alpha2/jobset_types.go, FailurePolicy).
MAX_RESTARTS = 2**31 - 1


def follows(kind: str, rule: Callable[[str], str | None], noun: str) -> AfterValidator:
    """A check by one of the API server's rules (``apimachinery``): ``'VALUE' is not NOUN: why``."""

    def check(value: str | None) -> str | None:
        if value is not None and (problem := rule(value)) is not None:
            raise PydanticCustomError(
                kind,
                "{value} is not {noun}: {problem}",
                {"value": quote(value), "noun": noun, "problem": problem},
            )
        return value

    return AfterValidator(check)


DnsLabel = Annotated[str, follows("dns_label", apimachinery.dns1123_label, "a Kubernetes name")]
DnsSubdomain = Annotated[str, follows("dns_subdomain", apimachinery.dns1123_subdomain, "a Kubernetes name")]
LabelKey = Annotated[str, follows("label_key", apimachinery.label_key, "a label key")]
LabelValue = Annotated[str, follows("label_value", apimachinery.label_value, "a label value")]
SecretName = Annotated[str, follows("secret_name", apimachinery.dns1123_subdomain, "a Secret name")]
ResourceName = Annotated[
    str, follows("resource", apimachinery.extended_resource, "an extended resource name like nvidia.com/gpu")
]
# The node type is also the value of the label node.kubernetes.io/instance-type (render._node_selector).
NodeType = Annotated[
    str,
    shaped("node_type", NODE_TYPE, "is not a machine type; use a GCE or EC2 type like g5.xlarge"),
    follows("node_type", apimachinery.label_value, "a node label value"),
]


class Toleration(Section):
    """A pod toleration (core/v1 Toleration), for nodes tainted for training or for GPUs.

    Checked as a whole by the API server's ``ValidateTolerations`` (``apimachinery.toleration``).
    """

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

    @model_validator(mode="after")
    def _as_the_api_server_checks_it(self) -> Toleration:
        problem = apimachinery.toleration(self.to_manifest())
        if problem is not None:
            raise PydanticCustomError("toleration", "{problem}", {"problem": problem})
        return self

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
    service_account: DnsSubdomain | None = Field(
        None,
        description="The Kubernetes ServiceAccount the pods run as; it must be allowed to read and "
        "write the storage root (Workload Identity Federation for GKE, IRSA or EKS Pod Identity).",
        examples=["trainer"],
    )
    node_type: NodeType | None = Field(
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
    gpu_resource: ResourceName = Field(
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
