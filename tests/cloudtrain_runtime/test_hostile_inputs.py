"""Every malformed environment input ends in one line naming its variable or file.

Each row is one broken input: TF_CONFIG, resourceconfig.json, CLOUDTRAIN_HOSTS,
hyperparameters.json and CLOUDTRAIN_CONFIG. The runtime must raise its own error (which
``main`` prints as one line, exiting non-zero), never another exception, never split
a string into characters where a list was expected, and never accept an inconsistent
cluster.
"""

from __future__ import annotations

import dataclasses
import json
import typing
from pathlib import Path
from typing import Any

import pytest

from cloudtrain_runtime import cluster, config, environments, main
from cloudtrain_runtime.errors import ClusterError, ConfigError, RuntimeFailure
from tests.cloudtrain_runtime.harness import runtime_config

DEEP = "[" * 100_000  # deeper than the JSON parser's recursion limit
HUGE = "9" * 5_000  # more digits than Python converts to an int
CLUSTER = {"chief": ["c:2222"], "worker": ["w0:2222", "w1:2222"]}


def _one_line(call: Any, error: type[RuntimeFailure]) -> str:
    with pytest.raises(error) as err:
        call()
    message = str(err.value)
    assert "\n" not in message and message.strip() == message and message
    return message


def _tf_config(cluster_spec: Any = None, task: Any = None) -> str:
    task = {"type": "worker", "index": 0} if task is None else task
    return json.dumps({"cluster": CLUSTER if cluster_spec is None else cluster_spec, "task": task})


# Wrong values for one pool, tried for the chief and the workers alike.
BAD_POOLS = [
    "c:2222",  # a string, not a list: never split into characters
    {"0": "c:2222"},  # TensorFlow's sparse form; Vertex never writes it
    [2222],  # not a string
    [None],  # null
    ["c"],  # no port
    ["c:0"],  # port 0
    ["c:70000"],  # port out of range
    ["c\x00:2222"],  # NUL byte
    [""],  # empty
    ["c 1:2222"],  # space
]
# Wrong values for task.index on worker 0 of CLUSTER.
BAD_INDEXES = [-1, 2, "0", 0.5, True, None, 10**30, [0], {"index": 0}]

TF_CONFIG_ROWS = [
    ("{oops", "TF_CONFIG must be JSON like"),  # not JSON
    ("[]", "TF_CONFIG must be JSON like"),  # a list
    ('"cluster"', "TF_CONFIG must be JSON like"),  # a string
    ("null", "TF_CONFIG must be JSON like"),  # null
    ("1e999", "TF_CONFIG must be JSON like"),  # a number, infinite at that
    (DEEP, "TF_CONFIG must be JSON like"),  # nested past the parser's limit
    ('{"cluster": {"worker": ["w:1"]}, "task": {"type": "worker", "index": NaN}}', "must be JSON like"),
    (f'{{"cluster": {{"worker": ["w:1"]}}, "task": {{"type": "worker", "index": {HUGE}}}}}', "JSON like"),
    (json.dumps({"cluster": [], "task": {"type": "worker"}}), "TF_CONFIG must be JSON like"),  # list cluster
    (json.dumps({"cluster": CLUSTER, "task": "worker"}), "TF_CONFIG must be JSON like"),  # string task
    (_tf_config(task={"index": 0}), "TF_CONFIG must be JSON like"),  # no task type
    (_tf_config(task={"type": 1, "index": 0}), "TF_CONFIG must be JSON like"),  # numeric type
    (_tf_config(task={"type": None}), "TF_CONFIG must be JSON like"),  # null type
    (_tf_config({**CLUSTER, "ps": ["p:1"]}), "no parameter servers"),  # parameter servers
    (_tf_config(task={"type": "evaluator", "index": 0}), "no parameter servers or evaluators"),
    (_tf_config({**CLUSTER, "master": ["m:1"]}), "names 2 chiefs"),  # chief plus master
    (_tf_config({**CLUSTER, "chief": ["c:1", "d:1"]}), "names 2 chiefs"),  # two chiefs
    (_tf_config({"worker": ["w:1", "w:1"]}), "lists 'w:1' for more than one task"),  # duplicate
    (_tf_config({"chief": ["w:1"], "worker": ["w:1"]}), "for more than one task"),  # chief is a worker
    (_tf_config(task={"type": "chief", "index": 1}), "task chief:1 is not in its cluster"),  # one chief
    (_tf_config(task={"type": "master", "index": 0}), "task master:0 is not in its cluster"),  # no master
    (_tf_config({"worker": []}), "task worker:0 is not in its cluster"),  # nobody
    # regression: index -1 made a worker rank 0, a second chief
    (_tf_config(task={"type": "worker", "index": -1}), "task worker:-1 is not in its cluster"),
    *[
        (_tf_config({**CLUSTER, kind: pool}), f"TF_CONFIG cluster.{kind} must be a list of 'host:port'")
        for kind in ("chief", "worker")
        for pool in BAD_POOLS
    ],
    *[
        (_tf_config(task={"type": "worker", "index": index}), "is not in its cluster")
        for index in BAD_INDEXES
    ],
]


@pytest.mark.parametrize(("tf_config", "message"), TF_CONFIG_ROWS)
def test_malformed_tf_config(tf_config: str, message: str) -> None:
    line = _one_line(lambda: cluster.from_environment({"TF_CONFIG": tf_config}, root="/"), ClusterError)
    assert message in line and "TF_CONFIG" in line


def _sagemaker_file(tmp_path: Path, name: str, content: str | bytes) -> str:
    """``content`` as ``/opt/ml/input/config/<name>`` under the root ``tmp_path``; returns the root."""
    path = tmp_path / "opt/ml/input/config" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return str(tmp_path)


def _resources(hosts: Any = ("algo-1", "algo-2"), current: Any = "algo-1") -> str:
    return json.dumps({"current_host": current, "hosts": list(hosts) if isinstance(hosts, tuple) else hosts})


RESOURCE_CONFIG_ROWS = [
    ("", "Cannot read"),  # empty file
    (b"\xff\xfe{}", "Cannot read"),  # not UTF-8
    ("{", "Cannot read"),  # cut off
    (DEEP, "Cannot read"),  # nested past the parser's limit
    ("NaN", "Cannot read"),  # not JSON
    ("[]", "must be a JSON object like"),  # a list
    ('"algo-1"', "must be a JSON object like"),  # a string
    (_resources(hosts="algo-1"), "hosts must be a non-empty list of host names"),  # not split
    (_resources(hosts=[]), "hosts must be a non-empty list of host names"),  # nobody
    (_resources(hosts={"algo-1": 1}), "hosts must be a non-empty list"),  # an object
    (_resources(hosts=[1, 2]), "hosts must be a non-empty list of host names"),  # numbers
    (_resources(hosts=["algo-1", None]), "hosts must be a non-empty list"),  # null
    (_resources(hosts=["algo 1"]), "hosts must be a non-empty list of host names"),  # space
    (_resources(hosts=["algo-1\x00"]), "hosts must be a non-empty list of host names"),  # NUL
    (_resources(hosts=["algo-1:8890"]), "hosts must be a non-empty list of host names"),  # a port
    (_resources(hosts=["../etc"]), "hosts must be a non-empty list of host names"),  # a path
    (json.dumps({"current_host": "algo-1"}), "hosts must be a non-empty list"),  # missing
    (_resources(hosts=("algo-1", "algo-1")), "lists host 'algo-1' more than once"),  # duplicate
    (_resources(current="algo-9"), "must list current_host among hosts"),  # not a host
    (_resources(current=1), "must list current_host among hosts"),  # a number
    (_resources(current=["algo-1"]), "must list current_host among hosts"),  # a list
    (_resources(current=None), "must list current_host among hosts"),  # null
    (json.dumps({"hosts": ["algo-1"]}), "must list current_host among hosts"),  # missing
]


@pytest.mark.parametrize(("content", "message"), RESOURCE_CONFIG_ROWS)
def test_malformed_resourceconfig(tmp_path: Path, content: str | bytes, message: str) -> None:
    root = _sagemaker_file(tmp_path, "resourceconfig.json", content)
    line = _one_line(lambda: cluster.from_environment({}, root=root), ClusterError)
    assert message in line and "resourceconfig.json" in line


HOSTS_ROWS = [
    ("algo-1", "entries must look like algo-1=127.0.0.1:41231"),  # no address
    ("algo-1=", "entries must look like"),  # empty address
    ("=127.0.0.1:5000", "entries must look like"),  # no name
    ("algo-1=127.0.0.1", "entries must look like"),  # no port
    ("algo-1=127.0.0.1:99999", "entries must look like"),  # port out of range
    ("algo-1=127.0.0.1:5000\x00", "entries must look like"),  # NUL
    ("algo-1=127.0.0.1:5000;algo-2=127.0.0.1:5001", "entries must look like"),  # wrong separator
    ("algo 1=127.0.0.1:5000", "entries must look like"),  # space in the name
    ("algo-1=127.0.0.1:5000,algo-1=127.0.0.1:5001", "maps 'algo-1' more than once"),  # twice
    ("algo-1=127.0.0.1:5000,algo-2=127.0.0.1:5000", "maps more than one host to '127.0.0.1:5000'"),
    ("algo-2=algo-1:8890", "maps more than one host to 'algo-1:8890'"),  # onto algo-1's default
]


@pytest.mark.parametrize(("hosts", "message"), HOSTS_ROWS)
def test_malformed_host_overrides(tmp_path: Path, hosts: str, message: str) -> None:
    root = _sagemaker_file(tmp_path, "resourceconfig.json", _resources())
    line = _one_line(lambda: cluster.from_environment({"CLOUDTRAIN_HOSTS": hosts}, root=root), ClusterError)
    assert message in line and "CLOUDTRAIN_HOSTS" in line


HYPERPARAMETER_ROWS = [
    ("not json", "not valid JSON"),  # mangled
    (b"\xff{}", "cannot read"),  # not UTF-8
    (DEEP, "not valid JSON (nested too deeply)"),  # nested past the parser's limit
    ("[]", "must be a JSON object of hyperparameters"),  # a list
    ('"cloudtrain_config"', "must be a JSON object of hyperparameters"),  # a string
    ("{}", "has no 'cloudtrain_config' hyperparameters"),  # nothing for the runtime
    (json.dumps({"cloudtrain_config": {"name": "x"}}), "'cloudtrain_config' must be a string"),  # object
    (json.dumps({"cloudtrain_config": 5}), "'cloudtrain_config' must be a string"),  # number
    (
        json.dumps({"cloudtrain_config": "{oops"}),
        "[cloudtrain_config]: the runtime configuration is not valid",
    ),
    (json.dumps({"cloudtrain_config_0": "{", "cloudtrain_config_2": "}"}), "skip cloudtrain_config_1"),
    (json.dumps({"cloudtrain_config_1": "{}"}), "skip cloudtrain_config_0"),  # no first piece
    (json.dumps({"cloudtrain_config_x": "{}"}), "'cloudtrain_config_x' is not a piece"),  # no number
    (json.dumps({"cloudtrain_config_0": "{", "cloudtrain_config_01": "}"}), "is not a piece"),  # 01
    (json.dumps({"cloudtrain_config_-1": "{}"}), "is not a piece"),  # negative
    (json.dumps({f"cloudtrain_config_{HUGE}": "{}"}), "is not a piece"),  # a 5,000-digit number
    (json.dumps({"cloudtrain_config_0": 5}), "is not a piece"),  # not a string
]


@pytest.mark.parametrize(("content", "message"), HYPERPARAMETER_ROWS)
def test_malformed_hyperparameters(tmp_path: Path, content: str | bytes, message: str) -> None:
    root = _sagemaker_file(tmp_path, "hyperparameters.json", content)
    line = _one_line(lambda: config.load(None, {}, root, environments.hyperparameter_files()), ConfigError)
    assert message in line and "hyperparameters.json" in line


# Values of the wrong JSON type, by what the field must be (``config.describe``).
WRONG_TYPES = {
    "an integer": ["3", 2.5, True, None, [1]],
    "an integer or null": ["3", 2.5, False, [1]],
    "a number": ["0.1", True, None, [0.1]],
    "a boolean": ["true", "yes", 1, 0, None, [True]],  # a flag is never guessed from a string or number
    "a string": [3, ["a"], None, {"a": "b"}],
    "a string or null": [3, ["a"], {"a": "b"}],
    "a list of strings": ["--epochs 3", [1], [None], {"a": "b"}],  # a string is never split
    "an object of strings": [[], "train", {"train": 1}],
    "an object of lists of strings or nulls": [[], {"k": "model"}, {"k": [1]}],
    "an object of integers or numbers or strings": [[], "lr=0.1", {"lr": True}, {"lr": None}, {"lr": [0.1]}],
}
CONFIG_TYPE_ROWS = [
    (name, value, f"key {name!r} must be {config.describe(hint)}")
    for name, hint in typing.get_type_hints(config.RuntimeConfig).items()
    if name not in {*config.SWITCH_DOCS, "hang_timeout"}  # these say which values they take (below)
    for value in WRONG_TYPES[config.describe(hint)]
]
HANG_TIMEOUT_VALUES = "a whole number of seconds from 1 to 2147483647, or 'off'"
CONFIG_VALUE_ROWS = [
    *(("hang_timeout", value, HANG_TIMEOUT_VALUES) for value in (2.5, True, None, [1], {"s": 60}, 0, "soon")),
    ("epochs", 0, "a whole number from 1 to 2147483647"),  # no training
    ("per_replica_batch", -8, "a whole number from 1"),  # negative
    ("replicas", 2**31, "a whole number from 1 to 2147483647"),  # past int32
    ("steps_per_epoch", 0, "a whole number from 1"),  # optional, but not zero
    ("learning_rate", 10**400, "a finite number"),  # too large for a float
    ("name", "a\x00b", "free of NUL characters"),  # NUL
    ("args", ["--data", "x\x00"], "free of NUL characters"),  # NUL inside a list
    ("layout_map", {"k": ["model\x00"]}, "free of NUL characters"),  # NUL inside an object
    ("name", "../../etc", "a folder name"),  # climbs out of /opt/ml/model
    ("name", "a/b", "a folder name"),  # two folders
    ("name", ".hidden", "a folder name"),  # starts with a dot
    ("data", {"../x": "gs://b/x"}, "keys are channel names"),  # channel climbs out
    ("layout_map", {"k": "model"}, "an object of lists of strings or nulls"),  # not split
    ("hparams", {"lr": 10**400}, "an object of strings and finite numbers"),  # a trial's value past a float
    ("hparams", {"opt": "ad\x00am"}, "free of NUL characters"),  # NUL in a trial's value
    ("tuned", {"lr": "double"}, "an object of kinds (int, float, str)"),  # a kind the runtime cannot parse
    # regression: a strategy cloudtrain does not have ran as the default strategy, without a word
    ("strategy", "parameter-server", "must be one of 'auto', 'one-device', 'mirrored'"),
    ("strategy_requested", "ps", "must be one of 'auto', 'one-device'"),  # what the spec asked for
    ("keras_backend", "torch", "must be one of 'tensorflow', 'jax'"),  # no such backend here
    ("mixed_precision", "fp8", "must be one of 'bf16', 'fp16', 'off'"),  # would train in float32
    *[
        (switch, value, f"key {switch!r} must be {config.switch_problem(switch, 'fast')}")
        for switch in config.SWITCH_DOCS
        for value in (2.5, None, [1], "fast", 0)  # each switch names the values it takes
    ],
]


@pytest.mark.parametrize(("field", "value", "message"), CONFIG_TYPE_ROWS + CONFIG_VALUE_ROWS)
def test_malformed_config_values(tmp_path: Path, field: str, value: Any, message: str) -> None:
    text = json.dumps(runtime_config(tmp_path, **{field: value}))
    line = _one_line(
        lambda: config.load(None, {"CLOUDTRAIN_CONFIG": text}, "/", environments.hyperparameter_files()),
        ConfigError,
    )
    assert message in line and line.startswith("CLOUDTRAIN_CONFIG: ")


def _raw(field: str, number: str) -> str:
    """A whole config with ``field`` written as the JSON number ``number``."""
    return json.dumps(runtime_config(Path("/r"), **{field: 12345})).replace("12345", number)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("NaN", "not valid JSON (NaN is not a JSON number)"),  # Python's json accepts it
        ('{"epochs": Infinity}', "not valid JSON"),  # likewise
        (DEEP, "not valid JSON (nested too deeply)"),  # nested past the parser's limit
        (_raw("epochs", HUGE), "not valid JSON"),  # a 5,000-digit number
        (_raw("epochs", "1e999"), "key 'epochs' must be an integer"),  # an infinite float
        (_raw("learning_rate", "1e999"), "key 'learning_rate' must be a finite number"),  # likewise
        ('"{}"', "must be a JSON object"),  # JSON inside a string
        (json.dumps({"name\x00": 1}), "unknown: ['name\\x00']"),  # a key with NUL, quoted
    ],
)
def test_malformed_config_text(text: str, message: str) -> None:
    line = _one_line(
        lambda: config.load(None, {"CLOUDTRAIN_CONFIG": text}, "/", environments.hyperparameter_files()),
        ConfigError,
    )
    assert message in line


def test_float_fields_still_take_integers(tmp_path: Path) -> None:
    text = json.dumps(runtime_config(tmp_path, learning_rate=1, warmup_epochs=0))
    loaded = config.load(None, {"CLOUDTRAIN_CONFIG": text}, "/", environments.hyperparameter_files())
    assert (loaded.learning_rate, loaded.warmup_epochs) == (1.0, 0.0)


def test_there_are_enough_rows() -> None:
    rows = [TF_CONFIG_ROWS, RESOURCE_CONFIG_ROWS, HOSTS_ROWS, HYPERPARAMETER_ROWS, CONFIG_TYPE_ROWS]
    assert sum(map(len, rows)) >= 40
    checked = {name for name, _, _ in CONFIG_TYPE_ROWS + CONFIG_VALUE_ROWS}
    assert checked >= {f.name for f in dataclasses.fields(config.RuntimeConfig)}  # every key


@pytest.mark.parametrize(
    ("env", "resourceconfig", "message"),
    [
        ({"TF_CONFIG": _tf_config(task={"type": "worker", "index": -1})}, None, "TF_CONFIG task worker:-1"),
        ({}, _resources(hosts="algo-1"), "resourceconfig.json: hosts must be a non-empty list"),
        ({"CLOUDTRAIN_HOSTS": "algo-1"}, _resources(), "CLOUDTRAIN_HOSTS entries must look like"),
        ({"CLOUDTRAIN_CONFIG": "[1]"}, None, "CLOUDTRAIN_CONFIG: the runtime configuration must be"),
    ],
)
def test_main_prints_one_line_and_exits_2(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    env: dict[str, str],
    resourceconfig: str | None,
    message: str,
) -> None:
    for name in ("TF_CONFIG", "CLUSTER_SPEC", "AIP_MODEL_DIR", "CLOUDTRAIN_HOSTS", "CLOUDTRAIN_DEBUG"):
        monkeypatch.delenv(name, raising=False)
    if resourceconfig is not None:
        _sagemaker_file(tmp_path, "resourceconfig.json", resourceconfig)
    monkeypatch.setenv("CLOUDTRAIN_ROOT", str(tmp_path))
    monkeypatch.setenv("CLOUDTRAIN_CONFIG", json.dumps(runtime_config(tmp_path)))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(SystemExit) as exit_:
        main.main([])
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert err.count("\n") == 1 and err.startswith("cloudtrain-runtime: error: ") and message in err
