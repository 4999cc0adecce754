"""Every spec in ``spec_corpus/`` is invalid and must produce exactly the errors in its header.

Each file starts with ``# provider: P`` and one ``# error: ...`` line per expected
problem; ``cloudtrain validate FILE --provider P`` must print exactly those lines after
``Error: `` and exit with 2, without a traceback.
"""

from __future__ import annotations

from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parents[1] / "spec_corpus"
CASES = sorted(CORPUS.glob("*.yaml"))


def _header(path: Path) -> tuple[str, list[str]]:
    lines = path.read_text().splitlines()
    provider = lines[0].removeprefix("# provider: ")
    errors = [line.removeprefix("# error: ") for line in lines[1:] if line.startswith("# error: ")]
    return provider, errors


def test_corpus_is_large_enough() -> None:
    assert len(CASES) >= 40


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_bad_spec_gives_exact_errors(
    path: Path, run_cli, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo)  # messages that quote the file name use this relative path
    provider, expected = _header(path)
    result = run_cli("validate", str(path.relative_to(repo)), "--provider", provider)
    assert result.code == 2
    assert result.errors == expected
    assert "Traceback" not in result.err
    assert result.out == ""


def test_secret_values_are_never_echoed(run_cli, repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(repo)
    for path in CASES:
        if any(word in path.stem for word in ("env", "secret", "token")):
            result = run_cli("validate", str(path.relative_to(repo)), "--provider", _header(path)[0])
            assert "hunter2" not in result.err and "offline" not in result.err
            assert not any(value in result.err for value in ("EXAMPLEKEY", "hf_aBcDeF", "xoxb-1234"))
