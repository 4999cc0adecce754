"""Shell completion through click's recipe: ``eval "$(_CLOUDTRAIN_COMPLETE=bash_source cloudtrain)"``."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Result


@pytest.mark.parametrize(
    ("shell", "line"),
    [
        ("bash", "complete -o nosort -F _cloudtrain_completion cloudtrain"),
        ("zsh", "compdef _cloudtrain_completion cloudtrain"),
        ("fish", 'complete --no-files --command cloudtrain --arguments "(_cloudtrain_completion)"'),
    ],
)
def test_the_completion_script_is_printed(
    run_cli: Callable[..., Result], monkeypatch: pytest.MonkeyPatch, shell: str, line: str
) -> None:
    monkeypatch.setenv("_CLOUDTRAIN_COMPLETE", f"{shell}_source")
    result = run_cli()
    assert result.code == 0
    assert line in [text.strip().rstrip(";") for text in result.out.splitlines()]
    assert "_CLOUDTRAIN_COMPLETE" in result.out  # the script calls back into cloudtrain


def complete(run_cli: Callable[..., Result], monkeypatch: pytest.MonkeyPatch, words: str) -> list[str]:
    """What bash would offer for the last word of ``words``, as the script asks for it."""
    monkeypatch.setenv("_CLOUDTRAIN_COMPLETE", "bash_complete")
    monkeypatch.setenv("COMP_WORDS", words)
    monkeypatch.setenv("COMP_CWORD", str(len(words.split(" ")) - 1))
    return [text for text in run_cli().out.splitlines() if text]


def test_commands_complete_lazily_registered_ones_included(
    run_cli: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert complete(run_cli, monkeypatch, "cloudtrain pl") == ["plain,plan"]
    assert complete(run_cli, monkeypatch, "cloudtrain in") == ["plain,init"]


def test_providers_and_profiles_complete(
    run_cli: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert complete(run_cli, monkeypatch, "cloudtrain plan job.yaml --provider ")[:3] == [
        "plain,local",
        "plain,vertex",
        "plain,sagemaker",
    ]
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "cloudtrain" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text("profiles: {work: {}, personal: {}, default: {}}\n")
    assert complete(run_cli, monkeypatch, "cloudtrain plan job.yaml --profile p") == ["plain,personal"]
    config.write_text("profiles: [broken\n")
    assert complete(run_cli, monkeypatch, "cloudtrain plan job.yaml --profile ") == []  # no error mid-line


def test_job_ids_complete_from_list(
    run_cli: Callable[..., Result], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CLOUDTRAIN_LOCAL_HOME", str(tmp_path))
    assert complete(run_cli, monkeypatch, "cloudtrain status ") == []  # no runs yet: nothing, no error
    for name in ("demo-20261203-120000-0a1b", "other-20261203-130000-0c1d"):
        (tmp_path / "runs" / name).mkdir(parents=True)
    assert complete(run_cli, monkeypatch, "cloudtrain logs d") == ["plain,demo-20261203-120000-0a1b"]
    assert sorted(complete(run_cli, monkeypatch, "cloudtrain wait ")) == [
        "plain,demo-20261203-120000-0a1b",
        "plain,other-20261203-130000-0c1d",
    ]
