"""Backups belong to one run; the completion marker ends it; dead peers are named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cloudtrain_runtime import backups, callbacks, peers, strategy
from cloudtrain_runtime.errors import ConfigError
from cloudtrain_runtime.replica import ClusterInfo

FOUND = backups.Stamp(run="r1", config="c", model="m")


@pytest.mark.parametrize(
    ("found", "mine", "expected"),
    [
        (FOUND, backups.Stamp("r1", "c", "m"), "resume"),  # another attempt of the same run
        (FOUND, backups.Stamp(None, "c", "m"), "resume"),  # started by hand: adopts the run it resumes
        (FOUND, backups.Stamp("r2", "c", "m"), "foreign"),  # another run's: never touched
        (None, backups.Stamp("r1", "c", "m"), "foreign"),  # no stamp: not cloudtrain's
        (FOUND, backups.Stamp("r1", "c2", "m"), "mismatch"),  # same run, training section changed
        (FOUND, backups.Stamp("r1", "c", "m2"), "mismatch"),  # same run, model changed
        (backups.Stamp("r1", "c", "m", "x"), backups.Stamp("r1", "c", "m", "y"), "mismatch"),  # code changed
        (FOUND, backups.Stamp("r1", "c", "m", "y"), "resume"),  # a stamp from before code was stamped
    ],
)
def test_verdict(found: backups.Stamp | None, mine: backups.Stamp, expected: str) -> None:
    assert backups.verdict(found, mine) == expected


class _Weight:
    def __init__(self, path: str, shape: tuple[int, ...]) -> None:
        self.path, self.name, self.shape, self.dtype = path, path, shape, "float32"


class _Model:
    def __init__(self, *shapes: tuple[int, ...]) -> None:
        self.weights = [_Weight(f"dense_{i}/kernel", shape) for i, shape in enumerate(shapes)]


def _backups(
    tmp_path: Path,
    lines: list[str],
    run: str | None = "r1",
    keep: str | None = None,
    config: str = "c",
    code: str = "code-1",
) -> backups.Backups:
    mine = backups.Stamp(run=run, config=config, model="", code=code)
    marker = tmp_path / "out" / "cloudtrain-complete.json"
    return backups.Backups(tmp_path / "backup", marker, mine, True, lines.append, keep=keep)


def _keras_files(folder: Path) -> None:
    (folder / "chief").mkdir(parents=True, exist_ok=True)
    (folder / "chief" / "training_metadata.json").write_text('{"epoch": 2}')


def _export(tmp_path: Path) -> Path:
    export = tmp_path / "out" / "model"
    export.mkdir(parents=True)
    (export / "saved_model.pb").write_bytes(b"")
    return export


def test_a_restart_resumes_and_completion_empties_the_folder(tmp_path: Path) -> None:
    lines: list[str] = []
    first = _backups(tmp_path, lines)
    assert not first.begin(_Model((8, 16)))
    _keras_files(first.folder)

    again = _backups(tmp_path, lines)
    assert again.begin(_Model((8, 16)))
    assert again.mine.run == "r1"
    again.complete(_export(tmp_path))

    assert list(again.folder.iterdir()) == []
    record = json.loads(again.marker.read_text())
    assert (record["run"], record["export"]) == ("r1", str(tmp_path / "out" / "model"))


@pytest.mark.parametrize("names", [("cloudtrain-progress.json",), ("cloudtrain-progress.json.partial",)])
def test_a_folder_holding_only_the_progress_record_holds_no_backup(
    tmp_path: Path, names: tuple[str, ...]
) -> None:
    """SageMaker: the record is written into the synced checkpoint folder, and restored into a new job's."""
    folder = tmp_path / "backup"
    folder.mkdir()
    for name in names:
        (folder / name).write_text('{"epoch": 1}')
    run = _backups(tmp_path, [])
    assert not run.begin(_Model((8, 16)))  # a fresh start, not another run's backup
    assert run.mine.run == "r1"


def test_where_the_export_is_not_yet_durable_the_backup_is_kept_and_said_so(tmp_path: Path) -> None:
    lines: list[str] = []
    run = _backups(tmp_path, lines, keep="the export reaches S3 only when the job ends")
    run.begin(_Model((8, 16)))
    _keras_files(run.folder)
    run.complete(_export(tmp_path))

    assert (run.folder / "chief" / "training_metadata.json").is_file()
    assert lines[-1] == f"keeping the backup in {run.folder}: the export reaches S3 only when the job ends"


@pytest.mark.parametrize(
    ("stamp", "whose"),
    [
        ({"run": "another-run", "config": "c", "model": "m"}, "run 'another-run'"),  # another run's
        (None, "no run cloudtrain recorded"),  # no stamp at all
    ],
)
def test_another_runs_backup_is_one_error_and_stays_exactly_as_it_was(
    tmp_path: Path, stamp: dict[str, str] | None, whose: str
) -> None:
    folder = tmp_path / "backup"
    _keras_files(folder)
    if stamp is not None:
        (folder / backups.STAMP_FILE).write_text(json.dumps(stamp))
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}

    with pytest.raises(ConfigError) as raised:
        _backups(tmp_path, []).begin(_Model((8, 16)))

    assert f"belongs to {whose}, not to run 'r1', so it was left as it is" in str(raised.value)
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["backup"]  # nothing moved aside


def test_same_run_with_another_model_is_one_clear_error(tmp_path: Path) -> None:
    first = _backups(tmp_path, [])
    first.begin(_Model((8, 16)))
    _keras_files(first.folder)

    with pytest.raises(ConfigError) as raised:
        _backups(tmp_path, []).begin(_Model((8, 32)))

    assert str(first.folder) in str(raised.value) and "submit it as a new run" in str(raised.value)
    assert "with other model (its variables' names, shapes or dtypes)" in str(raised.value)
    assert (first.folder / "chief" / "training_metadata.json").is_file()


def test_a_backup_of_other_code_is_refused_with_the_line_a_finished_run_gets(tmp_path: Path) -> None:
    first = _backups(tmp_path, [])
    first.begin(_Model((8, 16)))
    _keras_files(first.folder)

    with pytest.raises(ConfigError) as raised:
        _backups(tmp_path, [], code="code-2").begin(_Model((8, 16)))

    assert str(raised.value) == backups.changed_run("r1", ["code"], f"has a backup in {str(first.folder)!r}")
    assert (first.folder / "chief" / "training_metadata.json").is_file()


@pytest.mark.parametrize(
    ("changed", "named"),
    [
        ({"code": "code-2"}, "with other code, so"),  # regression: an edited model "had nothing to redo"
        ({"config": "c2"}, "with other training settings, so"),  # regression: trained over the finished run
        ({"config": "c2", "code": "code-2"}, "with other training settings and code, so"),
    ],
)
def test_a_finished_run_refuses_another_spec_or_code_in_one_line(
    tmp_path: Path, changed: dict[str, str], named: str
) -> None:
    first = _backups(tmp_path, [])
    first.begin(_Model((8, 16)))
    export = _export(tmp_path)
    first.complete(export)

    with pytest.raises(ConfigError) as raised:
        _backups(tmp_path, [], **changed).finished()

    message = str(raised.value)
    assert message.startswith(f"Run 'r1' finished (its export is {export}) {named} it was left as it is.")
    assert "\n" not in message and "cloudtrain submit --new, or another --run-id" in message
    assert (export / "saved_model.pb").is_file()


def test_a_completion_record_from_before_code_was_stamped_still_finishes_the_run(tmp_path: Path) -> None:
    export = _export(tmp_path)
    record = {"run": "r1", "config": "c", "model": "m", "export": str(export)}
    (tmp_path / "out" / "cloudtrain-complete.json").write_text(json.dumps(record))
    assert _backups(tmp_path, []).finished() is not None


def test_a_finished_run_is_known_as_finished_only_to_itself(tmp_path: Path) -> None:
    first = _backups(tmp_path, [])
    first.begin(_Model((8, 16)))
    first.complete(_export(tmp_path))

    assert _backups(tmp_path, []).finished() is not None  # a restart of the same run
    assert _backups(tmp_path, [], run="r2").finished() is None  # another run
    assert _backups(tmp_path, [], run=None).finished() is None  # started by hand: no run to know
    (tmp_path / "out" / "model" / "saved_model.pb").unlink()
    assert _backups(tmp_path, []).finished() is None  # the export it names is gone


def test_only_the_chief_writes(tmp_path: Path) -> None:
    worker = backups.Backups(tmp_path / "b", tmp_path / "done.json", FOUND, False, print)
    worker.begin(_Model((1,)))
    worker.complete(tmp_path / "model")
    assert not (tmp_path / "b").exists() and not (tmp_path / "done.json").exists()


def test_export_fault_point_parses() -> None:
    assert callbacks.parse_fault("chief:0@export") == callbacks.Fault("chief", 0, "export", 0)


@pytest.mark.parametrize(
    ("plan", "spec", "words"),
    [
        ("multi-worker", "auto", "MultiWorkerMirroredStrategy (ring all-reduce)"),  # auto: the rule
        ("multi-worker", "multi-worker", "set in the spec"),  # explicit
        ("multi-worker", None, "as planned"),  # an SDK that does not say
    ],
)
def test_strategy_reason_says_where_the_choice_came_from(plan: str, spec: str | None, words: str) -> None:
    choice = strategy.decide(
        plan, keras_backend="tensorflow", num_hosts=2, devices_per_host=1, device_kind="cpu", spec=spec
    )
    assert choice.name == "multi-worker" and words in choice.reason
    assert "as planned" not in choice.reason or spec is None


def test_dead_peer_is_named_with_its_rank() -> None:
    info = ClusterInfo("tf_config", "chief", 0, 0, True, ("a:1", "b:2", "c:3"), Path("/"))
    text = (
        "Collective ops is aborted by: Error reported from /job:chief/task:0: The following tasks "
        "are unhealthy (stopped sending heartbeats):\n/job:worker/replica:0/task:1"
    )
    lost = peers.lost_peer(RuntimeError(text), info, "model.fit()")
    assert lost is not None and str(lost).startswith("replica 2 (worker_1) died during model.fit()")
    assert peers.lost_peer(ValueError("bad shape"), info, "model.fit()") is None
