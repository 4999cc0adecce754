"""Two submits of one spec at the same moment, against the fake JobService: what each returned."""

from __future__ import annotations

import threading
from typing import Any

import cloudtrain
from cloudtrain.providers import vertex
from tests.cloudtrain.providers.fakes.vertex_jobservice import FakeJobService


def race(fake: FakeJobService, spec: cloudtrain.JobSpec) -> list[Any]:
    """Submit ``spec`` to Vertex AI twice at once, both looking before either creates; both handles."""
    fake.create_barrier = threading.Barrier(2)  # both looks are done before either create
    start = threading.Barrier(2)
    handles: list[Any] = []

    def racer() -> None:
        start.wait()
        handles.append(
            cloudtrain.submit(spec, provider="vertex", clients=vertex.VertexClients(sleep=lambda _: None))
        )

    threads = [threading.Thread(target=racer) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return handles
