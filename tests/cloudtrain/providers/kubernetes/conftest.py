"""Plans for the Kubernetes provider (the fake API server is ``fake_cluster``, in the providers' conftest)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from cloudtrain.api import plan
from cloudtrain.planning import Plan
from cloudtrain.spec import JobSpec

BUNDLE = "gs://bucket/demo/code/0123456789abcdef.tar.gz"
IMAGE = "us-docker.pkg.dev/my-project/train/cloudtrain-gpu:1"

MakePlan = Callable[..., Plan]


@pytest.fixture
def make_plan() -> MakePlan:
    """A kubernetes plan of a small spec; keywords override the spec's fields (``kubernetes=`` its section)."""

    def make(*, run_id: str | None = "run-1", bundle: str = BUNDLE, **fields: Any) -> Plan:
        values: dict[str, Any] = {
            "name": "demo",
            "code": {"module": "trainer.task"},
            "storage": {"root": "gs://bucket/demo"},
            "image": IMAGE,
            "resources": {"hosts": 2},
        }
        values.update(fields)
        return plan(JobSpec(**values), "kubernetes").with_bundle(bundle).with_run(run_id)

    return make
