"""``compare`` and the other ``--plot`` commands against hostile inputs: one line each, never a traceback.

Regressions of issue 40: an unwritable ``--plot`` path, ``--plot x.txt``, a result whose
``throughput`` is a number, a 4,000-digit ``hosts``, a 10,000-character argument and a
history that is a FIFO or ``/dev/zero`` ended in tracebacks or hung; ``--plot /dev/full``
reported success.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.cloudtrain.scaling.test_compare import write_run
from tests.conftest import Result

Run = Callable[..., Result]
EXAMPLE = str(Path(__file__).resolve().parents[3] / "examples" / "binary_classifier" / "job.yaml")


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    one = write_run(tmp_path / "one", replicas=1, hosts=1, epoch_s=10.0, accuracy=[0.8, 0.9])
    two = write_run(tmp_path / "two", replicas=2, hosts=2, epoch_s=6.0, accuracy=[0.7, 0.9])
    return one, two


def _one_line(result: Result, code: int, starts: str) -> None:
    assert result.code == code, result.err
    assert result.err.count("\n") == 1 and result.err.startswith(f"Error: {starts}"), result.err
    assert len(result.err) < 400 and "Traceback" not in result.err


@pytest.mark.parametrize(
    ("plot", "error"),
    [
        (
            "missing-folder/x.png",
            "--plot 'missing-folder/x.png': the folder 'missing-folder' does not exist.",
        ),
        ("x.txt", "--plot 'x.txt': matplotlib cannot draw .txt. Name it .png, .svg or .pdf."),
        ("x." + "t" * 10_000, "--plot 'x.ttttttttttttttt"),  # a 10,000-character suffix, cut short
        ("/dev/full", "/dev/full: cannot be written (No space left on device)."),  # was "Plot written"
    ],
)
def test_a_plot_that_cannot_be_written_is_an_error(
    runs: tuple[Path, Path],
    run_cli: Run,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    plot: str,
    error: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    result = run_cli("compare", *map(str, runs), "--plot", plot)
    _one_line(result, 1 if plot == "/dev/full" else 2, error)


@pytest.mark.parametrize("suffix", ["", ".png", ".svg", ".pdf"])
def test_a_plot_is_written_in_the_format_its_name_says(
    runs: tuple[Path, Path], run_cli: Run, tmp_path: Path, suffix: str
) -> None:
    picture = tmp_path / f"scaling{suffix}"
    result = run_cli("compare", *map(str, runs), "--plot", str(picture))
    assert result.code == 0, result.err
    magic = {"": b"\x89PNG", ".png": b"\x89PNG", ".svg": b"<?xml", ".pdf": b"%PDF"}[suffix]
    assert picture.read_bytes().startswith(magic)


@pytest.mark.parametrize(
    "command",
    [
        ("cost", EXAMPLE, "--throughput", "100@t4"),
        ("bench", EXAMPLE),  # checked before a single replica starts
    ],
)
def test_every_plot_option_checks_its_path_first(run_cli: Run, command: tuple[str, ...]) -> None:
    result = run_cli(*command, "--plot", "hours.txt")
    _one_line(result, 2, "--plot 'hours.txt': matplotlib cannot draw .txt.")


def test_cost_plot_to_a_full_disk_is_an_error(run_cli: Run) -> None:
    result = run_cli("cost", EXAMPLE, "--throughput", "100@t4", "--plot", "/dev/full")
    _one_line(result, 1, "/dev/full: cannot be written (No space left on device).")


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"throughput": 5}, "throughput must be an object (examples_per_sec, accelerator), not 5"),
        ({"hosts": int("9" * 4000)}, "hosts must be a whole number from 1 to 2,147,483,647"),
        ({"replicas": 2**31}, "replicas must be a whole number from 1 to 2,147,483,647, not 2147483648"),
        ({"global_batch": "32"}, "global_batch must be a whole number from 1 to 2,147,483,647, not '32'"),
        ({"devices_per_host": True}, "devices_per_host must be a whole number"),  # a boolean is no count
        ({"learning_rate": "fast"}, "learning_rate must be a finite number, not 'fast'"),
        ({"accelerator": ["t4"]}, "accelerator must be a string of at most 200 characters"),
        ({"strategy": "s" * 10_000}, "strategy must be a string of at most 200 characters"),
        ({"throughput": {"examples_per_sec": "many"}}, "throughput.examples_per_sec must be a finite number"),
        (
            {"throughput": {"examples_per_sec": -1}},
            "throughput.examples_per_sec must be a finite number >= 0",
        ),
        ({"throughput": {"accelerator": 7}}, "throughput.accelerator must be a short string"),
    ],
)
def test_a_result_of_the_wrong_shape_is_refused_by_name(
    runs: tuple[Path, Path], run_cli: Run, change: dict[str, Any], problem: str
) -> None:
    result_file = runs[1] / "cloudtrain-result.json"
    result_file.write_text(json.dumps({**json.loads(result_file.read_text()), **change}))
    result = run_cli("compare", *map(str, runs))
    _one_line(result, 1, f"{result_file} is not a cloudtrain result: {problem}")


def test_a_result_that_is_not_an_object_is_refused(runs: tuple[Path, Path], run_cli: Run) -> None:
    (runs[1] / "cloudtrain-result.json").write_text("[1, 2]")
    _one_line(
        run_cli("compare", *map(str, runs)), 1, f"{runs[1]}/cloudtrain-result.json is not a cloudtrain result"
    )


@pytest.mark.parametrize("special", ["fifo", "/dev/zero", "folder"])
@pytest.mark.parametrize("which", ["cloudtrain-history.json", "cloudtrain-result.json"])
def test_a_history_or_result_that_is_no_file_never_blocks(
    runs: tuple[Path, Path], run_cli: Run, special: str, which: str
) -> None:
    path = runs[1] / which
    path.unlink()
    if special == "fifo":
        os.mkfifo(path)
    elif special == "folder":
        path.mkdir()
    else:
        path.symlink_to(special)
    result = run_cli("compare", *map(str, runs))
    if which == "cloudtrain-result.json":  # read as a run still training: its history alone
        assert result.code == 0, result.err
        return
    problem = (
        "is a folder, not a file."
        if special == "folder"
        else "not a regular file (a FIFO, socket or device)."
    )
    _one_line(result, 1, f"{path}: {problem}")


def test_a_history_over_the_cap_is_refused(
    runs: tuple[Path, Path], run_cli: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cloudtrain.scaling import runs as scaling_runs

    monkeypatch.setattr(scaling_runs, "MAX_FILE_BYTES", 100)
    _one_line(
        run_cli("compare", *map(str, runs)), 1, f"{runs[0]}/cloudtrain-history.json: larger than 100 bytes"
    )


@pytest.mark.parametrize(
    "argument",
    [
        "a" * 10_000,  # too long to be a path: ENAMETOOLONG was a traceback
        "local:" + "a" * 10_000,  # a local job ID of no run
        "gs://bucket/" + "a" * 10_000,  # a URI
    ],
)
def test_a_10000_character_argument_is_one_short_line(
    runs: tuple[Path, Path], run_cli: Run, argument: str
) -> None:
    result = run_cli("compare", str(runs[0]), argument)
    assert result.code in (1, 2) and "Traceback" not in result.err, result.err
    assert all(len(line) < 400 for line in result.err.splitlines())


@pytest.mark.parametrize("command", ["status", "logs", "cancel", "wait"])
@pytest.mark.parametrize("job_id", ["a" * 10_000, "local:" + "a" * 10_000, "local:a\x00" + "a" * 100])
def test_an_echoed_job_id_is_cut_short(run_cli: Run, command: str, job_id: str) -> None:
    # regression: an error about a 10,000-character job id echoed all of it
    result = run_cli(command, job_id)
    assert result.code != 0 and result.err.count("\n") == 1 and len(result.err) < 400, result.err
