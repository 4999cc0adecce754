"""Run the real ``cloudtrain`` entry point in-process and capture what it prints."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from cloudtrain.cli import main


@dataclass
class Result:
    code: int
    out: str
    err: str

    @property
    def errors(self) -> list[str]:
        """The ``Error: ...`` lines, without the prefix."""
        return [line.removeprefix("Error: ") for line in self.err.splitlines() if line.startswith("Error: ")]


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., Result]:
    """``run_cli("plan", "job.yaml", "--json")`` -> exit code, stdout, stderr."""

    def run(*args: str) -> Result:
        with pytest.raises(SystemExit) as exit_info:
            main(list(args))
        captured = capsys.readouterr()
        return Result(int(exit_info.value.code or 0), captured.out, captured.err)

    return run
