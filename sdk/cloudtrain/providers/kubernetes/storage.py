"""How every pod of a JobSet reaches the storage root, the code bundle and the data: the same folders.

The runtime opens ``gs://B/p`` at ``/gcs/B/p`` and ``s3://B/p`` at ``/s3/B/p``
(``cloudtrain_runtime.providers.jobset``), so the pod must have them there:

- **gs://**: every bucket is mounted at ``/gcs/BUCKET`` by the Cloud Storage FUSE CSI
  driver of GKE, as a CSI ephemeral volume, with the pod annotation
  ``gke-gcsfuse/volumes: "true"`` (GoogleCloudPlatform/gcs-fuse-csi-driver v1.24.4,
  examples/batch-job/job.yaml; https://cloud.google.com/kubernetes-engine/docs/how-to/cloud-storage-fuse-csi-driver-ephemeral).
  Reads and writes go straight to the bucket; the pods' ServiceAccount needs access to
  it (Workload Identity Federation for GKE).
- **s3://**: no driver of EKS mounts a bucket that TensorFlow can write to (Mountpoint
  for Amazon S3 cannot rename files on general purpose buckets: awslabs/mountpoint-s3
  doc/SEMANTICS.md, and every checkpoint and SavedModel is written by renaming a
  temporary file), so ``/s3`` is an ``emptyDir`` the pod fills and empties with the
  official AWS CLI image:

  - an init container (``s3-in``) copies in the code bundle, the run's prefix (the
    backups of an earlier attempt: a restarted pod resumes from them) and every
    ``s3://`` data channel, before the trainer starts (``aws s3 cp``, ``aws s3 sync``);
  - a sidecar (``s3-out``: an init container with ``restartPolicy: Always``, which the
    kubelet starts before the trainer and stops after it, sending SIGTERM;
    https://kubernetes.io/docs/concepts/workloads/pods/sidecar-containers/, Kubernetes
    1.29+) copies the run's prefix back every ``SYNC_INTERVAL_S`` seconds and once more
    when it is stopped, and the storage root's ``latest.json`` whenever this pod wrote
    a newer one. It never passes ``--delete``: nothing is ever deleted in S3 by a pod, so
    a run's backups outlive its export (the runtime keeps them, as on SageMaker), and a
    file another attempt wrote is never removed.

  The final copy must end within the pod's ``terminationGracePeriodSeconds``
  (``TERMINATION_GRACE_S``). What each of the two containers copies is written into its
  environment, one ``SOURCE TARGET`` pair per line, so the emulation reads the same
  lists (``cloudtrain.providers.kubernetes.emulate``). The pods' ServiceAccount needs
  the bucket (IRSA or EKS Pod Identity), as ``aws`` finds the credentials those inject.

Example:
>>> mounted_path("s3://bucket/run/model"), mounted_path("/local/out")
('/s3/bucket/run/model', '/local/out')
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from cloudtrain import runs
from cloudtrain.provider.transfer import bundle_uri

if TYPE_CHECKING:
    from cloudtrain.planning import Plan

GCS, S3 = "gs://", "s3://"
MOUNTS = {GCS: "/gcs/", S3: "/s3/"}
GCSFUSE_ANNOTATION = "gke-gcsfuse/volumes"
GCSFUSE_DRIVER = "gcsfuse.csi.storage.gke.io"
# implicit-dirs: folders that exist only as object prefixes (data written by other tools)
# are listed (https://cloud.google.com/storage/docs/cloud-storage-fuse/config-file, implicit-dirs).
GCSFUSE_MOUNT_OPTIONS = "implicit-dirs"
S3_VOLUME = "s3"
# The official AWS CLI v2 image, on Amazon ECR Public (AWS recommends it over Docker Hub):
# https://docs.aws.amazon.com/cli/latest/userguide/getting-started-docker.html; entrypoint
# `aws`, bash inside (Amazon Linux 2). Version 2.15.55 is a published tag (May 2024).
AWS_CLI_IMAGE = "public.ecr.aws/aws-cli/aws-cli:2.15.55"
SYNC_INTERVAL_S = 60
TERMINATION_GRACE_S = 600
COPY_IN_ENV = "CLOUDTRAIN_S3_IN"
SYNC_OUT_ENV = "CLOUDTRAIN_S3_OUT"
LATEST_ENV = "CLOUDTRAIN_S3_LATEST"
SIDECAR_RESOURCES = {"requests": {"cpu": "250m", "memory": "256Mi"}}

# Reads the pairs from the environment, so no path is ever spliced into the script.
COPY_IN_SCRIPT = """\
set -eu
echo "$CLOUDTRAIN_S3_IN" | while read -r kind source target; do
  [ -n "$kind" ] || continue
  aws s3 "$kind" "$source" "$target" --only-show-errors
done
"""
SYNC_OUT_SCRIPT = f"""\
set -u
sync_out() {{
  echo "$CLOUDTRAIN_S3_OUT" | while read -r source target; do
    [ -d "$source" ] && aws s3 sync "$source" "$target" --only-show-errors
  done
  echo "$CLOUDTRAIN_S3_LATEST" | while read -r source target; do
    if [ -f "$source" ] && [ "$source" -nt /tmp/latest.sent ]; then
      aws s3 cp "$source" "$target" --only-show-errors && touch -r "$source" /tmp/latest.sent
    fi
  done
}}
trap 'sync_out; exit 0' TERM
while true; do sleep {SYNC_INTERVAL_S} & wait $!; sync_out; done
"""


def mounted_path(uri: str) -> str:
    """Where a pod opens ``uri``: ``/gcs/B/p`` or ``/s3/B/p``, a local path as it is."""
    for scheme, mount in MOUNTS.items():
        if uri.startswith(scheme):
            return mount + uri.removeprefix(scheme)
    return uri


def gcs_buckets(plan: Plan) -> list[str]:
    """Every ``gs://`` bucket a pod opens, in a stable order: the storage root's, the bundle's, the data's."""
    return list(dict.fromkeys(_bucket(uri) for uri in _uris(plan) if uri.startswith(GCS)))


def uses_s3(plan: Plan) -> bool:
    """Whether any pod opens an ``s3://`` URI: then ``/s3`` is filled in and synced out."""
    return any(uri.startswith(S3) for uri in _uris(plan))


def pod_annotations(plan: Plan) -> dict[str, str]:
    """The pod annotations the storage needs: GKE's FUSE sidecar for ``gs://`` buckets."""
    return {GCSFUSE_ANNOTATION: "true"} if gcs_buckets(plan) else {}


def volumes(plan: Plan) -> list[dict[str, Any]]:
    """The pod's storage volumes: one FUSE volume per ``gs://`` bucket, an ``emptyDir`` for ``s3://``."""
    found = [
        {
            "name": f"gcs-{index}",
            "csi": {
                "driver": GCSFUSE_DRIVER,
                "volumeAttributes": {"bucketName": bucket, "mountOptions": GCSFUSE_MOUNT_OPTIONS},
            },
        }
        for index, bucket in enumerate(gcs_buckets(plan))
    ]
    return found + ([{"name": S3_VOLUME, "emptyDir": {}}] if uses_s3(plan) else [])


def mounts(plan: Plan) -> list[dict[str, str]]:
    """Where the trainer mounts them: ``/gcs/BUCKET`` each, and ``/s3``."""
    found = [
        {"name": f"gcs-{index}", "mountPath": f"/gcs/{bucket}"}
        for index, bucket in enumerate(gcs_buckets(plan))
    ]
    return found + ([{"name": S3_VOLUME, "mountPath": "/s3"}] if uses_s3(plan) else [])


def init_containers(plan: Plan) -> list[dict[str, Any]]:
    """For ``s3://``: the copy in before the trainer, then the sidecar that copies back out."""
    if not uses_s3(plan):
        return []
    mount = [{"name": S3_VOLUME, "mountPath": "/s3"}]
    copy_in = {
        "name": "s3-in",
        "image": AWS_CLI_IMAGE,
        "command": ["/bin/bash", "-c", COPY_IN_SCRIPT],
        "env": [{"name": COPY_IN_ENV, "value": _lines(copy_in_pairs(plan))}],
        "resources": SIDECAR_RESOURCES,
        "volumeMounts": mount,
    }
    sync_out = {
        "name": "s3-out",
        "image": AWS_CLI_IMAGE,
        "restartPolicy": "Always",
        "command": ["/bin/bash", "-c", SYNC_OUT_SCRIPT],
        "env": [
            {"name": SYNC_OUT_ENV, "value": _lines(sync_out_pairs(plan))},
            {"name": LATEST_ENV, "value": _lines(latest_pairs(plan))},
        ],
        "resources": SIDECAR_RESOURCES,
        "volumeMounts": mount,
    }
    return [copy_in, sync_out]


def copy_in_pairs(plan: Plan) -> list[tuple[str, str, str]]:
    """``(aws s3 verb, source, target)`` for what the pod needs from S3 before it starts."""
    uris = [(bundle_uri(plan), "cp")]
    uris += [(_run(plan), "sync")]
    uris += [(uri, "sync") for uri in plan.spec.data.values()]
    return [(verb, uri, mounted_path(uri)) for uri, verb in uris if uri.startswith(S3)]


def sync_out_pairs(plan: Plan) -> list[tuple[str, str]]:
    """``(local folder, S3 URI)``: the run's prefix, where every artifact of the run is written."""
    run = _run(plan)
    return [(mounted_path(run), run)] if run.startswith(S3) else []


def latest_pairs(plan: Plan) -> list[tuple[str, str]]:
    """``(local file, S3 URI)`` of the storage root's ``latest.json``, written after a verified export."""
    latest = plan.storage.latest
    return [(mounted_path(latest), latest)] if latest.startswith(S3) else []


def _lines(pairs: Sequence[tuple[str, ...]]) -> str:
    """One pair per line, its parts separated by a space: bucket URIs hold no whitespace
    (``cloudtrain.buckets``), and the script reads them as data (``read -r``), never as code."""
    return "\n".join(" ".join(pair) for pair in pairs)


def _run(plan: Plan) -> str:
    """The run's prefix, where every artifact of the run is (a plan without a run has none)."""
    runs.of_plan(plan)
    return plan.storage.run


def _uris(plan: Plan) -> list[str]:
    return [plan.storage.root, bundle_uri(plan), *plan.spec.data.values()]


def _bucket(uri: str) -> str:
    return uri.split("://", 1)[1].split("/", 1)[0]
