"""A run's files in S3, streamed through boto3 (``cloudtrain.provider.backups.RunStore``).

Reads are S3 GetObject bodies, read as they arrive. Writes go through boto3's managed
transfer (``upload_fileobj``), which sends a stream of unknown length as a multipart
upload, holding at most ``TransferConfig.max_in_memory_upload_chunks`` parts of
``multipart_chunksize`` bytes in memory (s3transfer ``upload.py``,
``UploadNonSeekableInputManager``); the object appears only when the upload completes
(https://docs.aws.amazon.com/AmazonS3/latest/userguide/mpuoverview.html). botocore adds a
CRC32 checksum to every upload it can and S3 refuses a part whose bytes do not match
it (botocore ``request_checksum_calculation``, default ``when_supported`` since 1.36;
https://docs.aws.amazon.com/sdkref/latest/guide/feature-dataintegrity.html). The sha256
the copy checked is kept as user metadata (``x-amz-meta-sha256``), which ``digest`` reads
with HeadObject, as the code upload does (``upload.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cloudtrain.provider.backups import MissingObject, Reader, Source, StoredObject
from cloudtrain.providers.sagemaker.clients import AwsCallError
from cloudtrain.providers.sagemaker.upload import split_uri

if TYPE_CHECKING:
    from cloudtrain.providers.sagemaker.clients import AwsClients

# s3transfer's defaults (8 MiB parts, 10 threads) bound memory to about 10 parts in flight.
PART_BYTES = 8 * 1024 * 1024
_MISSING = ("404", "NoSuchKey", "NotFound")


class S3Store:
    """The objects under one S3 prefix (``s3://bucket/root/runs/r1``), by key relative to it."""

    def __init__(self, aws: AwsClients, uri: str) -> None:
        self.aws = aws
        self._uri = uri.rstrip("/")
        self.bucket, prefix = split_uri(self._uri + "/")
        self.prefix = prefix

    @property
    def uri(self) -> str:
        return self._uri

    def __repr__(self) -> str:
        return f"S3Store(uri={self._uri!r})"

    def list(self, prefix: str = "") -> list[StoredObject]:
        """ListObjectsV2, every page (1,000 keys a page)."""
        found = []
        token: dict[str, str] = {}
        while True:
            page = self.aws.call(
                "s3", "list_objects_v2", Bucket=self.bucket, Prefix=self.prefix + prefix, **token
            )
            found += [
                StoredObject(item["Key"][len(self.prefix) :], int(item["Size"]))
                for item in page.get("Contents", [])
            ]
            if not page.get("IsTruncated"):
                return sorted(found, key=lambda stored: stored.key)
            token = {"ContinuationToken": page["NextContinuationToken"]}

    def open(self, key: str) -> Reader:
        try:
            body: Reader = self.aws.call("s3", "get_object", Bucket=self.bucket, Key=self.prefix + key)[
                "Body"
            ]
        except AwsCallError as error:
            if error.code in _MISSING:
                raise MissingObject(f"{self._uri}/{key}: no such object.") from error
            raise
        return body

    def write(self, key: str, source: Source, *, size: int, sha256: str) -> None:
        from boto3.s3.transfer import TransferConfig

        self.aws.call(
            "s3",
            "upload_fileobj",
            Fileobj=source,
            Bucket=self.bucket,
            Key=self.prefix + key,
            ExtraArgs={"Metadata": {"sha256": sha256}},
            Config=TransferConfig(multipart_chunksize=PART_BYTES),
        )

    def digest(self, key: str) -> str | None:
        try:
            head: dict[str, Any] = self.aws.call(
                "s3", "head_object", Bucket=self.bucket, Key=self.prefix + key
            )
        except AwsCallError as error:
            if error.code in _MISSING:
                return None
            raise
        found = head.get("Metadata", {}).get("sha256")
        return str(found) if found else None

    def delete(self, key: str) -> None:
        self.aws.call("s3", "delete_object", Bucket=self.bucket, Key=self.prefix + key)
