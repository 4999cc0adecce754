"""``read_output``: a file a job wrote, read back from S3 (moto), Cloud Storage (its emulator) or this machine.

SageMaker delivers the runtime's files inside ``output.tar.gz``; the archive is read as a
stream, never extracted, so hostile member names, links and sizes are refused by name.
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from cloudtrain.api import plan
from cloudtrain.errors import ProviderError
from cloudtrain.planning import Plan
from cloudtrain.provider.base import Provider, ReadsOutputs
from cloudtrain.providers import local, sagemaker, vertex
from cloudtrain.providers.sagemaker import download
from cloudtrain.providers.vertex import download as vertex_download
from cloudtrain.providers.vertex.clients import VertexClients
from cloudtrain.specfile import load_spec
from tests.cloudtrain.providers.fakes.sagemaker_aws import BUCKET, LoopbackAws
from tests.cloudtrain.providers.fakes.vertex_storage import BUCKET as GCS_BUCKET

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "binary_classifier" / "job.yaml"
KEY = "run/output/demo-1a2b/output/output.tar.gz"
ARCHIVE = f"s3://{BUCKET}/{KEY}"


def planned() -> Plan:
    return plan(load_spec(EXAMPLE, ()), "sagemaker")


def archive(*members: tarfile.TarInfo | tuple[str, bytes]) -> bytes:
    """A gzip'd tar of ``(name, data)`` files and ready-made entries (links, folders)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for member in members:
            if isinstance(member, tarfile.TarInfo):
                tar.addfile(member)
                continue
            name, data = member
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def put(aws: LoopbackAws, body: bytes, key: str = KEY) -> None:
    aws.client("s3").put_object(Bucket=BUCKET, Key=key, Body=body)


def reader(provider: Provider) -> ReadsOutputs:
    assert isinstance(provider, ReadsOutputs)
    return provider


def read(aws: LoopbackAws, uri: str) -> bytes:
    return reader(sagemaker.provider).read_output(planned(), uri, clients=aws.clients())


def test_a_member_of_the_output_archive_is_read_whatever_its_prefix(aws: LoopbackAws) -> None:
    put(aws, archive(("./cloudtrain-result.json", b"{}"), ("./cloudtrain-bench.json", b'{"a": 1}')))
    assert read(aws, f"{ARCHIVE}#cloudtrain-bench.json") == b'{"a": 1}'


def test_a_plain_object_is_read(aws: LoopbackAws) -> None:
    put(aws, b"hello", key="run/file.json")
    assert read(aws, f"s3://{BUCKET}/run/file.json") == b"hello"


def test_a_missing_member_names_the_archive_and_the_member(aws: LoopbackAws) -> None:
    put(aws, archive(("cloudtrain-result.json", b"{}")))
    with pytest.raises(ProviderError) as error:
        read(aws, f"{ARCHIVE}#cloudtrain-bench.json")
    assert (
        str(error.value)
        == f"{ARCHIVE}#cloudtrain-bench.json: the job's archive has no cloudtrain-bench.json; the job did not write it."
    )


def test_a_traversing_name_is_never_matched_nor_written(
    aws: LoopbackAws, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    put(aws, archive(("../../cloudtrain-bench.json", b"evil"), ("/etc/cloudtrain-bench.json", b"evil")))
    with pytest.raises(ProviderError, match=r"has no cloudtrain-bench\.json"):
        read(aws, f"{ARCHIVE}#cloudtrain-bench.json")
    assert list(tmp_path.iterdir()) == []


def test_a_link_in_place_of_the_member_is_refused(aws: LoopbackAws) -> None:
    link = tarfile.TarInfo("cloudtrain-bench.json")
    link.type = tarfile.SYMTYPE
    link.linkname = "/etc/passwd"
    put(aws, archive(link))
    with pytest.raises(ProviderError, match="is not a regular file"):
        read(aws, f"{ARCHIVE}#cloudtrain-bench.json")


def test_a_member_over_the_bound_is_refused_before_it_is_read(
    aws: LoopbackAws, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(download, "MAX_MEMBER_BYTES", 10)
    put(aws, archive(("cloudtrain-bench.json", b"x" * 11)))
    with pytest.raises(ProviderError, match="has 11 bytes, more than the 10 read back"):
        read(aws, f"{ARCHIVE}#cloudtrain-bench.json")


def test_a_corrupt_archive_is_a_clear_error(aws: LoopbackAws) -> None:
    put(aws, b"not a gzip stream")
    with pytest.raises(ProviderError, match="the job's archive cannot be read"):
        read(aws, f"{ARCHIVE}#cloudtrain-bench.json")


def test_local_reads_the_file_and_names_a_missing_one(tmp_path: Path) -> None:
    (tmp_path / "cloudtrain-bench.json").write_text("{}")
    provider = reader(local.provider)
    assert provider.read_output(planned(), str(tmp_path / "cloudtrain-bench.json")) == b"{}"
    with pytest.raises(ProviderError, match="the job wrote no such file"):
        provider.read_output(planned(), str(tmp_path / "missing.json"))


def gcs_put(name: str, data: bytes) -> str:
    """Write ``data`` to the fake bucket as a job would, and return its ``gs://`` URI."""
    from google.cloud import storage

    storage.Client().bucket(GCS_BUCKET).blob(name).upload_from_string(data)
    return f"gs://{GCS_BUCKET}/{name}"


def gcs_read(uri: str) -> bytes:
    vertex_plan = plan(load_spec(EXAMPLE, ()), "vertex")
    return reader(vertex.provider).read_output(vertex_plan, uri, clients=VertexClients(sleep=pytest.fail))


@pytest.mark.usefixtures("fake_gcs")
def test_vertex_reads_the_object_the_job_wrote() -> None:
    assert gcs_read(gcs_put("run/cloudtrain-bench.json", b'{"a": 1}')) == b'{"a": 1}'


@pytest.mark.usefixtures("fake_gcs")
def test_vertex_names_a_missing_object() -> None:
    uri = f"gs://{GCS_BUCKET}/run/cloudtrain-bench.json"
    with pytest.raises(ProviderError) as error:
        gcs_read(uri)
    assert str(error.value) == f"{uri}: the job wrote no such file."


@pytest.mark.usefixtures("fake_gcs")
def test_vertex_refuses_an_object_over_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vertex_download, "MAX_BYTES", 10)
    with pytest.raises(ProviderError, match="more than the 10 bytes read back"):
        gcs_read(gcs_put("run/big.json", b"x" * 11))
