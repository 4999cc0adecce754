"""The local provider: run a job on this machine as the cloud would, one process per host.

``render(plan)`` describes exactly what will start: one replica per host, each with its
``argv`` (``python -m cloudtrain_runtime``), the environment it gets on top of this
shell's (the launcher only adds ``PYTHONUNBUFFERED=1`` and drops a stray ``TF_CONFIG``
and the like from the shell, see ``local_launcher``), and the folder that stands in
for its machine's ``/`` (``CLOUDTRAIN_ROOT``).
A plan for ``vertex`` or ``sagemaker`` is rendered by that provider's own backend and
then translated into the replicas that provider would start (``local_emulate``), so
``--emulate`` proves the cloud request trains. ``render`` is pure, so three things
are placeholders that ``submit`` fills in:

- ``<run>``: the run folder, ``$CLOUDTRAIN_LOCAL_HOME/runs/<id>``.
- ``<buckets>``: the stand-in buckets, ``$CLOUDTRAIN_LOCAL_HOME/buckets/{gcs,s3}/BUCKET``.
  They persist between runs like real buckets (a job resumes from its backup there).
- ``<port:N>``: free loopback ports, chosen by the launcher for every attempt (a
  restarted set never reuses a port still held by a dying process).

``$CLOUDTRAIN_LOCAL_HOME`` defaults to ``$XDG_CACHE_HOME/cloudtrain/local`` (``~/.cache``
without XDG). A local ``storage.root`` is used as it is (``./outputs`` next to
job.yaml); ``gs://`` and ``s3://`` roots land in the stand-in buckets.

``submit`` copies the code bundle to where the request says (the "upload"), writes the
run folder and starts the detached launcher (``local_launcher``), which supervises the
replicas, restarts the whole set up to ``max_restarts`` times (default 3) when one
is killed (a lost host; an error exit fails the run at once), and records status and logs in the run folder. ``fault`` (``--fault
chief:0@epoch:2``) is passed to the runtime as ``CLOUDTRAIN_FAULT`` on the first
attempt only, so the chosen replica kills itself once and the restart recovers.
The run outlives the shell, as a cloud job does: Ctrl-C on ``cloudtrain submit`` stops
following it, ``cloudtrain cancel local:<id>`` stops it. To allow more or fewer
restarts, change the request's ``max_restarts`` before ``submit`` (Python API).

Example:
>>> from cloudtrain.spec import JobSpec
>>> from cloudtrain.planning import plan
>>> spec = JobSpec(name="demo", code={"module": "trainer.task"}, storage={"root": "/tmp/demo"},
...                resources={"hosts": 2})
>>> request = render(plan(spec, "local").with_bundle("/tmp/demo/code/0123.tar.gz"))
>>> [replica["name"] for replica in request["replicas"]]
['chief-0', 'worker-0']
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cloudtrain import container
from cloudtrain.errors import ProviderError, SpecError
from cloudtrain.providers import local_emulate
from cloudtrain.providers.local_job import LocalJob, local_home, run_dir_for
from cloudtrain.providers.local_launcher import substitute

if TYPE_CHECKING:
    from cloudtrain.bundle import Bundle
    from cloudtrain.planning import Plan

__all__ = ["LocalJob", "attach", "owns", "plan_provider", "render", "submit", "with_fault"]

MAX_RESTARTS = 3
ID_PREFIX = "local:"
CPU_DEVICES_ENV = "CLOUDTRAIN_CPU_DEVICES"
RUNTIME_ARGV = ["-m", "cloudtrain_runtime"]
# Not ``-m cloudtrain.providers.local_launcher``: importing cloudtrain imports that
# module first, and runpy warns about running a module that is already imported.
LAUNCHER_PROGRAM = "import sys; from cloudtrain.providers.local_launcher import main; main(sys.argv[1:])"
# Where each bucket scheme is mounted under a replica's root (Vertex: Cloud Storage FUSE).
MOUNTS = {"gs://": "/gcs/", "s3://": "/s3/"}
_FAULT = re.compile(r"^(chief|master|worker):\d+@(epoch|step):\d+$")


def render(plan: Plan) -> dict[str, Any]:
    """The processes, environments and host folders ``submit`` will start for ``plan``.

    Raises:
        ProviderError: if the plan has no code bundle URI yet (``api.pack_code``).
    """
    if plan.bundle is None:
        raise ProviderError(
            "The plan has no code bundle URI, so the replicas would have no code. "
            "Pack it first: cloudtrain.api.pack_code(plan)."
        )
    if plan.provider in local_emulate.EMULATED:
        return local_emulate.render(plan, max_restarts=MAX_RESTARTS)
    processes, _ = process_layout(plan)
    tasks = task_names(processes)
    addresses = [f"127.0.0.1:<port:{i}>" for i in range(processes)]
    return {
        "name": plan.name,
        "emulates": None,
        "max_restarts": MAX_RESTARTS,
        "upload": {"bundle": plan.bundle, "target": bucket_path(plan.bundle)},
        "replicas": [_replica(plan, task, addresses) for task in tasks],
    }


def process_layout(plan: Plan) -> tuple[int, int]:
    """How many replica processes run a plain local job, and how many CPU devices each gets.

    One process per host, each emulating ``per_host`` devices, except where TensorFlow
    cannot (``local_emulate.cpu_cannot_share_devices``): then each emulated device runs
    as its own worker process, so 2 hosts × 2 devices are 4 workers and 4 replicas, the
    same all-reduce as on 2 × 2 GPUs.

    Example:
    >>> from cloudtrain.spec import JobSpec
    >>> from cloudtrain.planning import plan
    >>> spec = JobSpec(name="demo", code={"module": "t"}, resources={"hosts": 2, "per_host": 2})
    >>> process_layout(plan(spec, "local"))
    (4, 1)
    """
    if local_emulate.cpu_cannot_share_devices(plan):
        return plan.hosts * plan.devices_per_host, 1
    return plan.hosts, plan.devices_per_host


def task_names(hosts: int) -> list[tuple[str, int]]:
    """TF_CONFIG tasks for ``hosts`` hosts: the chief, then workers counted from 0 (as on Vertex)."""
    return [("chief", 0)] + [("worker", i) for i in range(hosts - 1)]


def _replica(plan: Plan, task: tuple[str, int], addresses: list[str]) -> dict[str, Any]:
    name = f"{task[0]}-{task[1]}"
    assert plan.bundle is not None  # render checked it
    env = container.environment(plan, container_path(os.path.abspath(plan.bundle)))
    env[container.ROOT_ENV] = f"<run>/hosts/{name}"
    env[CPU_DEVICES_ENV] = str(process_layout(plan)[1])
    if len(addresses) > 1:
        cluster = {"chief": addresses[:1], "worker": addresses[1:]}
        env["TF_CONFIG"] = json.dumps({"cluster": cluster, "task": {"type": task[0], "index": task[1]}})
    return {
        "name": name,
        "argv": [sys.executable, *RUNTIME_ARGV],
        "env": env,
        "root": f"<run>/hosts/{name}",
        "links": _mounts(plan.bundle),
    }


def _mounts(bundle: str) -> dict[str, str]:
    """The stand-in buckets at ``/gcs`` and ``/s3``, and a local bundle's folder at its own path.

    The runtime opens ``CLOUDTRAIN_BUNDLE`` under its root, like every fixed container
    path, so a bundle kept in a local folder is mounted at the same path inside the root.
    """
    mounts = {"gcs": "<buckets>/gcs", "s3": "<buckets>/s3"}
    if container_path(bundle) == bundle:
        folder = os.path.dirname(os.path.abspath(bundle))
        mounts[folder.lstrip("/")] = folder
    return mounts


def container_path(uri: str) -> str:
    """Where a replica opens ``uri``: ``/gcs/B/p`` or ``/s3/B/p`` under its root, a local path as is."""
    for scheme, mount in MOUNTS.items():
        if uri.startswith(scheme):
            return mount + uri.removeprefix(scheme)
    return uri


def bucket_path(uri: str) -> str:
    """Where ``uri`` lives on this machine: in the stand-in buckets, or the local path itself."""
    path = container_path(uri)
    return f"<buckets>{path}" if path != uri else uri


def plan_provider(provider: str, *, emulate: str | None = None, fault: str | None = None) -> str:
    """The provider to plan for: the emulated one with ``--emulate``, else ``provider``.

    Raises:
        SpecError: if ``--emulate`` or ``--fault`` is used with a provider other than local.
    """
    if provider != "local" and (emulate or fault):
        switch = "--emulate" if emulate else "--fault"
        raise SpecError(
            f"{switch} runs the job on this machine, so it needs --provider local (got {provider!r}). "
            f"Use: cloudtrain submit JOB --provider local {switch} {emulate or fault}"
        )
    if emulate is not None and emulate not in local_emulate.EMULATED:
        raise SpecError(f"--emulate: {emulate!r} is not a provider to emulate. Use vertex or sagemaker.")
    return emulate or provider


def with_fault(request: dict[str, Any], fault: str | None) -> dict[str, Any]:
    """``request`` with a fault to inject on the first attempt, e.g. ``worker:1@epoch:1``.

    Raises:
        SpecError: if ``fault`` is not ``<task_type>:<index>@epoch:<n>`` or ``@step:<n>``.
    """
    if fault is None:
        return request
    if not _FAULT.match(fault):
        raise SpecError(
            f"--fault: {fault!r} is not a fault. Use <task_type>:<index>@epoch:<n> or @step:<n>, "
            "e.g. --fault worker:0@epoch:1 (task types as in TF_CONFIG: chief, worker; "
            "on SageMaker every host is a worker, algo-1 is worker:0)."
        )
    return {**request, "fault": fault}


def submit(plan: Plan, request: dict[str, Any], bundle: Bundle, clients: Any = None) -> LocalJob:
    """Upload the bundle, write the run folder and start the detached launcher.

    ``clients`` is accepted for the provider interface; the local provider needs none.
    """
    del clients
    home = local_home()
    job_id = f"{ID_PREFIX}{plan.name}-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"
    run_dir = run_dir_for(job_id)
    run_dir.mkdir(parents=True)
    resolved = substitute(request, {"<run>": str(run_dir), "<buckets>": str(home / "buckets")})
    _upload(bundle.path, Path(resolved["upload"]["target"]))
    (run_dir / "request.json").write_text(json.dumps(resolved, indent=2))
    _start_launcher(run_dir)
    return LocalJob(job_id, request=resolved)


def _upload(source: Path, target: Path) -> None:
    """Copy the bundle to its target; the name is the content hash, so an existing copy is it."""
    if target.exists():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    shutil.copyfile(source, tmp)
    tmp.replace(target)


def _start_launcher(run_dir: Path) -> None:
    """Start the launcher detached: it forks, writes its pid file, and this call returns."""
    started = subprocess.run(
        [sys.executable, "-c", LAUNCHER_PROGRAM, "--detach", str(run_dir)],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    if started.returncode != 0:
        raise ProviderError(
            f"The local launcher did not start (exit {started.returncode}): "
            f"{(started.stderr.strip().splitlines() or ['no output'])[-1]}. Run folder: {run_dir}"
        )


def attach(job_id: str, clients: Any = None) -> LocalJob:
    """Reconnect to a local run by its ID, from any shell on this machine.

    Raises:
        ProviderError: if no run folder exists for ``job_id``.
    """
    del clients
    run_dir = run_dir_for(job_id)
    if not (run_dir / "request.json").is_file():
        raise ProviderError(
            f"No local run {job_id!r} under {run_dir.parent}. Check the ID that submit printed, "
            "and that CLOUDTRAIN_LOCAL_HOME is the same as when it was submitted."
        )
    return LocalJob(job_id, request=json.loads((run_dir / "request.json").read_text()))


def owns(job_id: str) -> bool:
    """Local job IDs start with ``local:``."""
    return job_id.startswith(ID_PREFIX)
