"""Read one file a JobSet's pods wrote under the storage root, with the client of its store.

The reverse of ``upload``: a ``gs://`` object is read with google-cloud-storage, as Vertex
AI's are, an ``s3://`` one with boto3, as SageMaker's are
(``cloudtrain.providers.vertex.download``, ``cloudtrain.providers.sagemaker.download``).
On ``gs://`` the pods write through the Cloud Storage FUSE mount, so a file is in the
bucket once closed; on ``s3://`` the ``s3-out`` sidecar copies the run's prefix out every
``storage.SYNC_INTERVAL_S`` seconds, so what is read is up to that old.
"""

from __future__ import annotations

from cloudtrain.providers.kubernetes.upload import DEFAULT_S3_REGION


def read_object(uri: str, region: str | None) -> bytes:
    """The bytes of ``uri`` (``gs://`` or ``s3://``); ``region`` is the nodes' (``kubernetes.region``), for S3.

    Raises:
        ProviderError: nothing is there, it is too large, or the store refused the read.
    """
    if uri.startswith("s3://"):
        from cloudtrain.providers.sagemaker import download as s3
        from cloudtrain.providers.sagemaker.clients import AwsClients

        return s3.read_object(uri, AwsClients(region=region or DEFAULT_S3_REGION))
    from cloudtrain.providers.vertex import download as gcs

    return gcs.read_object(uri, None)
