"""``validate`` refuses what ``submit`` refuses before sending, and warns where it cannot check.

Each case was once valid for ``validate`` and then refused, or run wrongly, by ``submit``:
a requirements.txt this Python cannot satisfy, a ``--fault`` aimed at a replica or an
epoch the job does not have, a SageMaker region with an image of one's own, a Kubernetes
node type or region the catalog lacks (allowed, as a warning, since a cluster may have
its own), and a bad region from the environment named without saying where it came from.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

import cloudtrain
from cloudtrain.errors import SpecError
from cloudtrain.providers.local import Local
from tests.conftest import Result

Run = Callable[..., Result]
OWN_IMAGE = "image=123456789012.dkr.ecr.us-east-1.amazonaws.com/trainer:1"


@pytest.fixture
def project(tmp_path: Path, example_job: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(example_job.parent, tmp_path / "project", ignore=shutil.ignore_patterns("outputs"))
    monkeypatch.setenv("CLOUDTRAIN_LOCAL_HOME", str(tmp_path / "home"))
    return tmp_path / "project"


def test_a_requirement_this_python_lacks_is_refused_by_validate_as_by_submit(
    project: Path, run_cli: Run
) -> None:
    # regression: validate exit 0, then submit exit 1
    (project / "requirements.txt").write_text("surely-not-installed-here==1.0\n")
    job = str(project / "job.yaml")
    checked, submitted = run_cli("validate", job), run_cli("submit", job, "--no-wait")
    assert checked.code == 2 and submitted.code != 0
    assert "lacks surely-not-installed-here==1.0" in checked.errors[0]
    assert checked.errors[0].split(" Run: ")[0] == submitted.errors[0].split(" Run: ")[0]
    assert not (project.parent / "home" / "runs").exists()  # nothing started
    with pytest.raises(SpecError, match="lacks surely-not-installed-here"):
        cloudtrain.validate(job)


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (  # regression: silently never fired, "Job succeeded"
            ("--fault", "worker:5@epoch:2"),
            "--fault worker:5@epoch:2: the job has no replica worker:5, so the fault would never fire. "
            "Its replicas are chief:0, worker:0; name one of them, or spot@... for all.",
        ),
        (  # regression: the same, past the last epoch
            ("--fault", "worker:0@epoch:9", "--set", "training.epochs=5"),
            "--fault worker:0@epoch:9: the job trains 5 epochs, so epoch 9 never ends and the fault would "
            "never fire. Use @epoch:1 to @epoch:5, or raise training.epochs.",
        ),
        (  # SageMaker sets no TF_CONFIG: its hosts are worker:0 and worker:1, no chief
            ("--emulate", "sagemaker", "--fault", "chief:0@epoch:1"),
            "--fault chief:0@epoch:1: the job has no replica chief:0, so the fault would never fire. "
            "Its replicas are worker:0, worker:1; name one of them, or spot@... for all.",
        ),
    ],
    ids=["no-such-replica", "no-such-epoch", "emulated-sagemaker"],
)
def test_a_fault_that_could_never_fire_is_refused_by_validate_and_submit(
    project: Path, run_cli: Run, args: tuple[str, ...], error: str
) -> None:
    job = str(project / "job.yaml")
    for command in (("validate", job), ("submit", job, "--no-wait")):
        result = run_cli(*command, *args)
        assert (result.code, result.errors) == (2, [error])
    assert not (project.parent / "home" / "runs").exists()  # nothing started


def test_the_python_api_validates_a_fault_too(example_job: Path) -> None:
    with pytest.raises(SpecError, match="the job has no replica worker:5"):
        cloudtrain.validate(str(example_job), Local(fault="worker:5@epoch:1"))
    assert cloudtrain.validate(str(example_job), Local(fault="worker:0@epoch:3")).hosts == 2


def test_a_sagemaker_region_is_one_of_the_partitions_whatever_the_image(
    example_job: Path, run_cli: Run
) -> None:
    # regression: accepted with an image of one's own
    result = run_cli(
        "validate",
        str(example_job),
        "-p",
        "sagemaker",
        "--set",
        "sagemaker.region=us-eats-1",
        "--set",
        OWN_IMAGE,
    )
    assert (result.code, result.errors) == (
        2,
        ["sagemaker.region: 'us-eats-1' is not a region SageMaker trains in. Did you mean 'us-east-1'?"],
    )
    ok = run_cli(
        "validate",
        str(example_job),
        "-p",
        "sagemaker",
        "--set",
        "sagemaker.region=cn-north-1",
        "--set",
        OWN_IMAGE,
    )
    assert ok.code == 0, ok.err  # another partition's region


@pytest.mark.parametrize(
    ("variable", "provider", "field", "fix"),
    [
        ("GOOGLE_CLOUD_REGION", "vertex", "vertex.region", "us-central1"),
        ("AWS_REGION", "sagemaker", "sagemaker.region", "us-east-1"),
    ],
)
def test_a_bad_region_from_the_environment_says_it_came_from_there(
    tmp_path: Path,
    run_cli: Run,
    monkeypatch: pytest.MonkeyPatch,
    variable: str,
    provider: str,
    field: str,
    fix: str,
) -> None:
    # regression: reported as the field, as if the spec had said it
    (tmp_path / "trainer").mkdir()
    (tmp_path / "trainer" / "task.py").write_text(
        "def build_model(config): ...\ndef make_dataset(context): ...\n"
    )
    (tmp_path / "job.yaml").write_text(
        "name: demo\ncode: {module: trainer.task}\nstorage: {root: s3://my-bucket/demo}\n"
        "vertex: {project: my-project, storage_root: gs://my-bucket/demo}\n"
        "sagemaker: {role: 'arn:aws:iam::123456789012:role/Training'}\n"
    )
    monkeypatch.setenv(variable, fix[:4] + "x" + fix[4:])  # one letter too many
    result = run_cli("validate", str(tmp_path / "job.yaml"), "-p", provider)
    assert result.code == 2
    assert result.errors[0].endswith(f"It came from {variable}: fix it there, or set {field} in the spec.")
    assert f"Did you mean {fix!r}?" in result.errors[0]


@pytest.mark.parametrize(
    ("setting", "nearest"),
    [
        ("kubernetes.node_type=n1-standrd-8", "Did you mean 'n1-standard-8'?"),  # regression: accepted unsaid
        ("kubernetes.region=us-centrl1", "Did you mean 'us-central1'?"),  # regression: the same
    ],
)
def test_a_kubernetes_node_the_catalog_lacks_is_allowed_with_a_warning_that_the_budget_is_unchecked(
    example_job: Path, run_cli: Run, setting: str, nearest: str
) -> None:
    args = (str(example_job), "-p", "kubernetes", "--set", setting)
    checked = run_cli("validate", *args)
    assert checked.code == 0, checked.err
    (warning,) = [line for line in checked.err.splitlines() if line.startswith("Warning: ")]
    assert nearest in warning
    assert warning.endswith(
        "Unpriced, so the budget check (limits.max_cost_usd) is off for this job; submit --strict-budget refuses it."
    )
    assert json.loads(run_cli("validate", *args, "--json").out)["warnings"] == [
        warning.removeprefix("Warning: ")
    ]
    assert warning in run_cli("submit", *args, "--dry-run").err  # submit says it too


@pytest.mark.parametrize("cache", ["/proc/cloudtrain-nope", "{tmp}/a-file"], ids=["proc", "a-file"])
@pytest.mark.parametrize(
    "command",
    [("render",), ("submit", "-p", "vertex", "--dry-run"), ("submit", "--no-wait")],
    ids=["render", "vertex-dry-run", "local-submit"],
)
def test_a_bundle_cache_that_cannot_be_written_is_one_line_with_the_fix(
    example_job: Path,
    tmp_path: Path,
    run_cli: Run,
    monkeypatch: pytest.MonkeyPatch,
    cache: str,
    command: tuple[str, ...],
) -> None:
    # regression: a FileNotFoundError (NotADirectoryError) traceback from bundle.py _atomically
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", cache.format(tmp=tmp_path))
    monkeypatch.setenv("CLOUDTRAIN_LOCAL_HOME", str(tmp_path / "home"))
    result = run_cli(command[0], str(example_job), *command[1:])
    assert result.code == 1 and "Traceback" not in result.err
    (error,) = result.errors
    assert error.startswith(
        f"Cannot write the code bundle to {cache.format(tmp=tmp_path)}/cloudtrain/bundles ("
    )
    assert error.endswith(
        "Set XDG_CACHE_HOME to a folder this user can write (cloudtrain keeps bundles in $XDG_CACHE_HOME/cloudtrain/bundles), or unset it."
    )
