"""Hostile specs end in one clean ``SpecError`` per problem, quickly and in little memory.

The table is generated: every numeric field against every hostile number, every named
string against every hostile string, then the YAML-level attacks written out.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cloudtrain.errors import SpecError
from cloudtrain.specfile import MAX_SPEC_BYTES, load_spec, load_yaml, parse_spec

BASE = "name: hostile-job\ncode: {module: trainer.task}\n"

# Field -> the section lines that put VALUE there.
NUMERIC_FIELDS = [
    "resources.hosts",
    "resources.per_host",
    "resources.disk_gb",
    "training.epochs",
    "training.steps_per_epoch",
    "training.examples_per_epoch",
    "training.per_replica_batch",
    "training.global_batch",
    "training.model_parallel",
    "training.learning_rate.base",
    "training.learning_rate.warmup_epochs",
    "limits.max_runtime",
    "limits.max_cost_usd",
    "limits.max_pending",
    "resources.capacity.max_wait",
    "sagemaker.max_retries",
]
HOSTILE_NUMBERS = [
    (".inf", "finite number"),  # YAML infinity
    ("-.inf", ""),  # negative infinity: below every minimum
    (".nan", "finite number"),  # NaN compares false with every bound
    ("1" * 19, ""),  # past 18 digits
    ("9" * 5000, "18 digits"),  # past Python's 4,300-digit int() limit
    ("yes", ""),  # YAML 1.1 boolean, a string here
    ("1e400", ""),  # overflows to infinity as a float
]
TEXT_FIELDS = ["image", "code.source_dir", "storage.root", "resources.capacity.name"]
HOSTILE_TEXT = [
    ('""', "empty"),  # nothing
    ('"   "', "empty"),  # only spaces
    ('"a\\nb"', "control character"),  # newline
    ('"a\\tb"', "control character"),  # tab
    ('"a\\0b"', "control character"),  # NUL byte
]
RESERVED_ENV = [
    "TF_CONFIG",
    "CLUSTER_SPEC",
    "CLOUDTRAIN_JOB",
    "AIP_MODEL_DIR",
    "SM_MODEL_DIR",
    "TRAINING_JOB_NAME",
]
BAD_SHAPES = [
    ("vertex.region", "us central1", "Google Cloud region"),  # space
    ("vertex.region", "evil.example.com/x", "Google Cloud region"),  # a host name
    ("vertex.region", "US-CENTRAL1", "Google Cloud region"),  # upper case
    ("vertex.region", "us-central", "Google Cloud region"),  # no number
    ("sagemaker.region", "useast1", "AWS region"),  # no dashes
    ("sagemaker.region", "us-east-1.evil", "AWS region"),  # a host name
    ("sagemaker.region", "us-east-one", "AWS region"),  # no number
    ("vertex.project", "abc", "project ID"),  # too short
    ("vertex.project", "My-Project", "project ID"),  # upper case
    ("vertex.project", "1project", "project ID"),  # starts with a digit
    ("vertex.project", "project-", "project ID"),  # ends with '-'
    ("vertex.project", "p" * 31, "project ID"),  # too long
    ("vertex.service_account", "trainer", "email"),  # no domain
    ("vertex.service_account", "a b@c.d", "email"),  # space
    ("storage.root", "gs://bucket/../other", "'..' segment"),  # escapes the prefix
    ("storage.root", "gs://bucket/a/..", "'..' segment"),  # trailing '..'
    ("storage.root", "s3://bucket/a/../b", "'..' segment"),  # S3
    ("storage.root", "gs://bucket/a b", "not a valid bucket URI"),  # a space
    ("vertex.storage_root", "gs://bucket/../x", "'..' segment"),  # provider override too
    ("sagemaker.storage_root", "s3://bucket/../x", "'..' segment"),  # provider override too
    ("code.script", "", "empty"),  # no script
]


def _yaml_at(field: str, value: str) -> str:
    """BASE with ``field: value`` added, nested by indentation."""
    parts = field.split(".")
    lines = [f"{'  ' * depth}{part}:" for depth, part in enumerate(parts[:-1])]
    lines.append(f"{'  ' * (len(parts) - 1)}{parts[-1]}: {value}")
    base = BASE
    if parts[0] == "code":
        base = "name: hostile-job\n"
        lines.insert(1, "  module: trainer.task" if parts[1] != "script" else "")
    return base + "\n".join(lines) + "\n"


def _cases() -> list[tuple[str, str, str]]:
    cases = [
        (_yaml_at(field, value), field, fragment)
        for field in NUMERIC_FIELDS
        for value, fragment in HOSTILE_NUMBERS
    ]
    cases += [
        (_yaml_at(field, value), field, fragment) for field in TEXT_FIELDS for value, fragment in HOSTILE_TEXT
    ]
    cases += [(_yaml_at(f"env.{name}", "x"), "env", "rename it") for name in RESERVED_ENV]
    cases += [(_yaml_at(field, json.dumps(value)), field, fragment) for field, value, fragment in BAD_SHAPES]
    cases += [
        (_yaml_at("resources.hosts", "2000"), "resources.hosts", "<= 1024"),  # cloudtrain limit
        (_yaml_at("resources.per_host", "65"), "resources.per_host", "<= 64"),  # cloudtrain limit
        (_yaml_at("training.epochs", "1000001"), "training.epochs", "<= 1000000"),  # cloudtrain limit
        (_yaml_at("training.global_batch", str(2**31)), "training.global_batch", "<= 2147483647"),  # int32
        (_yaml_at("limits.max_runtime", "366d"), "limits.max_runtime", "365d"),  # cloudtrain limit
        (_yaml_at("limits.max_runtime", "9" * 400 + "d"), "limits.max_runtime", "finite"),  # float overflow
        (_yaml_at("limits.max_cost_usd", "1e12"), "limits.max_cost_usd", "<= 1e+07"),  # cloudtrain limit
        (
            BASE + "training:\n  epochs: 3\n  learning_rate: {warmup_epochs: 5}\n",
            "training",
            "longer than epochs=3",
        ),  # warm-up past the end of training
        (
            BASE + "resources:\n  hosts: 2\nresources:\n  per_host: 8\n",
            "resources",
            "defined twice (lines 3 and 5)",
        ),
        (BASE + "resources: {hosts: 2, hosts: 3}\n", "resources.hosts", "defined twice (lines 3 and 3)"),
        (BASE + "name: other\n", "name", "defined twice (lines 1 and 3)"),  # top level
        (
            BASE + "storage:\n  root: gs://bucket/a\n    b\n",
            "storage.root",
            "not a valid bucket URI",
        ),  # folded
    ]
    for value in ("yes", "no", "on", "off", "y", "n", "YES", "No", "ON", "Off", "Y", "N"):
        cases.append((_yaml_at("resources.hosts", value), "resources.hosts", "must be a whole number"))
    return cases


CASES = _cases()
FILE_CASES = [
    (
        "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
        + "".join(
            f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(8)
        ),
        "too many aliases/nodes (a YAML alias bomb?)",
    ),  # billion laughs
    ("x: &x [1]\n" + "".join(f"k{i}: *x\n" for i in range(101)), "too many aliases/nodes"),  # many aliases
    ("a: " + "[" * 100 + "]" * 100 + "\n", "nested deeper than 64 levels"),  # flow nesting
    ("".join(f"{'  ' * i}k{i}:\n" for i in range(100)), "nested deeper than 64 levels"),  # block nesting
    ("x: !!int abc\n", "holds a value YAML cannot build"),  # explicit tag, bad text
    ("x: !!float zz\n", "holds a value YAML cannot build"),  # explicit tag, bad text
    ("x: [" + ", ".join(["1"] * 10_001) + "]\n", "too many aliases/nodes"),  # plain, but too many values
]


def test_the_table_is_large() -> None:
    assert len(CASES) + len(FILE_CASES) >= 150


def _problems(text: str) -> list[str]:
    with pytest.raises(SpecError) as error:
        parse_spec(load_yaml(text))
    return error.value.problems


@pytest.mark.parametrize(("text", "field", "fragment"), CASES)
def test_hostile_value_gives_one_clean_error(text: str, field: str, fragment: str) -> None:
    start = time.process_time()  # this process's CPU time: bounded work, however loaded the machine
    problems = _problems(text)
    assert time.process_time() - start < 2
    assert any(p.startswith((f"{field}:", f"{field} ")) and fragment in p for p in problems), problems
    assert all(len(p) < 400 for p in problems)


@pytest.mark.parametrize(("text", "fragment"), FILE_CASES)
def test_hostile_yaml_is_refused_before_it_is_built(tmp_path: Path, text: str, fragment: str) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(text)
    start = time.process_time()
    with pytest.raises(SpecError) as error:
        load_spec(path)
    assert time.process_time() - start < 2
    assert error.value.problems[0].startswith(f"{path}: ")
    assert fragment in error.value.problems[0]


@pytest.mark.parametrize("index", range(0, len(CASES), 7))
def test_the_cli_prints_one_error_line_per_problem(tmp_path: Path, run_cli, index: int) -> None:
    text, _, _ = CASES[index]
    path = tmp_path / "job.yaml"
    path.write_text(text)
    with pytest.raises(SpecError) as error:
        load_spec(path)
    result = run_cli("validate", str(path), "--provider", "vertex")
    assert result.code == 2
    assert result.errors == error.value.problems
    assert "Traceback" not in result.err


def test_a_fifo_is_refused_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "job.yaml"
    os.mkfifo(fifo)
    with pytest.raises(SpecError, match="not a regular file"):
        load_spec(fifo)


@pytest.mark.parametrize(
    ("path", "fragment"),
    [
        ("/dev/zero", "not a regular file"),  # a device that never ends
        ("/dev/null", "not a regular file"),  # a device
        ("job\0.yaml", "NUL byte"),  # NUL in the path
    ],
)
def test_special_paths_are_refused(path: str, fragment: str) -> None:
    with pytest.raises(SpecError, match=fragment):
        load_spec(path)


def test_a_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="is a folder"):
        load_spec(tmp_path)


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (b"name: x\n" + b"#" * MAX_SPEC_BYTES, "larger than 1,000,000 bytes"),  # over the size limit
        (b"name: \xff\xfe\n", "not UTF-8 text (byte 6)"),  # Latin-1 bytes
        (b"name: a\0b\n", "NUL byte at offset 7"),  # NUL in the text
    ],
)
def test_unreadable_content_is_refused(tmp_path: Path, content: bytes, fragment: str) -> None:
    path = tmp_path / "job.yaml"
    path.write_bytes(content)
    with pytest.raises(SpecError, match=re.escape(fragment)):
        load_spec(path)


def test_a_ten_megabyte_name_gives_a_short_error_quickly() -> None:
    start = time.perf_counter()
    with pytest.raises(SpecError) as error:
        parse_spec({"name": "a" * 10_000_000, "code": {"module": "trainer.task"}})
    assert time.perf_counter() - start < 2
    assert len(str(error.value)) < 300
    assert "…" in str(error.value)


def test_many_problems_are_counted_not_listed() -> None:
    data = {"name": "hostile-job", "code": {"module": "trainer.task"}, **{f"k{i}": 1 for i in range(50)}}
    with pytest.raises(SpecError) as error:
        parse_spec(data)
    assert len(error.value.problems) == 21
    assert error.value.problems[-1] == "and 30 more problems. Fix the ones above first."


def test_true_and_false_stay_booleans() -> None:
    assert load_yaml("a: true\nb: False\nc: yes\nd: off") == {"a": True, "b": False, "c": "yes", "d": "off"}


# The worst cases run in a fresh interpreter, so its peak memory is theirs alone.
WORST_CASES = {
    "alias bomb": "load_yaml(" + repr(FILE_CASES[0][0]) + ")",
    "10 MB name": "parse_spec({'name': 'a' * 10_000_000, 'code': {'module': 'trainer.task'}})",
    "1 MB spec": "load_spec(sys.argv[1])",
}


@pytest.mark.parametrize("call", WORST_CASES.values(), ids=WORST_CASES.keys())
def test_worst_cases_stay_under_200_mb(tmp_path: Path, call: str) -> None:
    path = tmp_path / "job.yaml"
    path.write_text("name: " + "a" * (MAX_SPEC_BYTES - 10) + "\n")
    script = (
        "import sys\n"
        "from cloudtrain.errors import SpecError\n"
        "from cloudtrain.specfile import load_spec, load_yaml, parse_spec\n"
        f"try:\n    {call}\nexcept SpecError:\n    pass\n"
        # VmHWM, the peak resident set of this process image: ru_maxrss would carry
        # over the (larger) pytest process that forked it.
        "print(next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')))\n"
    )
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", script, str(path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert time.perf_counter() - start < 10  # includes starting Python and importing cloudtrain
    assert int(done.stdout) < 200 * 1024  # VmHWM is in KiB
