"""The user's code is checked on disk before a job starts, by parsing it, never importing it.

``fixtures/broken_projects/*/`` are small projects whose ``job.yaml`` starts with one
``# error: ...`` line per expected problem; ``{root}`` stands for the quoted source folder.
``cloudtrain validate`` must print exactly those lines and exit 2, without a traceback.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from cloudtrain import api, usercode
from cloudtrain.errors import SpecError
from cloudtrain.spec import Code, JobSpec

BROKEN = Path(__file__).resolve().parent / "fixtures" / "broken_projects"
CASES = sorted(BROKEN.glob("**/job.yaml"))


def _expected(job: Path) -> list[str]:
    text = job.read_text()
    source_dir = yaml.safe_load(text)["code"].get("source_dir", ".")
    root = repr(str((job.parent / source_dir).resolve()))
    return [
        line.removeprefix("# error: ").replace("{root}", root)
        for line in text.splitlines()
        if line.startswith("# error: ")
    ]


def test_the_corpus_covers_module_functions_and_script() -> None:
    assert {case.parent.name for case in CASES} >= {"missing_module", "wrong_function_names", "script_typo"}


@pytest.mark.parametrize("job", CASES, ids=[c.relative_to(BROKEN).parts[0] for c in CASES])
def test_broken_project_is_rejected_naming_the_field(job: Path, run_cli) -> None:
    result = run_cli("validate", str(job))
    assert result.code == 2
    assert result.errors == _expected(job)
    assert all(error.startswith("code.") for error in result.errors)
    assert "Traceback" not in result.err
    assert result.out == ""


@pytest.mark.parametrize("command", ["plan", "render", "submit", "cost"])
def test_every_command_that_reads_a_spec_checks_the_code(command: str, run_cli) -> None:
    job = BROKEN / "missing_module" / "job.yaml"
    extra = ("--throughput", "1@t4") if command == "cost" else ("--dry-run",) if command == "submit" else ()
    result = run_cli(command, str(job), *extra)
    assert (result.code, result.errors) == (2, _expected(job))


def test_the_python_api_checks_a_path_and_a_jobspec(monkeypatch: pytest.MonkeyPatch) -> None:
    project = BROKEN / "wrong_function_names"
    with pytest.raises(SpecError) as from_path:
        api.render(project / "job.yaml", "local")
    monkeypatch.chdir(project)  # a JobSpec's source_dir is relative to the current folder
    spec = JobSpec(name="demo", code={"module": "trainer.task"})
    with pytest.raises(SpecError) as from_spec:
        api.render(spec, "local")
    assert from_path.value.problems == from_spec.value.problems == _expected(project / "job.yaml")


def test_a_jobspec_with_its_code_in_place_keeps_working(
    example_job: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(example_job.parent)
    spec = JobSpec(name="demo", code={"module": "trainer.task"}, storage={"root": "/tmp/demo"})
    assert api.render(spec, "local")["replicas"]


def test_the_contract_is_the_runtimes() -> None:
    from cloudtrain_runtime import contract, managed

    assert usercode.REQUIRED is contract.REQUIRED
    for name in usercode.OPTIONAL:  # every optional hook is one managed.py looks up
        assert f'"{name}"' in Path(managed.__file__).read_text()


def _write(root: Path, files: dict[str, str]) -> Code:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return Code(module="task", source_dir=str(root))


BOTH = "def build_model(config): ...\ndef make_dataset(context): ...\n"


@pytest.mark.parametrize(
    ("source", "problems"),
    [
        (BOTH, 0),  # plain definitions
        ("from model import build_model\nfrom data import make_dataset as make_dataset\n", 0),  # imported
        ("build_model = make_dataset = lambda x: x\n", 0),  # assigned
        (
            "try:\n    from fast import build_model\nexcept ImportError:\n    from slow import build_model\n",
            1,
        ),
        ("if True:\n    def build_model(config): ...\nelse:\n    def make_dataset(context): ...\n", 0),
        ("from helpers import *\n", 0),  # a star import could define anything: not reported
        ("def __getattr__(name): ...\n", 0),  # so could a module __getattr__
        ("class build_model: ...\ndef make_dataset(context): ...\n", 0),  # a class is callable too
        ("def main():\n    def build_model(config): ...\n    def make_dataset(context): ...\n", 2),  # nested
        ("", 2),  # an empty module
    ],
)
def test_required_functions_are_found_by_parsing(tmp_path: Path, source: str, problems: int) -> None:
    assert len(usercode.check_code(_write(tmp_path, {"task.py": source}))) == problems


def test_a_package_module_is_its_init(tmp_path: Path) -> None:
    code = _write(tmp_path, {"task/__init__.py": BOTH})
    assert usercode.check_code(code) == []


def test_the_module_is_never_imported(tmp_path: Path) -> None:
    code = _write(tmp_path, {"task.py": "raise SystemExit('imported')\n" + BOTH})
    assert usercode.check_code(code) == []
    assert "task" not in sys.modules


def test_a_syntax_error_names_the_file_and_line(tmp_path: Path) -> None:
    code = _write(
        tmp_path, {"task.py": "def build_model(config):\n    return None\n\ndef make_dataset(context)\n"}
    )
    assert usercode.check_code(code) == ["code.module: task.py line 4: expected ':'. Fix the syntax error."]


def test_many_modules_and_none_close_are_counted_not_listed(tmp_path: Path) -> None:
    code = _write(tmp_path, {f"module_{i}.py": "" for i in range(20)})
    [problem] = usercode.check_code(code.model_copy(update={"module": "zzz"}))
    assert problem.endswith("None of the 20 modules found is close.")


def test_an_empty_source_folder_says_so(tmp_path: Path) -> None:
    [problem] = usercode.check_code(Code(script="train.py", source_dir=str(tmp_path)))
    assert (
        problem
        == f"code.script: 'train.py' is not a file under {str(tmp_path)!r}; it holds no Python file. Check code.source_dir."
    )
