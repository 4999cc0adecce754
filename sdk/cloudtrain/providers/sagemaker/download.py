"""Read one file a SageMaker training job wrote, out of its ``output.tar.gz`` or as an S3 object.

SageMaker uploads ``/opt/ml/output/data`` as ``<S3OutputPath>/<job>/output/output.tar.gz``
(https://docs.aws.amazon.com/sagemaker/latest/dg/your-algorithms-training-algo-output.html),
so ``Job.outputs`` names the files in it ``output.tar.gz#<member>``. The archive is read
as a stream from S3 GetObject and never extracted: a member is matched by name only,
must be a regular file, and is read into memory only up to ``MAX_MEMBER_BYTES``, so a
hostile archive (``../`` names, links, a huge member) can neither write nor exhaust memory.
"""

from __future__ import annotations

import tarfile
from typing import TYPE_CHECKING, Any

from cloudtrain.errors import ProviderError
from cloudtrain.providers.sagemaker.clients import AwsClients

if TYPE_CHECKING:
    from cloudtrain.planning import Plan

MAX_MEMBER_BYTES = 16 * 1024 * 1024
"""The largest file read back: cloudtrain's own result and bench files are a few kB."""


def read_output(plan: Plan, uri: str, clients: AwsClients | None = None) -> bytes:
    """The bytes of ``s3://bucket/key`` or of ``s3://bucket/archive.tar.gz#member``.

    Raises:
        ProviderError: the object or member is missing, not a regular file, or too large.
    """
    return read_object(uri, clients or AwsClients(region=plan.region))


def read_object(uri: str, aws: AwsClients) -> bytes:
    """``read_output`` with the clients given: the bytes of ``s3://bucket/key`` or of one archive member.

    Raises:
        ProviderError: the object or member is missing, not a regular file, or too large.
    """
    archive, _, member = uri.partition("#")
    bucket, _, key = archive.removeprefix("s3://").partition("/")
    body = aws.call("s3", "get_object", Bucket=bucket, Key=key)["Body"]
    if not member:
        return _bounded(body, uri)
    return _member(body, member, uri)


def _member(body: Any, name: str, uri: str) -> bytes:
    """``name`` out of the gzip'd tar stream ``body``, matched on its normalized name."""
    try:
        with tarfile.open(fileobj=body, mode="r|gz") as archive:
            for entry in archive:
                if entry.name.removeprefix("./") != name:
                    continue
                if not entry.isreg():
                    raise ProviderError(f"{uri}: the archive's {name} is not a regular file.")
                if entry.size > MAX_MEMBER_BYTES:
                    raise ProviderError(
                        f"{uri}: {name} has {entry.size} bytes, more than the {MAX_MEMBER_BYTES} read back."
                    )
                read = archive.extractfile(entry)
                assert read is not None  # a regular file always has data
                return read.read()
    except (tarfile.TarError, EOFError, OSError) as error:
        raise ProviderError(f"{uri}: the job's archive cannot be read ({error}).") from error
    raise ProviderError(f"{uri}: the job's archive has no {name}; the job did not write it.")


def _bounded(body: Any, uri: str) -> bytes:
    """All of ``body``, refusing one larger than ``MAX_MEMBER_BYTES``."""
    data: bytes = body.read(MAX_MEMBER_BYTES + 1)
    if len(data) > MAX_MEMBER_BYTES:
        raise ProviderError(f"{uri}: more than the {MAX_MEMBER_BYTES} bytes read back.")
    return data
