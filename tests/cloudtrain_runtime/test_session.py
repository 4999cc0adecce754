"""Session bookkeeping that needs no TensorFlow: where throughput was really measured."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from cloudtrain_runtime.cluster import ClusterInfo
from cloudtrain_runtime.config import from_dict
from cloudtrain_runtime.locations import Locations
from cloudtrain_runtime.session import Session
from cloudtrain_runtime.strategy import Choice
from tests.cloudtrain_runtime.harness import runtime_config


def _session(accelerator: str, device_kind: str) -> Session:
    config = from_dict(runtime_config(Path("/x"), accelerator=accelerator), "test")
    cluster = ClusterInfo("tf_config", "worker", 0, 0, True, ("a:1", "b:1"), Path("/"))
    places = Locations(Path("/b"), Path("/t"), Path("/e"), Path("/r"), {})
    modules = SimpleNamespace()
    return Session(
        config,
        cluster.with_devices(1, device_kind),
        places,
        "/",
        modules,
        modules,
        None,
        Choice("multi-worker", "test"),
        print,
    )


@pytest.mark.parametrize(
    ("accelerator", "device_kind", "measured_on"),
    [
        ("t4", "gpu", "t4"),  # real GPUs: the planned accelerator
        ("t4", "cpu", "cpu"),  # the local provider emulated the T4s on CPU devices
        ("cpu", "cpu", "cpu"),  # a CPU job
    ],
)
def test_throughput_names_the_hardware_it_ran_on(
    accelerator: str, device_kind: str, measured_on: str
) -> None:
    assert _session(accelerator, device_kind)._measured_on() == measured_on


def test_repr_shows_the_key_fields() -> None:
    assert repr(_session("t4", "gpu")) == (
        "Session(strategy='multi-worker', replicas=2, global_batch=32, task='worker_0', is_chief=True)"
    )
