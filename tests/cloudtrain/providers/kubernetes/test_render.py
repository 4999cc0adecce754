"""The rendered JobSet: valid for the JobSet CRD and the Kubernetes pod schema, and true to JobSet."""

from __future__ import annotations

import copy
import re
import subprocess
import sys
from typing import Any

import pytest
from kubernetes.client.models import V1JobTemplateSpec
from pydantic import ValidationError

from cloudtrain.errors import ProviderError, SpecError
from cloudtrain.planning import ExpectedCost
from cloudtrain.providers.kubernetes import emulate, storage
from cloudtrain.providers.kubernetes.render import NAME_MAX, render
from cloudtrain.providers.kubernetes.settings import KubernetesSettings
from cloudtrain_runtime.providers import jobset
from tests.cloudtrain.providers.fakes import kubernetes_schema

from .conftest import MakePlan

FULL = {
    "namespace": "training",
    "service_account": "trainer",
    "node_type": "a2-highgpu-1g",
    "node_selector": {"cloud.google.com/gke-nodepool": "a100"},
    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    "queue": "team-a",
    "image_pull_secrets": ["registry"],
    "max_restarts": 5,
    "labels": {"team": "search"},
}
S3 = {"storage": {"root": "s3://bucket/demo"}, "bundle": "s3://bucket/demo/code/0123456789abcdef.tar.gz"}
# A DNS-1035 label: what JobSet's webhook requires of JobSet, Job and pod names.
DNS_1035 = re.compile(r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?")

SHAPES = [
    {"resources": {"hosts": 1}},  # one CPU host, every default
    {
        "resources": {"hosts": 4, "accelerator": "a100-40gb", "spot": True},
        "kubernetes": FULL,
    },  # GPU hosts, spot
    {"resources": {"hosts": 1, "accelerator": "tpu-v5e", "per_host": 8}},  # a TPU host
    {"data": {"train": "gs://datasets/train"}},  # a data channel in another bucket
    {**S3, "data": {"train": "s3://datasets/train"}},  # S3: copied in, synced out
    {"image": "auto"},  # a maintained TensorFlow image, the runtime in the bundle
]


def _pod_template(body: dict[str, Any]) -> dict[str, Any]:
    return body["spec"]["replicatedJobs"][0]["template"]


@pytest.mark.parametrize("fields", SHAPES)
def test_every_shape_passes_the_jobset_crd_schema(make_plan: MakePlan, fields: dict[str, Any]) -> None:
    assert kubernetes_schema.problems(render(make_plan(**fields))) == []


@pytest.mark.parametrize("fields", SHAPES)
def test_every_job_template_is_a_kubernetes_job_template(make_plan: MakePlan, fields: dict[str, Any]) -> None:
    template = V1JobTemplateSpec.model_validate(_pod_template(render(make_plan(**fields))))
    assert template.spec is not None and template.spec.completion_mode == "Indexed"


def test_both_schemas_refuse_a_misspelt_field(make_plan: MakePlan) -> None:
    # guards the two checks above: each would pass a JobSet with a field the API drops
    body = render(make_plan())
    broken = copy.deepcopy(body)
    _pod_template(broken)["spec"]["template"]["spec"]["containers"][0]["imagePullPolcy"] = "Always"
    assert kubernetes_schema.problems(broken) == [
        "spec.replicatedJobs.0.template.spec.template.spec.containers.0: Additional properties are not "
        "allowed ('imagePullPolcy' was unexpected)"
    ]
    with pytest.raises(ValidationError, match="imagePullPolcy"):
        V1JobTemplateSpec.model_validate(_pod_template(broken))


@pytest.mark.parametrize("hosts", [1, 2, 5])
def test_the_runtime_reads_its_place_from_what_jobset_gives_each_pod(make_plan: MakePlan, hosts: int) -> None:
    body = render(make_plan(resources={"hosts": hosts}))
    pods = emulate.pods(body)
    infos = [jobset.ENVIRONMENT.cluster(pod.env, root="/") for pod in pods]
    assert all(jobset.ENVIRONMENT.detects(pod.env, "/") for pod in pods)
    assert [info.rank for info in infos] == list(range(hosts))
    assert [info.is_chief for info in infos] == [True] + [False] * (hosts - 1)
    # every pod's TF_CONFIG names the hosts JobSet really gives them: <hostname>.<subdomain>:2222
    assert all(info.hosts == tuple(f"{pod.hostname}.{pod.subdomain}:2222" for pod in pods) for info in infos)
    assert [info.tf_config["task"] for info in infos if info.tf_config] == [
        {"type": "chief", "index": 0},
        *({"type": "worker", "index": i} for i in range(hosts - 1)),
    ]


def test_the_pods_read_the_bundle_and_storage_through_the_gcs_fuse_mount(make_plan: MakePlan) -> None:
    body = render(make_plan(data={"train": "gs://datasets/train"}))
    pod = _pod_template(body)["spec"]["template"]
    volumes = {
        v["name"]: v["csi"]["volumeAttributes"]["bucketName"] for v in pod["spec"]["volumes"] if "csi" in v
    }
    mounts = {m["name"]: m["mountPath"] for m in pod["spec"]["containers"][0]["volumeMounts"]}
    assert pod["metadata"]["annotations"] == {"gke-gcsfuse/volumes": "true"}
    assert {mounts[name]: bucket for name, bucket in volumes.items()} == {
        "/gcs/bucket": "bucket",
        "/gcs/datasets": "datasets",
    }
    assert "initContainers" not in pod["spec"]  # nothing to copy: FUSE reads and writes the bucket
    env = emulate.pods(body)[0].env
    assert env["CLOUDTRAIN_BUNDLE"] == "/gcs/bucket/demo/code/0123456789abcdef.tar.gz"


def test_on_s3_an_init_container_copies_in_and_a_sidecar_copies_out_without_deleting(
    make_plan: MakePlan,
) -> None:
    body = render(make_plan(**S3, data={"train": "s3://datasets/train"}, run_id="r7"))
    pod = _pod_template(body)["spec"]["template"]["spec"]
    copy_in, sync_out = pod["initContainers"]
    assert (copy_in["name"], "restartPolicy" in copy_in) == ("s3-in", False)  # runs first, to the end
    assert (sync_out["name"], sync_out["restartPolicy"]) == ("s3-out", "Always")  # a sidecar: runs beside
    assert {c["image"] for c in pod["initContainers"]} == {storage.AWS_CLI_IMAGE}
    assert copy_in["env"] == [
        {
            "name": "CLOUDTRAIN_S3_IN",
            "value": "cp s3://bucket/demo/code/0123456789abcdef.tar.gz /s3/bucket/demo/code/0123456789abcdef.tar.gz\n"
            "sync s3://bucket/demo/runs/r7 /s3/bucket/demo/runs/r7\n"  # an earlier attempt's backups
            "sync s3://datasets/train /s3/datasets/train",
        }
    ]
    assert sync_out["env"] == [
        {"name": "CLOUDTRAIN_S3_OUT", "value": "/s3/bucket/demo/runs/r7 s3://bucket/demo/runs/r7"},
        {"name": "CLOUDTRAIN_S3_LATEST", "value": "/s3/bucket/demo/latest.json s3://bucket/demo/latest.json"},
    ]
    assert (
        "--delete" not in storage.SYNC_OUT_SCRIPT
        and "trap 'sync_out; exit 0' TERM" in storage.SYNC_OUT_SCRIPT
    )
    assert pod["terminationGracePeriodSeconds"] == storage.TERMINATION_GRACE_S
    assert pod["volumes"] == [{"name": "s3", "emptyDir": {}}]
    assert {"name": "s3", "mountPath": "/s3"} in pod["containers"][0]["volumeMounts"]
    assert emulate.pods(body)[0].env["CLOUDTRAIN_BUNDLE"] == "/s3/bucket/demo/code/0123456789abcdef.tar.gz"


def test_the_copy_scripts_read_paths_as_data_never_as_code() -> None:
    # paths reach the scripts only through the environment, read with `read -r`: no path is spliced in
    for script in (storage.COPY_IN_SCRIPT, storage.SYNC_OUT_SCRIPT):
        assert "s3://" not in script and "read -r" in script


def test_a_failed_pod_restarts_the_whole_gang_up_to_max_restarts(make_plan: MakePlan) -> None:
    body = render(make_plan(kubernetes={"max_restarts": 7}))
    job = _pod_template(body)["spec"]
    assert body["spec"]["failurePolicy"]["maxRestarts"] == 7
    assert (job["backoffLimit"], job["template"]["spec"]["restartPolicy"]) == (0, "Never")
    # a configuration error (exit 2) or the deadline fails the JobSet at once instead of restarting it
    assert body["spec"]["failurePolicy"]["rules"] == [
        {
            "name": "permanent",
            "action": "FailJobSet",
            "onJobFailureReasons": ["PodFailurePolicy", "DeadlineExceeded"],
        }
    ]
    assert job["podFailurePolicy"]["rules"][0]["onExitCodes"]["values"] == [2]
    assert job["activeDeadlineSeconds"] == 86400  # limits.max_runtime's default, 24h


def test_settings_place_the_pods(make_plan: MakePlan) -> None:
    body = render(
        make_plan(
            resources={"hosts": 2, "accelerator": "a100-40gb", "per_host": 2, "spot": True},
            kubernetes={**FULL, "node_type": "a2-highgpu-2g"},
        )
    )
    spec = _pod_template(body)["spec"]["template"]["spec"]
    assert body["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-a"
    assert body["metadata"]["namespace"] == "training"
    assert spec["serviceAccountName"] == "trainer"
    assert spec["imagePullSecrets"] == [{"name": "registry"}]
    assert spec["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert spec["nodeSelector"] == {
        "cloud.google.com/gke-nodepool": "a100",
        "node.kubernetes.io/instance-type": "a2-highgpu-2g",
    }
    assert spec["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "2"}
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    assert [term["matchExpressions"][0]["key"] for term in terms] == [
        "cloud.google.com/gke-spot",  # GKE
        "eks.amazonaws.com/capacityType",  # EKS managed node groups
        "karpenter.sh/capacity-type",  # Karpenter
    ]


def test_the_annotations_say_what_the_nodes_cost_after_the_run(make_plan: MakePlan) -> None:
    planned = make_plan(
        resources={"hosts": 2, "accelerator": "a10g", "spot": True},
        kubernetes={"node_type": "g5.xlarge", "region": "us-east-1"},
    )
    notes = render(planned)["metadata"]["annotations"]
    assert {key: notes[key] for key in sorted(notes)} == {
        "cloudtrain/accelerator": "a10g",
        "cloudtrain/node-type": "g5.xlarge",
        "cloudtrain/region": "us-east-1",
        "cloudtrain/run": "run-1",
        "cloudtrain/run-prefix": "gs://bucket/demo/runs/run-1",
        "cloudtrain/spot": "true",
    }


def test_a_tpu_host_asks_for_chips_on_a_gke_tpu_node(make_plan: MakePlan) -> None:
    body = render(make_plan(resources={"hosts": 1, "accelerator": "tpu-v5e", "per_host": 4}))
    spec = _pod_template(body)["spec"]["template"]["spec"]
    assert spec["nodeSelector"] == {
        "cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
        "cloud.google.com/gke-tpu-topology": "2x2",
    }
    assert spec["containers"][0]["resources"]["requests"] == {"google.com/tpu": "4"}


def test_the_name_is_the_request_so_the_same_run_meets_its_own_jobset(make_plan: MakePlan) -> None:
    first = render(make_plan())["metadata"]["name"]
    assert render(make_plan())["metadata"]["name"] == first
    priced = make_plan().with_estimate(ExpectedCost(12.5, "worst-case"))
    assert render(priced)["metadata"]["name"] == first  # a new price is no new job
    assert render(make_plan(run_id="run-2"))["metadata"]["name"] != first


def test_every_pod_name_stays_a_dns_label_at_the_longest_name_and_most_hosts(make_plan: MakePlan) -> None:
    body = render(make_plan(name="a" * 63, resources={"hosts": 1024}))
    name = body["metadata"]["name"]
    assert len(name) == NAME_MAX
    longest_pod = f"{name}-host-0-1023-abcde"  # what pkg/webhooks/jobset_webhook.go:249 checks
    assert len(longest_pod) <= 63 and DNS_1035.fullmatch(longest_pod)


def test_env_values_stay_literal(make_plan: MakePlan) -> None:
    body = render(make_plan(env={"GREETING": "echo $(HOME)"}))
    container = _pod_template(body)["spec"]["template"]["spec"]["containers"][0]
    assert {"name": "GREETING", "value": "echo $$(HOME)"} in container["env"]
    assert emulate.pods(body)[0].env["GREETING"] == "echo $(HOME)"


def test_a_tpu_slice_gke_does_not_offer_is_one_spec_error(make_plan: MakePlan) -> None:
    with pytest.raises(SpecError) as raised:
        make_plan(resources={"hosts": 1, "accelerator": "tpu-v5e", "per_host": 2})
    assert raised.value.problems == [
        "resources.per_host: 2 is not a single-host tpu-v5e slice on GKE (1, 4, 8 chips)."
    ]


@pytest.mark.parametrize("run_id", [None])  # a plan rendered before the run is named
def test_render_needs_the_run(make_plan: MakePlan, run_id: str | None) -> None:
    with pytest.raises(ProviderError, match="no run id"):
        render(make_plan(run_id=run_id))


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"namespace": "Training"}, "kubernetes.namespace: 'Training' is not a Kubernetes name"),
        ({"max_restarts": -1}, "kubernetes.max_restarts must be >= 0"),
        (
            {"tolerations": [{"operator": "Maybe"}]},
            "kubernetes.tolerations[0].operator: 'Maybe' is not valid",
        ),
        ({"node_selector": {"bad key!": "x"}}, "kubernetes.node_selector"),
        ({"namespaces": "training"}, "kubernetes.namespaces: unknown field. Did you mean 'namespace'?"),
        ({"storage_root": "hdfs://x/y"}, "kubernetes.storage_root: 'hdfs://x/y' uses an unsupported scheme"),
    ],
)
def test_bad_settings_are_one_line_naming_the_field(fields: dict[str, Any], problem: str) -> None:
    with pytest.raises(SpecError) as raised:
        KubernetesSettings(**fields)
    assert len(raised.value.problems) == 1 and raised.value.problems[0].startswith(problem)


def test_rendering_and_the_job_module_load_no_kubernetes_client() -> None:
    # render and --dry-run must stay cheap: the client (about 0.9 s to import here) loads on first call
    code = (
        "import sys, cloudtrain.providers.kubernetes.render, cloudtrain.providers.kubernetes.job, "
        "cloudtrain.providers.kubernetes.setup_checks; print('kubernetes' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
