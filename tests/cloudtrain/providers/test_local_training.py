"""Real multi-process training through the local provider and the real runtime, on loopback.

One run per shape keeps the suite short on a 2-core machine (each process imports
TensorFlow): the README's main job through the CLI (2 hosts, plain); 2 hosts × 2
devices (4 worker processes, 4 replicas); Vertex emulation
with 3 hosts and a worker killed after epoch 1; Vertex emulation of 2 hosts given the
preemption notice mid-epoch (resumed at that step); SageMaker emulation of a spot job with
2 hosts, interrupted after epoch 2 (the restarted hosts get a fresh /opt/ml and their
checkpoints back from the stand-in bucket); Kubernetes emulation of the JobSet's two
pods, one of them killed after epoch 1 (JobSet recreates the gang). Every emulation
ends with every artifact of the plan's ``outputs`` at its stand-in place.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest

from cloudtrain import api
from cloudtrain.outputs import JOB
from cloudtrain.providers import local
from cloudtrain.providers.local.job import LocalJob
from cloudtrain_runtime import manifests
from tests.cloudtrain.providers.test_local_launcher import RUN_RECORDS

pytestmark = [pytest.mark.multiprocess, pytest.mark.timeout(600), pytest.mark.usefixtures("private_tmpdir")]

MIN_VAL_ACCURACY = 0.9


def test_the_readme_main_job_trains_on_two_hosts_and_prints_the_summary(project: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "cloudtrain", "submit", str(project / "job.yaml")],
        capture_output=True,
        text=True,
        check=False,
    )
    out = done.stderr  # piped: stdout holds the job ID alone, the followed log is on stderr
    assert done.returncode == 0, done.stdout + out
    assert re.search(r"^\[chief-0\] epoch 3/3 .*val_binary_accuracy=", out, re.MULTILINE)
    assert "[chief-0] replicas=2\n" in out
    assert "[chief-0] global_batch=32\n" in out
    accuracy = float(re.search(r"^\[chief-0\] final_val_binary_accuracy=([\d.]+)$", out, re.MULTILINE)[1])
    assert accuracy >= MIN_VAL_ACCURACY
    run = project / "outputs" / "runs" / str(LocalJob(done.stdout.strip()).summary().run)
    assert f"[chief-0] export={run / 'model'}\n" in out
    assert re.search(
        r"^\[chief-0\] serving_default\(.*\) -> \{'output_0': \[\[[\d.e-]+\]\]\}$", out, re.MULTILINE
    )
    assert _saved_models(project / "outputs") == [run / "model"]
    assert json.loads((project / "outputs" / "latest.json").read_text())["model"] == str(run / "model")
    _assert_nothing_left_behind(project.parent, LocalJob(done.stdout.strip()))


def test_vertex_emulation_restarts_three_hosts_after_a_worker_dies_and_resumes(project: Path) -> None:
    spec = api.as_spec(project / "job.yaml", ("resources.hosts=3",))
    job = api.submit(spec, local.Local(emulate="vertex", fault="worker:1@epoch:1"))
    final = job.wait(poll_s=1.0)
    lines = list(job.logs())
    assert final.state == "succeeded", "\n".join(lines[-40:])
    assert "[cloudtrain] Replica worker-1 died (killed by SIGKILL). Stopping the other replicas." in lines
    assert (
        "[cloudtrain] Restarting all replicas (host restart 1 of 5: Vertex restarts a lost worker, "
        "and with it the whole job)." in lines
    )
    bucket = project.parent / "home" / "buckets" / "gcs" / "my-bucket" / "binary-classifier"
    base = bucket / "runs" / job.request["run_id"]
    result = json.loads((base / "cloudtrain-result.json").read_text())
    assert result["replicas"] == 3
    assert result["resumed_from_epoch"] == 1  # the backup of epoch 1, written before the kill
    assert result["epochs_run"] == [1, 2, 3]  # every attempt's epochs, each once
    assert [attempt["epochs"] for attempt in result["attempts"]] == [[1], [2, 3]]
    assert result["history"]["val_binary_accuracy"][-1] >= MIN_VAL_ACCURACY
    assert _saved_models(base) == [base / "model"]  # AIP_MODEL_DIR
    assert (bucket / "code").is_dir()  # the bundle was "uploaded" to the stand-in bucket
    _assert_every_output_arrived(job, spec)
    _assert_nothing_left_behind(project.parent, job)


def test_vertex_emulation_preempted_mid_epoch_resumes_at_the_step_it_backed_up(project: Path) -> None:
    spec = api.as_spec(project / "job.yaml")
    job = api.submit(spec, local.Local(emulate="vertex", fault="preempt@step:20"))
    final = job.wait(poll_s=1.0)
    lines = list(job.logs())
    assert final.state == "succeeded", "\n".join(lines[-40:])
    # the notice after step 20; the replicas back up the step they agree on, within Vertex's 30 s grace:
    # a step of epoch 2, or, where the checks are further apart than its 12 steps left, its end
    noticed = [
        re.search(
            r"backup on notice( after epoch (\d+) and (\d+) batches .*|: epoch 2's own, .*)\(budget 24s\)$",
            line,
        )
        for line in lines
    ]
    backups = [found for found in noticed if found]
    assert len(backups) == 1, "\n".join(lines[-60:])
    # epochs done and batches into the next at the backup: epoch 2's own backup is (2, 0)
    epoch, batches = (int(backups[0][2]), int(backups[0][3])) if backups[0][2] else (2, 0)
    assert epoch * 16 + batches > 20, lines
    assert any("was reclaimed (exit 75: it got the notice and backed up its step," in line for line in lines)
    assert any(line.startswith("[cloudtrain] Restarting all replicas (host restart 1 of") for line in lines)
    assert any(
        f"restoring the verified backup {manifests.slot_name(epoch, batches)}" in line for line in lines
    )
    base = project.parent / "home" / "buckets" / "gcs" / "my-bucket" / "binary-classifier" / "runs"
    history = json.loads((base / job.request["run_id"] / "cloudtrain-history.json").read_text())
    # the interrupted epoch trained only its steps after the backup: nothing was redone
    steps = {(r["epoch"], r["attempt"]): r["steps"] for r in history["epochs"]}
    assert steps[(epoch + 1, 2)] == 16 - batches and sum(steps.values()) == 3 * 16 - batches
    _assert_nothing_left_behind(project.parent, job)


def test_two_hosts_with_two_devices_each_really_run_four_replicas(project: Path) -> None:
    job = api.submit(api.as_spec(project / "job.yaml", ("resources.per_host=2",)), "local")
    final = job.wait(poll_s=1.0)
    lines = list(job.logs())
    assert final.state == "succeeded", "\n".join(lines[-40:])
    assert "[chief-0] replicas=4" in lines
    assert "[chief-0] global_batch=64" in lines  # 16 per replica × 4
    result = json.loads(Path(job.outputs.result).read_text())
    assert result["replicas"] == 4
    assert result["history"]["val_binary_accuracy"][-1] >= MIN_VAL_ACCURACY
    _assert_nothing_left_behind(project.parent, job)


def test_sagemaker_emulation_restores_checkpoints_from_the_bucket_after_a_spot_interruption(
    project: Path,
) -> None:
    spec = api.as_spec(project / "job.yaml", ("resources.spot=true",))
    job = api.submit(spec, local.Local(emulate="sagemaker", fault="spot@epoch:2"))
    final = job.wait(poll_s=1.0)
    lines = list(job.logs())
    assert final.state == "succeeded", "\n".join(lines[-40:])
    assert any(line.startswith("[cloudtrain] Restarting all replicas (spot restart 1 of") for line in lines)
    assert any(line.startswith("[algo-1] epoch 3/3 ") for line in lines)
    output = _sagemaker_output(project.parent / "home", job.request)
    result = json.loads(_read_member(output / "output.tar.gz", "cloudtrain-result.json"))
    assert result["resumed_from_epoch"] == 2  # restored into a fresh /opt/ml/checkpoints
    # the history came back with the checkpoints: the fresh /opt/ml/output/data had none
    assert result["epochs_run"] == [1, 2, 3]
    assert [attempt["epochs"] for attempt in result["attempts"]] == [[1, 2], [3]]
    name = output.parent.name  # <S3OutputPath>/<TrainingJobName>/output
    assert [attempt["job"] for attempt in result["attempts"]] == [name, name]  # TRAINING_JOB_NAME
    assert [attempt["restart"] for attempt in result["attempts"]] == [0, 1]
    assert result["history"]["val_binary_accuracy"][-1] >= MIN_VAL_ACCURACY
    with tarfile.open(output / "model.tar.gz") as tar:
        models = [m.name for m in tar.getmembers() if m.name.endswith("saved_model.pb")]
    assert models == ["binary-classifier/1/saved_model.pb"]  # numeric version folder, for TF Serving
    _assert_every_output_arrived(job, spec)
    _assert_nothing_left_behind(project.parent, job)


def test_kubernetes_emulation_runs_the_jobsets_pods_restarts_the_gang_and_exports_once(project: Path) -> None:
    spec = api.as_spec(project / "job.yaml")
    job = api.submit(spec, local.Local(emulate="kubernetes", fault="worker:0@epoch:1"))
    final = job.wait(poll_s=1.0)
    lines = list(job.logs())
    assert final.state == "succeeded", "\n".join(lines[-40:])
    assert "[cloudtrain] Replica host-1 died (killed by SIGKILL). Stopping the other replicas." in lines
    assert any(line.startswith("[cloudtrain] Restarting all replicas (host restart 1 of 3") for line in lines)
    assert (
        "[host-0] replicas=2" in lines
    )  # pod 0 is the chief, pod 1 worker 0 (TF_CONFIG from JobSet's names)
    base = (
        project.parent
        / "home"
        / "buckets"
        / "gcs"
        / "my-bucket"
        / "binary-classifier"
        / "runs"
        / job.request["run_id"]
    )
    result = json.loads((base / "cloudtrain-result.json").read_text())
    assert result["resumed_from_epoch"] == 1
    assert [attempt["epochs"] for attempt in result["attempts"]] == [[1], [2, 3]]
    assert result["history"]["val_binary_accuracy"][-1] >= MIN_VAL_ACCURACY
    assert _saved_models(base) == [base / "model"]  # the chief's export, once
    _assert_every_output_arrived(job, spec)
    _assert_nothing_left_behind(project.parent, job)


def _assert_every_output_arrived(job: LocalJob, spec: Any) -> None:
    """Each artifact the plan promised is at its stand-in place, put there from the request alone.

    The emulator decides uploads from the rendered request's fields only, so an artifact
    the request forgets to deliver is missing here exactly as it would be on the cloud.
    """
    emulated = local.Local(emulate=job.request["emulates"])
    promised = api.prepare(spec, emulated, run_id=job.request["run_id"]).plan.outputs.to_dict()
    found = job.outputs.to_dict()
    assert list(found) == list(promised)
    for name, place in found.items():
        if name != "logs":  # the stand-in for bucket B's path P ends in B/P
            tail = re.escape(promised[name].split("://", 1)[1]).replace(re.escape(JOB), "[^/]+")
            assert re.search(f"/{tail}$", place), (name, promised[name], place)
        path, _, member = place.partition("#")
        assert Path(path).exists(), f"{name}: nothing at {place}"
        if member:
            assert _read_member(Path(path), member), f"{name}: {member} is empty"
    tensorboard = Path(found["tensorboard"])
    assert list(tensorboard.rglob("events.out.tfevents.*")), f"no TensorBoard event files under {tensorboard}"


def _saved_models(folder: Path) -> list[Path]:
    return sorted(path.parent for path in folder.rglob("saved_model.pb"))


def _sagemaker_output(home: Path, request: dict[str, Any]) -> Path:
    target = Path(request["collect"][0]["target"])
    assert target.is_relative_to(home / "buckets" / "s3")
    return target.parent


def _read_member(tarball: Path, name: str) -> str:
    with tarfile.open(tarball) as tar:
        member = tar.extractfile(name)
        assert member is not None
        return member.read().decode()


def _assert_nothing_left_behind(tmp: Path, job: LocalJob) -> None:
    """No host folders, no temp dirs, no worker temp exports: only the run's records stay."""
    assert sorted(p.name for p in job.run_dir.iterdir()) == RUN_RECORDS
    assert os.listdir(tmp / "tmp") == []
    assert [p for p in tmp.rglob("*") if "workertemp" in p.name] == []
