"""pytest fixtures that stand up the Vertex backend's loopback services and point cloudtrain at them.

Each fixture sets the documented endpoint variable for the duration of one test:
``CLOUDTRAIN_VERTEX_ENDPOINT`` (fake JobService over gRPC), ``CLOUDTRAIN_VERTEX_LOGGING_ENDPOINT``
(fake Cloud Logging over HTTP) and ``STORAGE_EMULATOR_HOST`` (gcp-storage-emulator). Import the ``*_fixture`` functions into a
test module to use the fixtures by their short names.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypeVar

import pytest
from fakes.vertex_jobservice import FakeJobService
from fakes.vertex_logging import FakeLogging
from gcp_storage_emulator.server import create_server

Fake = TypeVar("Fake", FakeJobService, FakeLogging)
BUCKET = "my-bucket"  # the bucket of examples/binary_classifier/job.yaml's vertex.storage_root


@pytest.fixture(name="fake_vertex")
def fake_vertex_fixture(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeJobService]:
    """A fake JobService on loopback, used by every JobServiceClient cloudtrain creates."""
    yield from _serving(FakeJobService(), "CLOUDTRAIN_VERTEX_ENDPOINT", monkeypatch)


@pytest.fixture(name="fake_logging")
def fake_logging_fixture(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLogging]:
    """A fake Cloud Logging on loopback, used by every log reader cloudtrain creates."""
    yield from _serving(FakeLogging(), "CLOUDTRAIN_VERTEX_LOGGING_ENDPOINT", monkeypatch)


def _serving(fake: Fake, variable: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Fake]:
    with fake.serve() as address:
        monkeypatch.setenv(variable, address)
        yield fake


@pytest.fixture(name="fake_gcs")
def fake_gcs_fixture(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """gcp-storage-emulator in memory on loopback with ``BUCKET``; yields its URL."""
    server = create_server("127.0.0.1", 0, in_memory=True, default_bucket=BUCKET)
    server.start()
    # The emulator binds port 0 itself and has no public accessor for the port it got.
    url = f"http://127.0.0.1:{server._api._httpd.server_address[1]}"
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", url)
    yield url
    server.stop()


@pytest.fixture(name="no_google_credentials")
def no_google_credentials_fixture(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """No ADC anywhere: no key file, an empty gcloud config, and no reachable metadata server."""
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path_factory.mktemp("gcloud")))
    monkeypatch.setenv("GCE_METADATA_HOST", "127.0.0.1:9")
    monkeypatch.setenv("GCE_METADATA_IP", "127.0.0.1:9")
    for name in ("CLOUDTRAIN_VERTEX_ENDPOINT", "CLOUDTRAIN_VERTEX_LOGGING_ENDPOINT", "STORAGE_EMULATOR_HOST"):
        monkeypatch.delenv(name, raising=False)
