"""Whatever the environment holds, parsing it ends in a result or the runtime's own one-line error.

Property tests over TF_CONFIG, resourceconfig.json with CLOUDTRAIN_HOSTS,
hyperparameters.json and CLOUDTRAIN_CONFIG: near-valid documents with any JSON in any
place, and arbitrary text or bytes. Any exception other than ``RuntimeFailure`` fails
the test, and so does a result that breaks the cluster's invariants.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cloudtrain_runtime import cluster, config, environments
from cloudtrain_runtime.errors import RuntimeFailure
from tests.cloudtrain_runtime.harness import runtime_config

T = TypeVar("T")
PROPERTIES = settings(max_examples=150, deadline=None, database=None)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
addresses = st.sampled_from(["a:1", "b:2222", "c:1", "127.0.0.1:5000", "[::1]:1", "a", "a:0"]) | json_values
host_names = st.sampled_from(["algo-1", "algo-2", "algo-10", "algo 1", ""]) | st.text(max_size=8)


def _outcome(call: Callable[[], T]) -> T | RuntimeFailure:
    """The result, or the runtime's own error, which must be one line; anything else propagates."""
    try:
        return call()
    except RuntimeFailure as err:
        assert "\n" not in str(err) and str(err)
        return err


def _check_cluster(found: cluster.ClusterInfo | RuntimeFailure) -> None:
    if isinstance(found, cluster.ClusterInfo):
        assert 0 <= found.rank < found.num_hosts and found.is_chief == (found.rank == 0)
        assert len(set(found.hosts)) == found.num_hosts and all(isinstance(h, str) for h in found.hosts)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("root")


def _write(root: Path, name: str, content: bytes) -> str:
    path = root / "opt/ml/input/config" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return str(root)


def _sometimes(change: st.SearchStrategy[T]) -> st.SearchStrategy[T | None]:
    """``change`` a third of the time, so that most examples stay whole and can succeed."""
    return st.one_of(st.none(), st.none(), change)


def _changed(document: dict[str, Any], change: tuple[tuple[str, ...], Any] | None) -> dict[str, Any]:
    """``document`` with the value at one key path replaced, when there is a change."""
    if change is not None:
        (*parents, last), value = change
        target = document
        for key in parents:
            target = target.setdefault(key, {}) if isinstance(target, dict) else {}
        if isinstance(target, dict):
            target[last] = value
    return document


def _tf_config(workers: int, chief: bool, task: tuple[str, int], change: Any) -> str:
    pools = {"worker": [f"w{i}:2222" for i in range(workers)], **({"chief": ["c:2222"]} if chief else {})}
    return json.dumps(_changed({"cluster": pools, "task": {"type": task[0], "index": task[1]}}, change))


TF_CONFIG_PATHS = [("cluster",), ("task",), ("task", "type"), ("task", "index")] + [
    ("cluster", pool) for pool in ("chief", "master", "worker", "ps")
]
TASKS = [
    ("worker", 0),
    ("worker", 1),
    ("worker", 2),
    ("chief", 0),
    ("chief", 1),
    ("master", 0),
    ("worker", -1),
]
tf_configs = st.builds(
    _tf_config,
    st.integers(1, 3),
    st.booleans(),
    st.sampled_from([*TASKS, ("evaluator", 0)]),
    _sometimes(st.tuples(st.sampled_from(TF_CONFIG_PATHS), st.lists(addresses, max_size=3) | json_values)),
)


@PROPERTIES
@given(text=tf_configs | st.text())
def test_tf_config(text: str) -> None:
    env = {"TF_CONFIG": text, "CLUSTER_SPEC": "{}"}
    _check_cluster(_outcome(lambda: cluster.from_environment(env, root="/")))


def _resource_config(hosts: list[str], current: int, change: Any) -> bytes:
    document = {"current_host": hosts[current % len(hosts)], "hosts": hosts}
    return json.dumps(_changed(document, change)).encode()


ALGO = ["algo-1", "algo-2", "algo-10", "algo-3"]
resource_configs = st.builds(
    _resource_config,
    st.lists(st.sampled_from(ALGO), min_size=1, max_size=4, unique=True),
    st.integers(0, 3),
    _sometimes(
        st.tuples(st.sampled_from([("hosts",), ("current_host",)]), st.lists(host_names) | json_values)
    ),
) | st.binary(max_size=40)
loopback = st.integers(5000, 5003).map(lambda port: f"127.0.0.1:{port}")
host_overrides = (
    st.just("")
    | st.lists(
        st.tuples(st.sampled_from(ALGO) | host_names, loopback | st.text(max_size=12)), max_size=4
    ).map(lambda pairs: ",".join(f"{name}={address}" for name, address in pairs))
    | st.text(st.sampled_from("algo-12=,.:; 0\x00") | st.characters(), max_size=40)
)


@PROPERTIES
@given(content=resource_configs, overrides=host_overrides)
def test_resourceconfig_and_host_overrides(root: Path, content: bytes, overrides: str) -> None:
    env = {"CLOUDTRAIN_HOSTS": overrides}
    found = _outcome(lambda: cluster.from_environment(env, root=_write(root, "resourceconfig.json", content)))
    _check_cluster(found)
    if isinstance(found, cluster.ClusterInfo):
        assert found.tf_config == {
            "cluster": {"worker": list(found.hosts)},
            "task": {"type": "worker", "index": found.rank},
        }


def _check_config(found: config.RuntimeConfig | RuntimeFailure) -> None:
    if isinstance(found, config.RuntimeConfig):
        counts = [getattr(found, name) for name in config.COUNTS]
        assert all(isinstance(n, int) and 1 <= n <= config.COUNT_MAX for n in counts if n is not None)
        assert all(
            math.isfinite(n) for n in (found.learning_rate, found.base_learning_rate, found.warmup_epochs)
        )
        assert isinstance(found.args, tuple) and all(isinstance(arg, str) for arg in found.args)


VALID = json.dumps(runtime_config(Path("/r")))


def _hyperparameters(pieces: int, whole: bool, change: Any) -> bytes:
    size = -(-len(VALID) // pieces)
    document = {f"cloudtrain_config_{i}": VALID[i * size : (i + 1) * size] for i in range(pieces)}
    document = {"cloudtrain_config": VALID} if whole else document
    return json.dumps(_changed({"epochs": "3", **document}, change)).encode()


piece_names = st.sampled_from(
    [
        "cloudtrain_config",
        "cloudtrain_config_0",
        "cloudtrain_config_1",
        "cloudtrain_config_01",
        "cloudtrain_config_x",
    ]
) | st.text(max_size=20)
hyperparameter_files = st.builds(
    _hyperparameters,
    st.integers(1, 12),
    st.booleans(),
    _sometimes(st.tuples(st.tuples(piece_names), st.sampled_from([VALID[:40], VALID[40:]]) | json_values)),
) | st.binary(max_size=40)


@PROPERTIES
@given(content=hyperparameter_files)
def test_hyperparameters(root: Path, content: bytes) -> None:
    where = _write(root, "hyperparameters.json", content)
    _check_config(_outcome(lambda: config.load(None, {}, where, environments.hyperparameter_files())))


def _config(change: Any, removed: str | None) -> str:
    values = _changed(runtime_config(Path("/r")), change)
    return json.dumps({key: value for key, value in values.items() if key != removed})


plausible = st.integers(-1, 3) | st.floats(-1, 1) | st.sampled_from(["", "a", "a/b", "x\x00"]) | json_values
configs = st.builds(
    _config,
    _sometimes(st.tuples(st.tuples(st.sampled_from(config.FIELDS)), plausible)),
    _sometimes(st.sampled_from(config.FIELDS)),
)


@PROPERTIES
@given(text=configs | st.text())
def test_cloudtrain_config(text: str) -> None:
    _check_config(
        _outcome(
            lambda: config.load(None, {"CLOUDTRAIN_CONFIG": text}, "/", environments.hyperparameter_files())
        )
    )
