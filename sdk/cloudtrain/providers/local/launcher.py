"""The supervisor of one local run: start every replica, stream their output, restart on failure.

It runs as its own detached process (``main([--detach, RUN_DIR])``), so a local job outlives the shell that submitted it, exactly like a cloud
job, and ``cloudtrain status|logs|cancel local:<id>`` work from anywhere. Everything it
knows comes from ``RUN_DIR/request.json`` (the rendered request with the run folder
and buckets filled in); everything it reports goes to files in ``RUN_DIR``:

- ``launcher.pid``: this process, as a ``job.ProcessRecord``; ``cancel`` sends it SIGTERM.
- ``replicas.pid``: the running attempt's replicas (process group leaders) as process
  records, so ``cancel`` can still stop them if this launcher was killed; removed at the end.
- ``status.json``: the run's state, rewritten atomically at every change.
- ``launcher.alive``: touched every second while this launcher runs, so a killed one is
  known by when it was last seen alive (``orphans``); removed at the end.
- ``output.log``: every replica's merged output, each line prefixed ``[chief-0] ``.
  TensorFlow's C++ start-up lines (``START_UP_NOISE``) and the C++ lines known to report
  nothing wrong (``HARMLESS_NOISE``) are left out unless
  ``$CLOUDTRAIN_VERBOSE`` is ``1`` (``cloudtrain submit -v``), and the replicas get
  ``TF_CPP_MIN_LOG_LEVEL=1`` where the user set none: INFO hidden, warnings and errors
  kept. This is the local provider's own processes only; a cloud container logs as the
  image does.
- ``output.times``: when each line of ``output.log`` was written (``logfile``).

A replica that ends with an error makes the launcher SIGKILL the others after a 3 s
grace for in-flight backup writes (TF would only notice after a ~10 s heartbeat
timeout, as measured with tensorflow-cpu 2.21.0 on one CPU host). A replica killed by a signal is a lost host (preemption, maintenance, the OOM
killer): the whole set starts again on fresh ports and fresh host folders, as Vertex's
``restart_job_on_worker_restart`` and SageMaker's spot restarts do, as often as the
request's ``restarts`` allow for that kind of loss (``host``; ``spot`` when a spot fault
reclaimed the hosts), and training resumes from the backup in the (persistent)
stand-in bucket. A replica that exits non-zero is an error in the job, which cloudtrain
treats as permanent, so the run fails at once instead of failing the same way again.
A run that outlives the request's ``deadline`` (``limits.max_runtime``, or the emulated
cloud's own limit) is stopped as a cancel stops it and ends failed (``deadline``).

Before each attempt the launcher completes every replica from the request's shared
``cluster`` description (``expand``), so the request holds the cluster once, not once
per replica; ``replica_env`` shows the variables one replica gets.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cloudtrain.container import CONFIG_ENV, GRACE_ENV
from cloudtrain.errors import ProviderError
from cloudtrain.provider.emulation import bucket_path
from cloudtrain.provider.failures import RECLAIMED_EXIT, Failure
from cloudtrain.provider.jobs import JobStatus
from cloudtrain.providers.local import failures, hosts
from cloudtrain.providers.local.deadline import Deadline
from cloudtrain.providers.local.logfile import LogWriter
from cloudtrain.providers.local.processes import ProcessRecord
from cloudtrain.providers.local.records import (
    HEARTBEAT_FILE,
    LAUNCHER_FILE,
    REPLICAS_FILE,
    REQUEST_FILE,
    STARTED_FILE,
    STATUS_FILE,
    parse_request,
    read_record,
    status_record,
    untrusted,
    write_record,
)
from cloudtrain.providers.local.render import WAITING, pending_hold_s

POLL_S = 0.1
# Seconds the survivors of a failure get before SIGKILL (see ``stop``); TF itself would
# notice a dead peer only after a ~10 s heartbeat (measured with tensorflow-cpu 2.21.0: the
# survivor's collective fails with "stopped sending heartbeats").
FAILURE_GRACE_S = 3.0
# Seconds between SIGTERM and SIGKILL on cancel, for a runtime that saves on SIGTERM; the
# replicas get it as ``CLOUDTRAIN_GRACE_S`` where no emulated cloud fixes its own
# (cloudtrain_runtime.notice).
CANCEL_GRACE_S = 5.0
# Seconds between touches of ``launcher.alive``: how stale "last seen alive" may be.
HEARTBEAT_S = 1.0
# Set by the launcher (not part of the request): without it Python buffers the
# replicas' stdout in the pipe and progress lines arrive only at exit.
STREAMING_ENV = {"PYTHONUNBUFFERED": "1"}
# Variables of the submitting shell that would confuse a replica about who it is.
SCRUBBED_ENV = (
    "TF_CONFIG",
    "CLUSTER_SPEC",
    "CLOUDTRAIN_FAULT",
    "CLOUDTRAIN_HOSTS",
    "CLOUDTRAIN_ROOT",
    "CLOUDTRAIN_RUN_ID",
    "CLOUDTRAIN_TRACE_STEPS",
    GRACE_ENV,
)
FAULT_ENV = "CLOUDTRAIN_FAULT"
# The faults that kill every replica at once, as the loss the launcher records, and how a death by one reads.
LOSSES = {"spot": ", spot interruption", "stop": ", the region was lost"}
# What the chief's runtime writes beside a verified export (cloudtrain_runtime.replica).
COMPLETE_FILE = "cloudtrain-complete.json"
# ``1``: the replicas' whole output, TensorFlow's start-up lines included (``submit -v``).
VERBOSE_ENV = "CLOUDTRAIN_VERBOSE"
# TensorFlow's C++ logging: 0 all, 1 no INFO, 2 no WARNING, 3 no ERROR (TF_CPP_MIN_LOG_LEVEL,
# read by TensorFlow's platform/default/logging.cc). It hides cpu_feature_guard's banner, but
# not the lines logged before TensorFlow reads it.
QUIET_ENV = {"TF_CPP_MIN_LOG_LEVEL": "1"}
# What every replica prints as TensorFlow loads (twice, measured with TensorFlow 2.21 on
# this CPU): absl's warning that it logs before initialisation, INFO lines of C++ files
# (absl's prefix "IMMDD hh:mm:ss.uuuuuu thread file:line] ", abseil.io/docs/cpp/guides/logging;
# before initialisation the date is 0000 and the time the Unix epoch), e.g. port.cc's
# "oneDNN custom operations are on", and cpu_feature_guard's second line. INFO of a Python
# file (absl-py's same prefix, ``.py:``) is the user's and stays. And the two lines of
# ``bash -m`` without a terminal, as the SageMaker TensorFlow DLC's ENTRYPOINT runs (emulated
# SageMaker with image: auto; on SageMaker every such job logs them too).
START_UP_NOISE = re.compile(
    r"WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR"
    r"|I\d{4} \d\d:\d\d:[\d.]+ +\d+ [\w/.-]+\.cc:\d+\] .*"
    r"|To enable the following instructions: .* rebuild TensorFlow with the appropriate compiler flags\."
    r"|bash: cannot set terminal process group \(-?\d+\): Inappropriate ioctl for device"
    r"|bash: no job control in this shell"
)
# C++ lines TensorFlow logs while training that report nothing wrong with the job (TensorFlow
# 2.21), each matched by its own words so that any other warning or error stays:
# - tensorflow/core/framework/dataset.cc: an input (the GeneratorDataset tf.distribute makes
#   of a dataset) that tf.data's graph optimizations skip; the input still runs as written.
# - tensorflow/core/util/util.cc, DataTypeUnsupportedWarning: logged once per process at
#   ERROR level ("E0000 ...") when an op of that type (DT_HALF under mixed precision) meets
#   oneDNN on a CPU without the AVX-512 FP16 instructions; TensorFlow then runs its
#   Eigen kernel instead ("Falling back to the default Eigen-based implementation"), so
#   nothing fails, though the E reads like a failure.
HARMLESS_NOISE = re.compile(
    r"W\d{4} \d\d:\d\d:[\d.]+ +\d+ dataset\.cc:\d+\] Input of GeneratorDatasetOp::Dataset will not be "
    r"optimized because the dataset does not implement the AsGraphDefInternal\(\) method needed to "
    r"apply optimizations\."
    r"|E\d{4} \d\d:\d\d:[\d.]+ +\d+ util\.cc:\d+\] oneDNN supports DT_\w+ only on platforms with "
    r"AVX-512\. Falling back to the default Eigen-based implementation if present\."
)


@dataclass
class Outcome:
    """How one attempt ended: every replica succeeded, one failed, or the run was cancelled."""

    ok: bool
    detail: str
    cancelled: bool = False
    loss: str | None = None
    """What a restart would recover from: ``"host"`` (one lost), ``"spot"`` (all reclaimed) or ``"stop"`` (the region lost)."""
    failure: Failure | None = None
    """Why a failed attempt failed (``local.failures``)."""
    provider_state: str | None = None
    """The provider's own word for this end, where it has one (a deadline's); None: the state's."""


class RunFiles:
    """The files of one run folder, and the only code that writes them."""

    def __init__(self, run_dir: Path) -> None:
        self.dir = run_dir
        self._log = LogWriter(run_dir)
        self._stop_beating = threading.Event()
        self._heartbeat: threading.Thread | None = None

    def request(self) -> dict[str, Any]:
        path = self.dir / REQUEST_FILE
        request = read_record(path, parse_request)
        if request is None:
            raise untrusted(path, "it is missing")
        return request

    def say(self, replica: str, line: str) -> None:
        """Append one line of output, prefixed by the replica that wrote it, with the time it was written."""
        self._log.write(f"[{replica}] {line.rstrip()}")

    def set_status(
        self,
        state: str,
        provider_state: str,
        detail: str = "",
        failure: Failure | None = None,
        **pending: Any,
    ) -> None:
        """Rewrite status.json atomically, so a reader never sees half a file.

        ``pending`` is a waiting job's ``pending_since`` and ``pending_reason`` (``JobStatus``).
        """
        status = JobStatus(state, provider_state, detail, failure, **pending)
        write_record(self.dir / STATUS_FILE, status_record(status))

    def record_replicas(self, pids: dict[str, int]) -> None:
        """Write ``replicas.pid``: if this launcher is killed, ``cancel`` stops them by it."""
        records = {name: ProcessRecord.of(pid).to_json() for name, pid in pids.items()}
        write_record(self.dir / REPLICAS_FILE, records)

    def start_heartbeat(self) -> None:
        """Touch ``launcher.alive`` every ``HEARTBEAT_S`` until ``close``: when this launcher was last seen alive."""
        path = self.dir / HEARTBEAT_FILE

        def beat() -> None:
            while True:
                path.touch()
                if self._stop_beating.wait(HEARTBEAT_S):
                    return

        self._heartbeat = threading.Thread(target=beat, name="heartbeat", daemon=True)
        self._heartbeat.start()

    def close(self) -> None:
        """Stop the heartbeat and remove what only a running launcher needs; the records stay."""
        self._stop_beating.set()
        if self._heartbeat is not None:
            self._heartbeat.join()
        (self.dir / REPLICAS_FILE).unlink(missing_ok=True)
        (self.dir / HEARTBEAT_FILE).unlink(missing_ok=True)
        self._log.close()


class Launcher:
    """Runs the request's replicas as one set, attempt after attempt."""

    def __init__(
        self, files: RunFiles, cancelled: threading.Event | None = None, *, verbose: bool = False
    ) -> None:
        self.files = files
        self.request = files.request()
        self.cancelled = cancelled or threading.Event()
        self.verbose = verbose
        self.deadline: Deadline | None = None

    def run(self) -> None:
        """Attempt the run until it succeeds, fails for good, or is cancelled.

        Each kind of loss restarts the set as often as the request's ``restarts`` say
        (``{"host": {"limit": 3, "rule": ...}, "spot": ...}``), and no more.
        """
        self._wait_to_start()
        used: dict[str, int] = {}
        attempt = 0
        self.deadline = Deadline.of(self.request, started=time.monotonic())
        while True:
            outcome = self._attempt(attempt)
            if outcome.loss is None or self.cancelled.is_set() or not self._may_restart(outcome.loss, used):
                break
            attempt += 1
        self._finish(outcome, attempt)

    def _wait_to_start(self) -> None:
        """Under ``--fault pending@DURATION``: wait that long (or until cancelled) before any replica starts.

        The run shows the provider's own waiting state meanwhile (the request's
        ``waiting``: an emulated Vertex AI job ``JOB_STATE_QUEUED``, say), as a job waiting
        for capacity does, so ``status`` and a pending limit see it as they would there.
        """
        fault = str(self.request.get("fault", ""))
        hold = pending_hold_s(fault)
        if not hold:
            return
        words = {**WAITING, **self.request.get("waiting", {})}
        self.files.say("cloudtrain", f"Waiting {hold:g}s before the replicas start (--fault {fault}).")
        self.files.set_status(
            words["state"],
            words["provider_state"],
            pending_since=datetime.now(UTC),
            pending_reason=f"{words['reason']} (--fault {fault})",
        )
        self.cancelled.wait(hold)

    def _may_restart(self, loss: str, used: dict[str, int]) -> bool:
        """Count one restart after ``loss`` if the request allows another, saying which rule decided."""
        policy = self.request["restarts"].get(
            loss, {"limit": 0, "rule": f"the request allows no {loss} restart"}
        )
        if used.get(loss, 0) >= policy["limit"]:
            self.files.say("cloudtrain", f"Not restarting: {policy['rule']}.")
            return False
        used[loss] = used.get(loss, 0) + 1
        self.files.say(
            "cloudtrain",
            f"Restarting all replicas ({loss} restart {used[loss]} of {policy['limit']}: {policy['rule']}).",
        )
        return True

    def _attempt(self, attempt: int) -> Outcome:
        if self.cancelled.is_set():  # cancelled before any replica started: start none
            return Outcome(ok=False, detail="Cancelled by the user.", cancelled=True)
        self.files.set_status("running", f"RUNNING (attempt {attempt + 1})")
        (self.files.dir / STARTED_FILE).touch()
        replicas = resolve_ports(self.request)
        for replica in replicas:
            hosts.prepare(replica)
        procs = {r["name"]: self._start(r, attempt) for r in replicas}
        try:
            self.files.record_replicas({name: proc.pid for name, proc in procs.items()})
        except BaseException:  # unrecorded replicas could not be cancelled: never leave them running
            stop(procs.values(), grace_s=0)
            raise
        pumps = [self._pump(name, proc) for name, proc in procs.items()]
        outcome = self._watch(procs, attempt)
        for pump in pumps:
            pump.join()
        for replica in replicas:
            hosts.sync_out(replica)
        return outcome

    def _start(self, replica: dict[str, Any], attempt: int) -> subprocess.Popen[bytes]:
        env = {k: v for k, v in os.environ.items() if k not in SCRUBBED_ENV}
        env.update(STREAMING_ENV)
        if not self.request.get("emulates"):
            env[GRACE_ENV] = f"{CANCEL_GRACE_S:g}"
        env.update(replica["env"])
        fault = str(self.request.get("fault", ""))
        if attempt == 0 and fault and not pending_hold_s(fault):  # the launcher plays pending@ itself
            env[FAULT_ENV] = fault
        if not self.verbose:
            env = {**QUIET_ENV, **env}  # the user's own setting wins
        return subprocess.Popen(
            replica["argv"],
            env=env,
            cwd=replica.get("cwd"),  # plain local: the submitting shell's folder
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: stopping it stops its children
        )

    def _pump(self, name: str, proc: subprocess.Popen[bytes]) -> threading.Thread:
        def copy() -> None:
            assert proc.stdout is not None
            for raw in proc.stdout:
                line = raw.decode("utf-8", errors="replace")
                if self.verbose or not is_noise(line):
                    self.files.say(name, line)
            proc.stdout.close()

        thread = threading.Thread(target=copy, name=f"pump-{name}", daemon=True)
        thread.start()
        return thread

    def _watch(self, procs: dict[str, subprocess.Popen[bytes]], attempt: int) -> Outcome:
        """Wait until all replicas succeed, one fails (stop the rest), or the run is cancelled.

        What happened wins over a cancel that came too late: replicas that had all exited
        0, or a chief whose verified export of this run was complete (``_export_verified``),
        make the run succeeded, not cancelled.
        """
        while True:
            codes = {name: proc.poll() for name, proc in procs.items()}
            if any(rc not in (None, 0) for rc in codes.values()):
                # A killed replica's peers can fail within milliseconds of it (connection
                # reset): look once more, so the kill is blamed and the set restarted.
                time.sleep(POLL_S)
                failed = first_failure(procs)
                outcome = self._after_export(*failed) or self._failure(*failed, attempt)
                stop(procs.values(), grace_s=FAILURE_GRACE_S)
                return outcome
            if all(rc == 0 for rc in codes.values()):
                every = f"All {len(procs)} replicas" if len(procs) > 1 else "The replica"
                return Outcome(ok=True, detail=f"{every} exited 0.")
            if self.cancelled.is_set():
                break
            if self.deadline is not None and self.deadline.passed(time.monotonic()):
                return self._stop_at_deadline(procs, self.deadline)
            time.sleep(POLL_S)
        stop(procs.values(), grace_s=CANCEL_GRACE_S, first=signal.SIGTERM)
        if self._export_verified():
            detail = "The chief's export was complete and verified when the cancel stopped the replicas."
            return Outcome(ok=True, detail=detail)
        return Outcome(ok=False, detail="Cancelled by the user.", cancelled=True)

    def _stop_at_deadline(self, procs: dict[str, subprocess.Popen[bytes]], deadline: Deadline) -> Outcome:
        """Stop the replicas as a cancel does, once the run has used its ``limits.max_runtime`` (``deadline``)."""
        self.files.say("cloudtrain", f"{deadline.detail} Stopping every replica.")
        stop(procs.values(), grace_s=CANCEL_GRACE_S, first=signal.SIGTERM)
        if self._export_verified():
            return Outcome(
                ok=True, detail="The chief's export was complete and verified when the deadline passed."
            )
        return Outcome(
            ok=False, detail=deadline.detail, failure=deadline.failure, provider_state=deadline.provider_state
        )

    def _after_export(self, rc: int, name: str) -> Outcome | None:
        """Success, if the chief's export of this run is complete and verified: nothing to redo."""
        if not self._export_verified():
            return None
        detail = f"The chief's export is complete and verified; replica {name} died afterwards ({describe_exit(rc)})."
        self.files.say("cloudtrain", f"{detail} Not restarting.")
        return Outcome(ok=True, detail=detail)

    def _export_verified(self) -> bool:
        """Whether the chief recorded a complete, verified export of this run.

        The runtime records ``cloudtrain-complete.json`` beside the export only after the
        export was written, reloaded and answered, so a replica that dies (or is
        cancelled) afterwards loses nothing. Only plain local runs: an emulated cloud ends
        as that provider would (a restart, or a cancelled job).
        """
        if self.request.get("emulates"):
            return False
        marker = completion_marker(self.request, self.files.dir)
        try:
            record = read_record(marker, dict) if marker else None
        except ProviderError:  # a marker that cannot be believed proves nothing
            return False
        if record is None or record.get("run") != self.request.get("run_id"):
            return False
        return (Path(str(record.get("export", ""))) / "saved_model.pb").is_file()

    def _failure(self, rc: int, name: str, attempt: int) -> Outcome:
        """A replica killed by a signal is a lost host (or, under a spot fault, reclaimed); one that exits non-zero is a bug.

        Exit 75 (``RECLAIMED_EXIT``) is the runtime's answer to the provider's notice (its
        step is backed up) or to a hang (``cloudtrain_runtime.watchdog``): the set restarts as
        after a lost host.
        """
        if rc == RECLAIMED_EXIT:
            detail = (
                f"Replica {name} was reclaimed (exit {rc}: it got the notice and backed up its step, or its "
                "hang watchdog found no step progress)."
            )
            self.files.say("cloudtrain", f"{detail} Stopping the other replicas.")
            return Outcome(ok=False, detail=detail, loss="host", failure=failures.exit_failure(rc, detail))
        if rc < 0:
            everyone = str(self.request.get("fault", "")).partition("@")[0] if attempt == 0 else ""
            loss = everyone if everyone in LOSSES else "host"
            detail = f"Replica {name} died ({describe_exit(rc)}{LOSSES.get(loss, '')})."
            self.files.say("cloudtrain", f"{detail} Stopping the other replicas.")
            failure = failures.lost_region(detail) if loss == "stop" else failures.exit_failure(rc, detail)
            return Outcome(ok=False, detail=detail, loss=loss, failure=failure)
        # Not "see its lines above": status and wait show the failing replica's last lines themselves.
        detail = f"Replica {name} failed ({describe_exit(rc)})."
        self.files.say("cloudtrain", f"{detail} Stopping the other replicas; an error exit is not retried.")
        return Outcome(ok=False, detail=detail, failure=failures.exit_failure(rc, detail))

    def _finish(self, outcome: Outcome, attempt: int) -> None:
        if outcome.ok:
            hosts.collect(self.request)
        hosts.remove_hosts(self.request["replicas"])
        restarts = f" after {attempt} restart{'s' * (attempt != 1)}" if attempt else ""
        if outcome.ok:  # a cancel that came after the work was done cancels nothing
            state, detail = "succeeded", outcome.detail
        elif self.cancelled.is_set():
            state, detail = "cancelled", "Cancelled by the user."
        else:
            state, detail = "failed", f"{outcome.detail} Gave up{restarts}." if attempt else outcome.detail
        if (
            outcome.ok
        ):  # where it stays: an emulated cloud's stand-in bucket, not the hosts' folders just removed
            self.files.say("cloudtrain", f"Model: {self.request['outputs']['model']}")
        self.files.say("cloudtrain", f"Job {state}{restarts}. {detail}")
        word = outcome.provider_state if state == "failed" and outcome.provider_state else state.upper()
        self.files.set_status(state, word, detail, outcome.failure if state == "failed" else None)


def is_start_up_noise(line: str) -> bool:
    """Whether ``line`` is one of TensorFlow's start-up lines that hide the job's own output.

    Example:
    >>> is_start_up_noise("I0000 00:00:1796327994.474821   16293 port.cc:153] oneDNN custom operations are on.")
    True
    >>> is_start_up_noise("I1203 19:58:00.123456  16293 task.py:12] my own absl-py INFO line")
    False
    """
    return START_UP_NOISE.fullmatch(line.rstrip("\r\n")) is not None


def is_noise(line: str) -> bool:
    """Whether ``line`` is left out of the shown log: a start-up line, or a known harmless one.

    Example:
    >>> is_noise("W0000 00:00:1796395868.701724   16870 dataset.cc:997] Input of GeneratorDatasetOp::Dataset "
    ...          "will not be optimized because the dataset does not implement the AsGraphDefInternal() "
    ...          "method needed to apply optimizations.")
    True
    >>> is_noise("W0000 00:00:1796395868.7   16870 dataset.cc:997] Some other tf.data warning.")
    False
    """
    return is_start_up_noise(line) or HARMLESS_NOISE.fullmatch(line.rstrip("\r\n")) is not None


def first_failure(procs: dict[str, subprocess.Popen[bytes]]) -> tuple[int, str]:
    """The failure to report: a death by signal (negative code) before any error exit."""
    codes = {name: proc.poll() for name, proc in procs.items()}
    return min((rc, name) for name, rc in codes.items() if rc is not None and rc != 0)


def resolve_ports(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The request's replicas, complete (``expand``), each ``<port:N>`` (one per replica) a fresh free port."""
    ports = free_ports(len(request["replicas"]))
    placeholders = {f"<port:{i}>": str(port) for i, port in enumerate(ports)}
    cluster = substitute(request.get("cluster", {}), placeholders)
    return [expand(cluster, substitute(replica, placeholders)) for replica in request["replicas"]]


def expand(cluster: dict[str, Any], replica: dict[str, Any]) -> dict[str, Any]:
    """``replica`` with every entry of the shared ``cluster`` description added to its ``env`` and ``files``.

    A shared string is given as is; a shared object is completed with the replica's own
    keys from its ``cluster`` marker (filling the ``null`` slots in place) and given as
    JSON, exactly as ``json.dumps`` writes it.

    Example:
    >>> cluster = {"env": {"TF_CONFIG": {"cluster": {"worker": ["a:1", "b:1"]}, "task": None}}}
    >>> replica = {"name": "worker-1", "env": {}, "cluster": {"env": {"TF_CONFIG": {"task": {"index": 1}}}}}
    >>> expand(cluster, replica)["env"]["TF_CONFIG"]
    '{"cluster": {"worker": ["a:1", "b:1"]}, "task": {"index": 1}}'
    """
    complete = {key: value for key, value in replica.items() if key != "cluster"}
    for kind, shared in cluster.items():
        own = replica.get("cluster", {}).get(kind, {})
        complete[kind] = {**replica.get(kind, {})}
        for key, value in shared.items():
            complete[kind][key] = (
                value if isinstance(value, str) else json.dumps({**value, **own.get(key, {})})
            )
    return complete


def completion_marker(request: dict[str, Any], run_dir: Path) -> Path | None:
    """Where the chief's runtime records a verified export (beside the export), or None.

    The export folder comes from the chief's runtime configuration; a bucket URI lives in
    the stand-in buckets (``$CLOUDTRAIN_LOCAL_HOME/buckets``), a local path as it is.
    """
    chief = request["replicas"][0]["name"]
    config = replica_env(request, chief).get(CONFIG_ENV)
    if config is None:
        return None
    export = json.loads(config).get("export_dir", "")
    buckets = str(run_dir.parent.parent / "buckets")
    return Path(bucket_path(export).replace("<buckets>", buckets)).parent / COMPLETE_FILE


def replica_env(request: dict[str, Any], name: str) -> dict[str, str]:
    """The variables ``request`` gives replica ``name``: its own ``env`` and its part of the cluster.

    Example:
    >>> request = {"cluster": {"env": {"CLOUDTRAIN_HOSTS": "algo-1=127.0.0.1:<port:0>"}},
    ...            "replicas": [{"name": "algo-1", "env": {"CLOUDTRAIN_ROOT": "<run>/hosts/algo-1"}}]}
    >>> replica_env(request, "algo-1")
    {'CLOUDTRAIN_ROOT': '<run>/hosts/algo-1', 'CLOUDTRAIN_HOSTS': 'algo-1=127.0.0.1:<port:0>'}
    """
    replica = next(replica for replica in request["replicas"] if replica["name"] == name)
    env: dict[str, str] = expand(request.get("cluster", {}), replica)["env"]
    return env


def substitute(value: Any, placeholders: dict[str, str]) -> Any:
    """``value`` (JSON-like) with every placeholder replaced in every string, keys included."""
    if isinstance(value, str):
        for placeholder, text in placeholders.items():
            value = value.replace(placeholder, text)
        return value
    if isinstance(value, dict):
        return {substitute(k, placeholders): substitute(v, placeholders) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(item, placeholders) for item in value]
    return value


def free_ports(count: int) -> list[int]:
    """``count`` distinct free TCP ports on 127.0.0.1 (bound together, then released)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def stop(procs: Collection[subprocess.Popen[bytes]], *, grace_s: float, first: int | None = None) -> None:
    """Give the replicas ``grace_s`` to end (after ``first``, e.g. SIGTERM), then SIGKILL and reap.

    The grace lets a survivor finish a backup file it is writing when its peer dies
    (Keras 3 writes ``latest.weights.h5`` in place; a kill mid-write corrupts it). It
    cannot wait for training: a survivor blocks in its next all-reduce.
    """
    if first is not None:
        signal_all(procs, first)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(proc.poll() is None for proc in procs):
        time.sleep(POLL_S)
    signal_all(procs, signal.SIGKILL)
    for proc in procs:
        proc.wait()


def signal_all(procs: Collection[subprocess.Popen[bytes]], signum: int) -> None:
    """Send ``signum`` to the process group of each replica still running."""
    for proc in procs:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signum)


def describe_exit(rc: int) -> str:
    """``exit 1``, or ``killed by SIGKILL`` for a negative return code."""
    if rc < 0:
        return f"killed by {signal.Signals(-rc).name}"
    return f"exit {rc}"


def detach(run_dir: Path) -> None:
    """Fork the launcher into its own session; the parent returns once the launcher recorded itself.

    The submitting process only waits for the short-lived parent, so the launcher is
    never its zombie child and outlives it, like a cloud job outlives the shell. The
    launcher writes ``launcher.pid`` after ``setsid``, so the record holds the group it
    leads; the parent waits for that, so ``status`` never looks before it exists.
    """
    recorded, tell = os.pipe()
    if os.fork():
        os.close(tell)
        if os.read(recorded, 1):
            os._exit(0)
        os.write(2, b"The launcher ended before it recorded its pid.\n")
        os._exit(1)
    os.close(recorded)
    os.setsid()
    write_record(run_dir / LAUNCHER_FILE, ProcessRecord.of(os.getpid()).to_json())
    os.write(tell, b"1")
    os.close(tell)
    log = os.open(run_dir / "launcher.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    for fd in (1, 2):
        os.dup2(log, fd)
    os.close(log)


def main(argv: list[str]) -> None:
    """Entry point: ``[--detach] RUN_DIR`` (run through ``local.LAUNCHER_PROGRAM``)."""
    # Before the launcher records itself: a cancel that comes at once must find the handler.
    cancelled = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: cancelled.set())
    if argv[0] == "--detach":
        argv = argv[1:]
        detach(Path(argv[0]))
    files = RunFiles(Path(argv[0]))
    files.start_heartbeat()
    try:
        Launcher(files, cancelled, verbose=os.environ.get(VERBOSE_ENV) == "1").run()
    except Exception as exc:  # the run must end with a status, whatever went wrong here
        files.say("cloudtrain", f"Launcher error: {exc!r}")
        detail = f"The local launcher failed: {exc!r}"
        files.set_status("failed", "LAUNCHER_ERROR", detail, failures.launcher_failure(detail))
        raise
    finally:
        files.close()
