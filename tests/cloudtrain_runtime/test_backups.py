"""Backups belong to one run; the completion marker ends it; dead peers are named."""

from __future__ import annotations

from pathlib import Path

import pytest

from cloudtrain_runtime import backups, callbacks, peers, strategy
from cloudtrain_runtime.errors import ConfigError
from cloudtrain_runtime.replica import ClusterInfo

FOUND = backups.Stamp(run="r1", config="c", model="m")


@pytest.mark.parametrize(
    ("found", "mine", "completed", "expected"),
    [
        (FOUND, backups.Stamp(None, "c", "m"), (), "resume"),  # restart, no provider job id
        (FOUND, backups.Stamp("r1", "c", "m"), (), "resume"),  # restart of the same provider job
        (FOUND, backups.Stamp("r2", "c", "m"), (), "replace"),  # a new provider job
        (FOUND, backups.Stamp(None, "c", "m"), ("r1",), "replace"),  # r1 finished: a stale copy
        (FOUND, backups.Stamp(None, "c2", "m"), (), "replace"),  # other training settings
        (None, backups.Stamp(None, "c", "m"), (), "replace"),  # no stamp: not cloudtrain's
        (FOUND, backups.Stamp(None, "c", "m2"), (), "mismatch"),  # same run, model changed
    ],
)
def test_verdict(
    found: backups.Stamp | None, mine: backups.Stamp, completed: tuple[str, ...], expected: str
) -> None:
    assert backups.verdict(found, mine, completed=completed) == expected


class _Weight:
    def __init__(self, path: str, shape: tuple[int, ...]) -> None:
        self.path, self.name, self.shape, self.dtype = path, path, shape, "float32"


class _Model:
    def __init__(self, *shapes: tuple[int, ...]) -> None:
        self.weights = [_Weight(f"dense_{i}/kernel", shape) for i, shape in enumerate(shapes)]


def _backups(tmp_path: Path, lines: list[str], run: str | None = None) -> backups.Backups:
    mine = backups.Stamp(run=run, config="c", model="")
    return backups.Backups(tmp_path / "backup", tmp_path / "out" / "done.json", mine, True, lines.append)


def _keras_files(folder: Path) -> None:
    (folder / "chief").mkdir(parents=True, exist_ok=True)
    (folder / "chief" / "training_metadata.json").write_text('{"epoch": 2}')


def test_restart_resumes_and_completion_empties_the_folder(tmp_path: Path) -> None:
    lines: list[str] = []
    first = _backups(tmp_path, lines)
    assert not first.begin(_Model((8, 16)))
    _keras_files(first.folder)

    again = _backups(tmp_path, lines)
    assert again.begin(_Model((8, 16)))
    assert again.mine.run == first.mine.run
    again.complete(tmp_path / "out" / "model")

    assert list(again.folder.iterdir()) == []
    assert '"completed_runs"' in again.marker.read_text() and first.mine.run in again.marker.read_text()


def test_a_finished_runs_stale_copy_is_moved_aside(tmp_path: Path) -> None:
    lines: list[str] = []
    first = _backups(tmp_path, lines)
    first.begin(_Model((8, 16)))
    stamp = first.stamp_file.read_text()
    first.complete(tmp_path / "out" / "model")
    first.stamp_file.write_text(stamp)  # another host syncs its copy back
    _keras_files(first.folder)

    assert not _backups(tmp_path, lines).begin(_Model((8, 32)))

    assert [p.name for p in first.folder.iterdir()] == [backups.STAMP_FILE]  # the new run's stamp
    assert len(list(tmp_path.glob("backup.replaced-*"))) == 1
    assert "belongs to another run" in lines[-1] and "starting at epoch 1" in lines[-1]


def test_same_run_with_another_model_is_one_clear_error(tmp_path: Path) -> None:
    first = _backups(tmp_path, [])
    first.begin(_Model((8, 16)))
    _keras_files(first.folder)

    with pytest.raises(ConfigError) as raised:
        _backups(tmp_path, []).begin(_Model((8, 32)))

    assert str(first.folder) in str(raised.value) and "delete that folder" in str(raised.value)


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
