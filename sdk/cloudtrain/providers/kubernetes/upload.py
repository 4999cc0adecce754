"""Upload the code bundle to the storage root once, with the client of its store.

A ``gs://`` bundle goes up with google-cloud-storage, as Vertex AI's does, an ``s3://``
one with boto3, as SageMaker's does (``cloudtrain.providers.vertex.upload``,
``cloudtrain.providers.sagemaker.upload``): the bundle's name is its content hash, so an
unchanged project uploads nothing. Each library is imported here, when a bundle goes up,
and its absence is one error with the pip command (the ``vertex`` or ``sagemaker`` extra).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cloudtrain.provider.transfer import bundle_uri
from cloudtrain.providers.kubernetes.settings import KubernetesSettings

if TYPE_CHECKING:
    from cloudtrain.bundle import Bundle
    from cloudtrain.planning import Plan
    from cloudtrain.progress import OnProgress

# boto3 needs a region for its client; S3 answers for a bucket in any region from any, redirecting.
DEFAULT_S3_REGION = "us-east-1"


def upload_bundle(plan: Plan, bundle: Bundle, progress: OnProgress | None = None) -> None:
    """Upload ``bundle`` to ``plan.bundle`` unless it is there; creates nothing else."""
    uri = bundle_uri(plan)
    if uri.startswith("s3://"):
        from cloudtrain.providers.sagemaker import upload as s3
        from cloudtrain.providers.sagemaker.clients import AwsClients

        region = KubernetesSettings.of(plan.spec).region or DEFAULT_S3_REGION
        s3.upload_bundle(AwsClients(region=region), bundle, uri, progress=progress)
        return
    from cloudtrain.providers.vertex import upload as gcs
    from cloudtrain.providers.vertex.clients import VertexClients

    clients = VertexClients()
    gcs.upload_once(bundle.path, uri, clients.storage_client(None), sleep=clients.sleep, progress=progress)
