"""The CLI's start-up path imports no heavy module (DESIGN.md: the import boundary).

Each command runs in a fresh interpreter under ``python -X importtime``; the test fails
if TensorFlow, Keras, JAX, a Google Cloud or AWS SDK, or matplotlib was imported.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

HEAVY = re.compile(
    r"\|\s+(tensorflow|keras|jax|google\.cloud|google\.auth|grpc|sagemaker|boto3|botocore|matplotlib)(\.|\s*$)"
)


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["validate", "{job}"],
        ["plan", "{job}", "--provider", "vertex", "--json"],
        ["schema"],
        ["render", "{job}", "--provider", "vertex"],
        ["render", "{job}", "--provider", "sagemaker"],
        ["submit", "{job}", "--provider", "vertex", "--dry-run"],
        ["submit", "{job}", "--provider", "sagemaker", "--dry-run"],
        ["submit", "{job}", "--provider", "local", "--dry-run"],
        ["submit", "{job}", "--provider", "sagemaker", "--dry-run", "--throughput", "1@t4"],
        ["cost", "{job}", "--throughput", "1200@a100-40gb"],
        ["cost", "{job}", "--throughput", "1200@a100-40gb", "--json"],
        ["prices", "--help"],
        ["doctor", "--help"],
        ["check", "--provider", "local"],
        ["list"],
        ["list", "--provider", "local", "--json"],
        ["bench", "--help"],
        ["history", "--help"],
    ],
    ids=lambda args: " ".join(a for a in args if a != "{job}"),
)
def test_command_imports_nothing_heavy(args: list[str], example_job, tmp_path) -> None:
    argv = [a.replace("{job}", str(example_job)) for a in args]
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "cloudtrain", *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    heavy = sorted({m.group(1) for m in HEAVY.finditer(proc.stderr.replace("\n", " \n"))})
    assert heavy == []


def test_import_cloudtrain_and_its_job_types_loads_no_pydantic() -> None:
    """``cloudtrain.Job``, ``JobStatus`` and ``Progress`` are for type hints: they load no spec machinery."""
    program = (
        "import sys, cloudtrain; cloudtrain.Job, cloudtrain.JobStatus, cloudtrain.Progress; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'pydantic', 'yaml', 'rich', 'click'}))"
    )
    proc = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stdout.strip()) == (0, "[]"), proc.stderr[-2000:]


def test_cost_table_that_fits_is_drawn_without_rich(example_job, tmp_path) -> None:
    """rich's import and layout were a sixth of ``cloudtrain cost``; a table that fits whole needs neither."""
    program = (
        "import sys\nfrom cloudtrain.cli import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        "print('rich' in sys.modules, file=sys.stderr)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", program, "cost", str(example_job), "--throughput", "1200@a100-40gb"],
        capture_output=True,
        text=True,
        env={**os.environ, "XDG_CACHE_HOME": str(tmp_path)},
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "provider" in proc.stdout.splitlines()[0]  # the table's header
    assert proc.stderr.strip().splitlines()[-1] == "False"


@pytest.mark.parametrize(
    ("call", "settled"),
    [
        ("main()", True),  # the process's own command line: its imports are settled
        ("main(sys.argv[1:])", False),  # a caller's argv (tests, scripts): the collector is left alone
    ],
)
def test_a_command_process_freezes_its_imports_and_keeps_collecting(
    call: str, settled: bool, example_job, tmp_path
) -> None:
    program = (
        "import atexit, gc, sys\nfrom cloudtrain.cli import main\n"
        "atexit.register(lambda: print(gc.get_freeze_count() > 0, gc.isenabled(), file=sys.stderr))\n"
        f"{call}\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", program, "validate", str(example_job)],
        capture_output=True,
        text=True,
        env={**os.environ, "XDG_CACHE_HOME": str(tmp_path)},
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "is valid" in proc.stdout
    assert proc.stderr.split() == [str(settled), "True"]


# A pydantic plugin (https://docs.pydantic.dev/latest/concepts/plugins/): it tells each model it sees.
PYDANTIC_PLUGIN = (
    "import sys\n"
    "class Plugin:\n"
    "    def new_schema_validator(self, schema, schema_type, path, kind, config, settings):\n"
    "        print('plugin saw', path.name, file=sys.stderr)\n"
    "        return None, None, None\n"
    "plugin = Plugin()\n"
)


@pytest.mark.parametrize("with_plugin", [False, True])
def test_pydantic_looks_for_plugins_only_where_a_package_declares_one(
    with_plugin: bool, example_job, tmp_path
) -> None:
    """With no ``pydantic`` entry point the look-up is skipped; an installed plugin is still found and used.

    Either way the variable that skips it is gone once the command's modules are imported.
    """
    site = tmp_path / "site-packages"
    (site / "spy_plugin-0.1.dist-info").mkdir(parents=True)
    if with_plugin:
        (site / "spy_plugin-0.1.dist-info" / "entry_points.txt").write_text(
            "[pydantic]\nspy = spy_plugin:plugin\n"
        )
        (site / "spy_plugin.py").write_text(PYDANTIC_PLUGIN)
    program = (
        "import os, sys\nfrom cloudtrain.cli import main\n"
        "sys.argv = ['cloudtrain', 'validate', sys.argv[1]]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "from pydantic.plugin import _loader\n"
        "print(_loader._plugins is not None, os.environ.get('PYDANTIC_DISABLE_PLUGINS'), file=sys.stderr)"
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    env.pop("PYDANTIC_DISABLE_PLUGINS", None)
    env["PYTHONPATH"] = os.pathsep.join([str(site), env.get("PYTHONPATH", "")])
    proc = subprocess.run(
        [sys.executable, "-c", program, str(example_job)], capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    seen = [line for line in proc.stderr.splitlines() if line.startswith("plugin saw")]
    # whether pydantic walked the installed distributions, and what the command leaves in the
    # environment its child processes inherit: nothing
    walked, left = proc.stderr.splitlines()[-1].split()
    if with_plugin:
        assert "plugin saw JobSpec" in seen
        assert (walked, left) == ("True", "None")
    else:
        assert (seen, walked, left) == ([], "False", "None")
