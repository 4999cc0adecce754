"""``validate --json`` always answers in JSON: valid, or every problem as field, message and fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
CORPUS = sorted((REPO / "tests" / "cloudtrain" / "spec_corpus").glob("*.yaml"))


def _line(error: dict) -> str:
    """The plain error line again: the message, then the fix (unless the message is the whole line)."""
    fix = error["fix"]
    return error["message"] if fix is None or error["message"].endswith(fix) else f"{error['message']} {fix}"


def validate_json(run_cli, *args: str) -> tuple[int, dict, str]:
    result = run_cli("validate", *args, "--json")
    return result.code, json.loads(result.out), result.err


def test_a_valid_spec(run_cli, example_job: Path) -> None:
    code, answer, err = validate_json(run_cli, str(example_job), "--provider", "vertex")
    assert (code, answer["valid"], answer["provider"], err) == (0, True, "vertex", "")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (  # YAML parsing
            ("tests/cloudtrain/spec_corpus/63_yaml_syntax_error.yaml",),
            {
                "field": None,
                "message": "tests/cloudtrain/spec_corpus/63_yaml_syntax_error.yaml line 5: could not parse YAML "
                "(expected ',' or '}', but got ':').",
                "fix": "Check indentation and quoting.",
            },
        ),
        (  # pydantic validation
            ("tests/cloudtrain/spec_corpus/04_unknown_top_level_key.yaml",),
            {"field": "nmae", "message": "nmae: unknown field.", "fix": "Did you mean 'name'?"},
        ),
        (  # a provider check
            ("tests/cloudtrain/spec_corpus/50_vertex_project_missing.yaml", "--provider", "vertex"),
            {
                "field": "vertex.project",
                "message": "vertex.project is required on Vertex AI.",
                "fix": "Set it to your Google Cloud project ID.",
            },
        ),
        (  # the code on disk
            ("tests/cloudtrain/fixtures/broken_projects/script_typo/job.yaml",),
            {
                "field": "code.script",
                "message": "code.script: 'trian.py' is not a file under "
                f"{str(REPO / 'tests/cloudtrain/fixtures/broken_projects/script_typo')!r}.",
                "fix": "Did you mean 'train.py'?",
            },
        ),
        (  # no file at all
            ("missing.yaml",),
            {
                "field": None,
                "message": "missing.yaml: no such file.",
                "fix": "Pass the path of a job spec, e.g. job.yaml.",
            },
        ),
    ],
)
def test_every_kind_of_spec_error_is_json_with_exit_2(
    run_cli, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...], expected: dict
) -> None:
    monkeypatch.chdir(REPO)
    code, answer, err = validate_json(run_cli, *args)
    assert (code, answer, err) == (2, {"valid": False, "errors": [expected]}, "")


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_json_errors_are_the_plain_errors_split(run_cli, monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
    monkeypatch.chdir(REPO)
    provider = path.read_text().splitlines()[0].removeprefix("# provider: ")
    plain = run_cli("validate", str(path.relative_to(REPO)), "--provider", provider).errors
    code, answer, _ = validate_json(run_cli, str(path.relative_to(REPO)), "--provider", provider)
    assert code == 2 and answer["valid"] is False
    assert [_line(error) for error in answer["errors"]] == plain
    for error in answer["errors"]:
        assert error["field"] is None or error["message"].startswith(error["field"])
