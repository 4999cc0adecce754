"""Code upload to Cloud Storage: real google-cloud-storage against gcp-storage-emulator on loopback."""

from __future__ import annotations

from pathlib import Path

import pytest
from google.cloud import storage

from cloudtrain.errors import ProviderError
from cloudtrain.progress import Progress
from cloudtrain.providers.vertex import upload as gcs
from cloudtrain.providers.vertex.clients import cloud_storage_client
from tests.cloudtrain.providers.fakes.vertex_storage import BUCKET

pytestmark = pytest.mark.usefixtures("fake_gcs")


@pytest.fixture
def tarball(tmp_path: Path) -> Path:
    path = tmp_path / "0123456789abcdef.tar.gz"
    path.write_bytes(bytes(range(256)) * 4096)  # 1 MiB
    return path


def test_upload_once_uploads_then_skips_an_existing_object(tarball: Path) -> None:
    client = cloud_storage_client("my-project")
    uri = f"gs://{BUCKET}/demo/code/{tarball.name}"
    assert gcs.upload_once(tarball, uri, client, sleep=pytest.fail) is True
    generation = client.bucket(BUCKET).get_blob(f"demo/code/{tarball.name}").generation
    assert gcs.upload_once(tarball, uri, client, sleep=pytest.fail) is False
    assert client.bucket(BUCKET).get_blob(f"demo/code/{tarball.name}").generation == generation


def test_upload_reports_progress_to_the_callback_and_prints_nothing(
    tarball: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    uri = f"gs://{BUCKET}/code/{tarball.name}"
    seen: list[Progress] = []
    gcs.upload_once(tarball, uri, cloud_storage_client("my-project"), sleep=pytest.fail, progress=seen.append)
    assert (
        storage.Client().bucket(BUCKET).blob(f"code/{tarball.name}").download_as_bytes()
        == tarball.read_bytes()
    )
    size = tarball.stat().st_size
    assert seen[0] == Progress("upload", tarball.name, done=0, total=size)
    assert seen[-1] == Progress("upload", tarball.name, done=size, total=size)
    assert capsys.readouterr() == ("", "")  # the library draws nothing; the CLI draws the bar


def test_missing_bucket_says_how_to_create_it(tarball: Path) -> None:
    with pytest.raises(
        ProviderError, match=r"gs://no-such-bucket/code/.*gcloud storage buckets create gs://no-such-bucket"
    ):
        gcs.upload_once(
            tarball, f"gs://no-such-bucket/code/{tarball.name}", cloud_storage_client("p"), sleep=pytest.fail
        )


@pytest.mark.parametrize("uri", ["s3://bucket/key", "gs://bucket", "gs:///key"])
def test_split_uri_refuses_what_is_not_an_object_uri(uri: str) -> None:
    with pytest.raises(ProviderError, match="expected gs://BUCKET/PATH"):
        gcs.split_uri(uri)
