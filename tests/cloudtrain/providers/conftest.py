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
  retries are recorded in ``aws.sleeps`` instead of slept;
- ``fake_cluster``: a fake Kubernetes API server with the JobSet CRD, reached through a
  kubeconfig (``$KUBECONFIG``) whose current context ``fake`` has the namespace ``training``.

And for the tests that train on this machine:

- ``project``: a copy of the example project, with a private local provider home
  (``CLOUDTRAIN_LOCAL_HOME``) whose runs are stopped when the test ends;
- ``tuning_project``: the same of the sweep example, whose sweeps are cancelled too;
- ``private_tmpdir``: a ``TMPDIR`` of the test's own, for what the replicas write there.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cloudtrain.providers.fakes.cloud_quotas import FakeCloudQuotas
from tests.cloudtrain.providers.fakes.kubernetes_api import TOKEN, FakeKubernetes
from tests.cloudtrain.providers.fakes.sagemaker_aws import LoopbackAws
from tests.cloudtrain.providers.fakes.vertex_jobservice import FakeJobService
from tests.cloudtrain.providers.fakes.vertex_logging import FakeLogging
from tests.cloudtrain.providers.fakes.vertex_storage import FakeStorage
from tests.cloudtrain.providers.test_local_launcher import stop_runs

VERTEX_ENDPOINTS = (
    "CLOUDTRAIN_VERTEX_ENDPOINT",
    "CLOUDTRAIN_VERTEX_QUOTAS_ENDPOINT",
    "CLOUDTRAIN_VERTEX_LOGGING_ENDPOINT",
    "STORAGE_EMULATOR_HOST",
)


@pytest.fixture(scope="session")
def google_fakes() -> Iterator[dict[str, tuple[Any, str]]]:
    """The Google fakes, serving: the variable that points cloudtrain at each -> (fake, address)."""
    fakes = {
        "CLOUDTRAIN_VERTEX_ENDPOINT": FakeJobService(),
        "CLOUDTRAIN_VERTEX_QUOTAS_ENDPOINT": FakeCloudQuotas(),
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
def fake_quotas(google_fakes: dict[str, tuple[Any, str]], monkeypatch: pytest.MonkeyPatch) -> FakeCloudQuotas:
    """A fake Cloud Quotas API on loopback, used by every CloudQuotasClient cloudtrain creates."""
    fake: FakeCloudQuotas = _emptied(google_fakes, "CLOUDTRAIN_VERTEX_QUOTAS_ENDPOINT", monkeypatch)
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


@pytest.fixture(scope="session")
def kubernetes_fake() -> Iterator[tuple[FakeKubernetes, str]]:
    fake = FakeKubernetes()
    with fake.serve() as url:
        yield fake, url


@pytest.fixture
def fake_cluster(
    kubernetes_fake: tuple[FakeKubernetes, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> FakeKubernetes:
    """The emptied fake, and ``$KUBECONFIG`` naming it as context ``fake`` with namespace ``training``."""
    fake, url = kubernetes_fake
    fake.reset()
    kubeconfig = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "fake", "cluster": {"server": url}}],
        "users": [{"name": "tester", "user": {"token": TOKEN}}],
        "contexts": [
            {"name": "fake", "context": {"cluster": "fake", "user": "tester", "namespace": "training"}},
            {"name": "other", "context": {"cluster": "fake", "user": "tester"}},
        ],
        "current-context": "fake",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(kubeconfig))
    monkeypatch.setenv("KUBECONFIG", str(path))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    return fake


@pytest.fixture
def project(tmp_path: Path, example_job: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A copy of the example (outputs land next to its job.yaml) and a private local home.

    Whatever a failing test left running there is cancelled, so no replica outlives its test.
    """
    shutil.copytree(example_job.parent, tmp_path / "project", ignore=shutil.ignore_patterns("outputs"))
    monkeypatch.setenv("CLOUDTRAIN_LOCAL_HOME", str(tmp_path / "home"))
    yield tmp_path / "project"
    stop_runs(tmp_path / "home")


@pytest.fixture
def tuning_project(tmp_path: Path, example_job: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A copy of the sweep example and a private local home; its sweeps and runs are stopped after the test."""
    from cloudtrain.providers import local

    shutil.copytree(
        example_job.parents[1] / "tuning", tmp_path / "project", ignore=shutil.ignore_patterns("outputs")
    )
    monkeypatch.setenv("CLOUDTRAIN_LOCAL_HOME", str(tmp_path / "home"))
    yield tmp_path / "project"
    for folder in sorted((tmp_path / "home" / "sweeps").glob("*")):
        local.provider.attach(f"local-sweep:{folder.name}").cancel()
    stop_runs(tmp_path / "home")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private local home; whatever a failing test left running there is cancelled after it."""
    monkeypatch.setenv("CLOUDTRAIN_LOCAL_HOME", str(tmp_path / "home"))
    yield tmp_path / "home"
    stop_runs(tmp_path / "home")


@pytest.fixture
def private_tmpdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``TMPDIR``, for the test and the processes it starts, in the test's own folder."""
    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    return tmp_path / "tmp"
