"""Plans for the Kubernetes provider, and the fake API server reached through a real kubeconfig.

Until the provider is registered, ``planning`` reaches it through ``PlanningFacts``: the
facts ``planning.plan`` reads of a provider (no machine catalog, ``gs://`` storage, no
runtime limit), registered for the test and removed after it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, cast

import pytest
import yaml

from cloudtrain.api import plan
from cloudtrain.planning import Plan
from cloudtrain.providers import registry
from cloudtrain.providers.base import Provider
from cloudtrain.spec import JobSpec
from tests.cloudtrain.providers.fakes.kubernetes_api import TOKEN, FakeKubernetes

BUNDLE = "gs://bucket/demo/code/0123456789abcdef.tar.gz"
IMAGE = "us-docker.pkg.dev/my-project/train/cloudtrain-gpu:1"

MakePlan = Callable[..., Plan]


class PlanningFacts:
    """What ``planning.plan`` asks of the kubernetes provider; render, submit and the rest are not here."""

    name = "kubernetes"
    title = "Kubernetes"
    schemes = ("gs://",)
    machine_catalog = False
    billed = True
    max_runtime_s = None
    max_runtime_field = ""
    unsupported: Mapping[str, str] = MappingProxyType({})
    catalog_dir = None
    color = "#326ce5"

    def region(self, spec: JobSpec) -> str:
        return ""

    def storage_root(self, spec: JobSpec) -> str:
        return spec.storage.root

    def check(self, spec: JobSpec) -> list[str]:
        return []


@pytest.fixture
def make_plan() -> Iterator[MakePlan]:
    """A kubernetes plan of a small spec; keywords override the spec's fields."""
    registry.register(cast(Provider, PlanningFacts()))

    def make(*, run_id: str | None = "run-1", **fields: Any) -> Plan:
        values: dict[str, Any] = {
            "name": "demo",
            "code": {"module": "trainer.task"},
            "storage": {"root": "gs://bucket/demo"},
            "image": IMAGE,
            "resources": {"hosts": 2},
        }
        values.update(fields)
        return plan(JobSpec(**values), "kubernetes").with_bundle(BUNDLE).with_run(run_id)

    yield make
    registry.unregister("kubernetes")


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
