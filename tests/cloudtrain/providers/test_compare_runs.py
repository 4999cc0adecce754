"""Did scaling pay, on real runs: the example on 1 replica and on 2 hosts here, and on emulated Vertex AI.

Three real trainings of the bundled example through the local provider (each host a
process running the real runtime): 1 replica, 2 hosts, and 2 emulated Vertex AI hosts
whose worker is killed after epoch 1 (Vertex restarts the whole job, which resumes from
its backup). ``compare`` then reads each run back through ``Job.outputs`` (the emulated
one out of the stand-in bucket) and must show one curve per run, without a duplicate
epoch, the restarted run's lost time, a verdict that follows from the numbers it shows,
JSON and a PNG. No timing is asserted: only how the numbers relate.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from cloudtrain import api
from cloudtrain.providers import local
from cloudtrain.scaling import analysis, compare
from tests.conftest import Result

pytestmark = [pytest.mark.multiprocess, pytest.mark.timeout(900), pytest.mark.usefixtures("private_tmpdir")]


def test_one_replica_two_hosts_and_a_restarted_vertex_run_compare(
    project: Path, run_cli: Callable[..., Result], tmp_path: Path
) -> None:
    job = project / "job.yaml"
    runs = [
        api.submit(api.as_spec(job, ("resources.hosts=1", "storage.root=./outputs-1")), "local"),
        api.submit(api.as_spec(job, ("storage.root=./outputs-2",)), "local"),
        api.submit(api.as_spec(job), local.Local(emulate="vertex", fault="worker:0@epoch:1")),
    ]
    for run in runs:
        assert run.wait(poll_s=1.0).state == "succeeded", "\n".join(list(run.logs())[-30:])
    ids = [run.id for run in runs]

    found = compare(*ids)

    one, two, vertex = found.runs
    assert [(r.replicas, r.hosts, r.global_batch) for r in found.runs] == [(1, 1, 16), (2, 2, 32), (2, 2, 32)]
    assert [[p.epoch for p in r.points] for r in found.runs] == [[1, 2, 3]] * 3  # no duplicate epoch
    assert (one.attempts, two.attempts, vertex.attempts) == (1, 1, 2)
    assert vertex.time_lost_s > 0 and [p.attempt for p in vertex.points] == [1, 2, 2]
    walls = [p.wall_s for p in vertex.points]
    assert walls == sorted(walls) and walls[1] - walls[0] > vertex.time_lost_s  # the loss is in the curve
    assert found.runs[found.baseline] is one
    assert found.metric == "val_binary_accuracy"
    assert all(reached is not None for reached in found.reached)  # the default target: every run got there
    for verdict, run, reached in zip(found.verdicts, (two, vertex), found.reached[1:], strict=True):
        assert reached is not None and found.reached[0] is not None
        assert verdict.time_ratio == pytest.approx(reached.wall_s / found.reached[0].wall_s)
        assert verdict.epochs_ratio == pytest.approx(reached.epoch / found.reached[0].epoch)
        sooner = verdict.time_ratio < 1
        assert sooner == (verdict.kind in (analysis.PAID, analysis.PAID_IN_TIME)), verdict.text
        assert f"{verdict.time_ratio:.2f}× the time to it" in verdict.text
        assert run.cost.source.startswith("catalog: 2 × vertex ")
    assert one.cost.source.startswith("catalog: 1 × vertex ")
    for run in runs:  # no training.profile: no trace, not even the plugin's folder
        assert not (Path(run.outputs.tensorboard) / "plugins").exists()

    picture = tmp_path / "scaling.png"
    table = run_cli("compare", *ids, "--plot", str(picture))
    as_json = run_cli("compare", *ids, "--json")
    assert table.code == 0 and as_json.code == 0, table.err + as_json.err
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "val_binary_accuracy at equal epochs" in table.out
    assert json.loads(as_json.out)["verdicts"] == [verdict.to_json() for verdict in found.verdicts]
