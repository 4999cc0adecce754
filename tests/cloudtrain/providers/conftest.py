"""The clouds on loopback, as fixtures for every provider test below this folder.

Each service starts once per test session and is emptied before every test that uses
it; the fixture points cloudtrain at it through the variable a user would set:

- ``fake_vertex``: a fake Vertex AI JobService over gRPC (``CLOUDTRAIN_VERTEX_ENDPOINT``);
- ``fake_logging``: a fake Cloud Logging ``entries:list`` over HTTP
  (``CLOUDTRAIN_VERTEX_LOGGING_ENDPOINT``);
- ``fake_gcs``: gcp-storage-emulator with the example job's bucket (``STORAGE_EMULATOR_HOST``);
- ``no_google_credentials``: no Application Default Credentials anywhere;
- ``aws``: moto (S3, CloudWatch Logs) and the fake SageMaker, with a user's AWS environment
  (``AWS_ENDPOINT_URL_*``, dummy credentials) pointing at them; botocore's waits between
  retries are recorded in ``aws.sleeps`` instead of slept.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from tests.cloudtrain.providers.fakes.sagemaker_aws import LoopbackAws
from tests.cloudtrain.providers.fakes.vertex_jobservice import FakeJobService
from tests.cloudtrain.providers.fakes.vertex_logging import FakeLogging
from tests.cloudtrain.providers.fakes.vertex_storage import FakeStorage

VERTEX_ENDPOINTS = (
    "CLOUDTRAIN_VERTEX_ENDPOINT",
    "CLOUDTRAIN_VERTEX_LOGGING_ENDPOINT",
    "STORAGE_EMULATOR_HOST",
)


@pytest.fixture(scope="session")
def google_fakes() -> Iterator[dict[str, tuple[Any, str]]]:
    """The Google fakes, serving: the variable that points cloudtrain at each -> (fake, address)."""
    fakes = {
        "CLOUDTRAIN_VERTEX_ENDPOINT": FakeJobService(),
        "CLOUDTRAIN_VERTEX_LOGGING_ENDPOINT": FakeLogging(),
        "STORAGE_EMULATOR_HOST": FakeStorage(),
    }
    with contextlib.ExitStack() as serving:
        yield {variable: (fake, serving.enter_context(fake.serve())) for variable, fake in fakes.items()}


@pytest.fixture(scope="session")
def loopback_aws() -> Iterator[LoopbackAws]:
    aws = LoopbackAws().start()
    yield aws
    aws.stop()


@pytest.fixture
def fake_vertex(google_fakes: dict[str, tuple[Any, str]], monkeypatch: pytest.MonkeyPatch) -> FakeJobService:
    """A fake JobService on loopback, used by every JobServiceClient cloudtrain creates."""
    fake: FakeJobService = _emptied(google_fakes, "CLOUDTRAIN_VERTEX_ENDPOINT", monkeypatch)
    return fake


@pytest.fixture
def fake_logging(google_fakes: dict[str, tuple[Any, str]], monkeypatch: pytest.MonkeyPatch) -> FakeLogging:
    """A fake Cloud Logging on loopback, used by every log reader cloudtrain creates."""
    fake: FakeLogging = _emptied(google_fakes, "CLOUDTRAIN_VERTEX_LOGGING_ENDPOINT", monkeypatch)
    return fake


@pytest.fixture
def fake_gcs(google_fakes: dict[str, tuple[Any, str]], monkeypatch: pytest.MonkeyPatch) -> str:
    """gcp-storage-emulator on loopback with an empty ``fakes.vertex_storage.BUCKET``; its URL."""
    _emptied(google_fakes, "STORAGE_EMULATOR_HOST", monkeypatch)
    return google_fakes["STORAGE_EMULATOR_HOST"][1]


def _emptied(fakes: dict[str, tuple[Any, str]], variable: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The fake behind ``variable``, emptied, with ``variable`` pointing cloudtrain at it."""
    fake, address = fakes[variable]
    fake.reset()
    monkeypatch.setenv(variable, address)
    return fake


@pytest.fixture
def no_google_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """No ADC anywhere: no key file, an empty gcloud config, and no reachable metadata server."""
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path_factory.mktemp("gcloud")))
    monkeypatch.setenv("GCE_METADATA_HOST", "127.0.0.1:9")
    monkeypatch.setenv("GCE_METADATA_IP", "127.0.0.1:9")
    for name in VERTEX_ENDPOINTS:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def aws(loopback_aws: LoopbackAws, monkeypatch: pytest.MonkeyPatch) -> LoopbackAws:
    """Empty loopback AWS, and a user's AWS environment pointing at it."""
    loopback_aws.reset()
    loopback_aws.install(monkeypatch)
    loopback_aws.record_retry_waits(monkeypatch)
    return loopback_aws
