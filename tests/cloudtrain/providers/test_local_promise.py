"""A run id is a promise: a local submit of other code or settings to a finished run is refused, nothing started.

The run's records are written as the runtime writes them (``cloudtrain_runtime.backups``),
from the request the submit renders, so only what the test changes differs.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from cloudtrain import api
from cloudtrain.container import CONFIG_ENV
from cloudtrain.errors import SpecError
from cloudtrain.provider.emulation import bucket_path
from cloudtrain.providers.local import Local, promise
from cloudtrain_runtime import backups, bundle
from cloudtrain_runtime import config as runtime_config
from tests.conftest import Result


def _finish(project: Path, run_id: str, emulate: str | None = None, **changed: str) -> Path:
    """Record run ``run_id`` as finished by this project's job, as its chief would; ``changed`` fingerprints differ."""
    provider = Local(emulate=emulate) if emulate else "local"
    submission = api.prepare(project / "job.yaml", provider, run_id=run_id)
    env = submission.request["replicas"][0]["env"]
    config = runtime_config.parse(env[CONFIG_ENV], CONFIG_ENV)
    stamp = backups.Stamp(
        run_id, backups.config_fingerprint(config), "m", bundle.code_digest(submission.bundle.path)
    )
    home = Path(os.environ["CLOUDTRAIN_LOCAL_HOME"])
    export = Path(bucket_path(config.export_dir).replace("<buckets>", str(home / "buckets")))
    export.mkdir(parents=True)
    (export / "saved_model.pb").write_bytes(b"")
    record = {**vars(stamp), **changed, "export": str(export)}
    (export.parent / "cloudtrain-complete.json").write_text(json.dumps(record))
    return export


@pytest.mark.parametrize(
    ("changed", "named"),
    [
        ({"code": "0123456789abcdef"}, "with other code, so"),  # regression: "nothing to redo", exit 0
        ({"config": "0123456789abcdef"}, "with other training settings, so"),
    ],
)
def test_a_changed_job_is_refused_by_its_finished_run_before_anything_starts(
    project: Path, run_cli: Callable[..., Result], changed: dict[str, str], named: str
) -> None:
    export = _finish(project, "r1", **changed)

    result = run_cli("submit", str(project / "job.yaml"), "--run-id", "r1", "--no-wait")

    assert result.code == 2
    assert result.errors == [
        f"Run 'r1' finished (its export is {export}) {named} it was left as it is. Restore the code and "
        "spec the run started with, or submit it as a new run (cloudtrain submit --new, or another --run-id)."
    ]
    runs = project.parent / "home" / "runs"
    assert not runs.exists() or not any(runs.iterdir())  # nothing started


def test_the_same_code_and_settings_pass_to_the_run_that_has_nothing_to_redo(project: Path) -> None:
    _finish(project, "r1")
    submission = api.prepare(project / "job.yaml", "local", run_id="r1")
    promise.check_same_run(submission.request, submission.bundle.path, project.parent / "home" / "buckets")


def test_an_emulated_cloud_run_keeps_the_same_promise(project: Path, run_cli: Callable[..., Result]) -> None:
    export = _finish(project, "r1", emulate="vertex", code="0123456789abcdef")
    assert "/buckets/gcs/my-bucket/" in str(export)  # the run's storage is the stand-in bucket

    result = run_cli(
        "submit", str(project / "job.yaml"), "--emulate", "vertex", "--run-id", "r1", "--no-wait"
    )

    assert result.code == 2 and result.errors[0].startswith(
        f"Run 'r1' finished (its export is {export}) with other code"
    )


def test_a_backup_of_other_settings_is_refused_with_the_same_line(project: Path) -> None:
    submission = api.prepare(project / "job.yaml", "local", run_id="r2")
    config = runtime_config.parse(submission.request["replicas"][0]["env"][CONFIG_ENV], CONFIG_ENV)
    folder = Path(config.backup_dir)
    (folder / "chief").mkdir(parents=True)
    (folder / "chief" / "training_metadata.json").write_text("{}")
    (folder / backups.STAMP_FILE).write_text(json.dumps({"run": "r2", "config": "other", "model": "m"}))

    with pytest.raises(SpecError) as refused:
        promise.check_same_run(
            submission.request, submission.bundle.path, project.parent / "home" / "buckets"
        )

    assert str(refused.value) == backups.changed_run("r2", ["config"], f"has a backup in {str(folder)!r}")
