"""The local provider: run a job on this machine as the cloud would, one process per host.

``render(plan)`` describes exactly what will start: one replica per host, each with its
``argv`` (``python -m cloudtrain_runtime``), the environment it gets on top of this
shell's (the launcher only adds ``PYTHONUNBUFFERED=1`` and drops a stray ``TF_CONFIG``
and the like from the shell, see ``launcher``), and the folder that stands in
for its machine's ``/`` (``CLOUDTRAIN_ROOT``).
A plan for a cloud provider is rendered by that provider and then translated into the
replicas it would start (``emulate``), so ``--emulate`` proves the cloud request trains. ``render`` is pure, so three things
are placeholders that ``submit`` fills in:

- ``<run>``: the run folder, ``$CLOUDTRAIN_LOCAL_HOME/runs/<id>``.
- ``<buckets>``: the stand-in buckets, ``$CLOUDTRAIN_LOCAL_HOME/buckets/{gcs,s3}/BUCKET``.
  They persist between runs like real buckets (a job resumes from its backup there).
- ``<port:N>``: free loopback ports, chosen by the launcher for every attempt (a
  restarted set never reuses a port still held by a dying process).

What every replica shares is written once, in the request's ``cluster`` entry, and
each replica names only its own part in its ``cluster`` marker; the launcher completes
each replica's ``env`` and ``files`` from the two before it starts it
(``launcher.expand``), so the request grows with the hosts, not with their square. A
shared string is given to every replica as is; a shared object gets the replica's own
keys (its ``null`` slots filled in place) and is given as JSON. Three hosts::

    "cluster": {"env": {"TF_CONFIG": {"cluster": {"chief": ["127.0.0.1:<port:0>"],
                        "worker": ["127.0.0.1:<port:1>", "127.0.0.1:<port:2>"]}, "task": null}}},
    "replicas": [..., {"name": "worker-1", "env": {...},
                       "cluster": {"env": {"TF_CONFIG": {"task": {"type": "worker", "index": 1}}}}}]

gives ``worker-1`` the ``TF_CONFIG`` ``{"cluster": {...}, "task": {"type": "worker",
"index": 1}}``. An emulated Vertex job shares ``TF_CONFIG`` and ``CLUSTER_SPEC`` (with
the job) the same way, an emulated SageMaker job ``CLOUDTRAIN_HOSTS`` and
``resourceconfig.json`` (each host fills in ``current_host``).
``launcher.replica_env(request, name)`` shows the variables one replica gets.

``$CLOUDTRAIN_LOCAL_HOME`` defaults to ``$XDG_CACHE_HOME/cloudtrain/local`` (``~/.cache``
without XDG). A local ``storage.root`` is used as it is (``./outputs`` next to
job.yaml); ``gs://`` and ``s3://`` roots land in the stand-in buckets.

``submit`` (``run``) copies the code bundle to where the request says (the "upload"),
writes the run folder and starts the detached launcher (``launcher``), which supervises the
replicas, restarts the whole set as the request's ``restarts`` allow (a lost host:
up to 3 times here; an emulated cloud restarts exactly as its rendered request says
that provider would; an error exit fails the run at once), and records status and logs
in the run folder. ``fault`` (``--fault chief:0@epoch:2``, ``--fault spot@epoch:2``) is
passed to the runtime as ``CLOUDTRAIN_FAULT`` on the first attempt only, so the chosen
replica (or, for ``spot``, every replica) kills itself once and the restart recovers;
``--fault preempt@step:N`` gives the last host the provider's notice after step N (SIGTERM,
then SIGKILL after the emulated provider's grace), and the restart resumes from the step
its replicas backed up (``cloudtrain_runtime.notice``); ``--fault hang@step:N`` makes the last
host's replica stop making progress after step N: the others wait in the next collective,
each replica's hang watchdog ends its attempt with exit 75 and the run resumes from its last
backup (``cloudtrain_runtime.watchdog``).
``outputs`` says where each artifact will be on this machine (``<run>`` and
``<buckets>`` filled in by ``submit``).
The run outlives the shell, as a cloud job does: Ctrl-C on ``cloudtrain submit`` stops
following it, ``cloudtrain cancel local:<id>`` stops it. To allow more or fewer
restarts, change the request's ``restarts`` limits before ``submit`` (Python API).

Example:
>>> from cloudtrain.spec import JobSpec
>>> from cloudtrain.api import plan
>>> spec = JobSpec(name="demo", code={"module": "trainer.task"}, storage={"root": "/tmp/demo"},
...                resources={"hosts": 2})
>>> request = render(plan(spec, "local").with_bundle("/tmp/demo/code/0123.tar.gz").with_run("r1"))
>>> [replica["name"] for replica in request["replicas"]]
['chief-0', 'worker-0']
"""

from __future__ import annotations

import os
import re
import sys
from typing import TYPE_CHECKING, Any

from cloudtrain import container, runs
from cloudtrain.errors import SpecError
from cloudtrain.provider.emulation import (
    CPU_DEVICES_ENV,
    RUNTIME_ENTRYPOINT,
    bucket_path,
    container_path,
    deadline,
    restart,
    stand_in,
)
from cloudtrain.provider.transfer import bundle_uri
from cloudtrain.providers.local import emulate
from cloudtrain.sections import MAX_DURATION_S

if TYPE_CHECKING:
    from cloudtrain.planning import Plan

MAX_RESTARTS = 3
_FAULT = re.compile(
    r"^(((chief|master|worker):[0-9]+|spot|stop)@(epoch|step):[0-9]+|(preempt|hang)@step:[0-9]+"
    r"|pending@[0-9]+(\.[0-9]+)?[smhd]?)\Z"
)
# The faults a plan can check before anything starts: which replica, and at which epoch.
_AIMED = re.compile(
    r"^(?:(?P<task>(?:chief|master|worker):[0-9]+)|spot|stop|preempt|hang)@(?P<unit>epoch|step):(?P<at>[0-9]+)\Z"
)
# A fault the launcher plays itself, before any replica starts: the job waits to start.
PENDING_FAULT = "pending@"
# What a plain local job waits in under ``--fault pending@``: this machine's own words.
WAITING = {"state": "pending", "provider_state": "PENDING", "reason": "waiting for capacity"}
# A lost region: every replica gone, the backups left as they are, and nothing restarts.
STOP_RULE = (
    "the region was lost (--fault {fault}), so nothing restarts here; resume the run elsewhere with --run-id"
)


def render(plan: Plan) -> dict[str, Any]:
    """The processes, environments and host folders ``submit`` will start for ``plan``.

    Raises:
        ProviderError: if the plan has no code bundle URI yet (``api.pack_code``).
    """
    bundle = bundle_uri(plan)
    if plan.provider != "local":
        return emulate.render(plan)
    processes, _ = process_layout(plan)
    tasks = task_names(processes)
    addresses = [f"127.0.0.1:<port:{i}>" for i in range(processes)]
    cluster = {"chief": addresses[:1], "worker": addresses[1:]}
    rule = f"the local provider restarts the set up to {MAX_RESTARTS} times"
    return {
        "name": plan.name,
        "run_id": runs.of_plan(plan),  # a new run is a new request
        "emulates": None,
        "restarts": {"host": restart(MAX_RESTARTS, rule), "spot": restart(MAX_RESTARTS, rule)},
        "deadline": deadline(plan.max_runtime_s, "MAX_RUNTIME_EXCEEDED", "max_runtime", "limits.max_runtime"),
        "outputs": stand_in(plan.outputs),
        "waiting": WAITING,
        "upload": {"bundle": bundle, "target": bucket_path(bundle)},
        "cluster": {"env": {"TF_CONFIG": {"cluster": cluster, "task": None}}} if processes > 1 else {},
        "replicas": [_replica(plan, task, distributed=processes > 1) for task in tasks],
    }


def process_layout(plan: Plan) -> tuple[int, int]:
    """How many replica processes run a plain local job, and how many CPU devices each gets.

    One process per host, each emulating ``per_host`` devices, except where TensorFlow
    cannot (``emulate.cpu_cannot_share_devices``): then each emulated device runs
    as its own worker process, so 2 hosts × 2 devices are 4 workers and 4 replicas, the
    same all-reduce as on 2 × 2 GPUs.

    Example:
    >>> from cloudtrain.spec import JobSpec
    >>> from cloudtrain.api import plan
    >>> spec = JobSpec(name="demo", code={"module": "t"}, resources={"hosts": 2, "per_host": 2})
    >>> process_layout(plan(spec, "local"))
    (4, 1)
    """
    if emulate.cpu_cannot_share_devices(plan):
        return plan.hosts * plan.devices_per_host, 1
    return plan.hosts, plan.devices_per_host


def task_names(hosts: int) -> list[tuple[str, int]]:
    """TF_CONFIG tasks for ``hosts`` hosts: the chief, then workers counted from 0 (as on Vertex)."""
    return [("chief", 0)] + [("worker", i) for i in range(hosts - 1)]


def _replica(plan: Plan, task: tuple[str, int], *, distributed: bool) -> dict[str, Any]:
    name = f"{task[0]}-{task[1]}"
    assert plan.bundle is not None  # render checked it
    env = {**container.environment(plan, container_path(os.path.abspath(plan.bundle))), **plan.env}
    env[container.ROOT_ENV] = f"<run>/hosts/{name}"
    env[CPU_DEVICES_ENV] = str(process_layout(plan)[1])
    replica = {
        "name": name,
        "task": f"{task[0]}:{task[1]}",  # TF_CONFIG's task: what --fault names
        "argv": [sys.executable, *RUNTIME_ENTRYPOINT],
        "env": env,
        "root": f"<run>/hosts/{name}",
        "links": _mounts(plan.bundle),
    }
    if distributed:
        replica["cluster"] = {"env": {"TF_CONFIG": {"task": {"type": task[0], "index": task[1]}}}}
    return replica


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


def with_fault(request: dict[str, Any], fault: str | None) -> dict[str, Any]:
    """``request`` with a fault to inject on the first attempt, e.g. ``worker:1@epoch:1``.

    ``<task_type>:<index>@...`` kills that replica, as a lost host; ``spot@...`` kills
    them all, as a spot interruption reclaims the machines; ``stop@...`` kills them all
    and restarts nothing, as when the whole region is lost (the run's backups stay, for
    a resume elsewhere: ``cloudtrain submit --run-id``); ``pending@DURATION`` holds the
    job in the provider's waiting state (the request's ``waiting``) that long before any
    replica starts, as a job waits for capacity.

    Raises:
        SpecError: if ``fault`` is not ``<task_type>:<index>@epoch:<n>``, ``@step:<n>``,
            ``spot@...``, ``stop@...`` or ``pending@DURATION``, or is a spot interruption of a
            job that does not use spot.
    """
    if fault is None:
        return request
    if not _FAULT.match(fault) or (
        fault.startswith(PENDING_FAULT) and not 1 <= pending_hold_s(fault) <= MAX_DURATION_S
    ):
        raise SpecError(
            f"--fault: {fault!r} is not a fault. Use <task_type>:<index>@epoch:<n> or @step:<n>, "
            "e.g. --fault worker:0@epoch:1 (task types as in TF_CONFIG: chief, worker; "
            "where the provider sets no TF_CONFIG, host N is worker:N-1), spot@epoch:<n> "
            "for a spot interruption, stop@epoch:<n> for a lost region (no restart), preempt@step:<n> "
            "for the provider's notice to one host (SIGTERM, then SIGKILL after its grace), hang@step:<n> for "
            "one replica that stops making progress (the hang watchdog ends the attempt), or "
            "pending@<duration> (1s to 365d, e.g. pending@90s) for a job that waits that long for "
            "capacity before it starts."
        )
    spot = request.get("restarts", {}).get("spot", {})
    if fault.startswith("spot@") and spot.get("limit") == 0:
        raise SpecError(
            f"--fault {fault}: the provider would not resume this job after a spot interruption: {spot['rule']}."
        )
    if fault.startswith("stop@"):
        stopped = restart(0, STOP_RULE.format(fault=fault))
        return {**request, "fault": fault, "restarts": {**request.get("restarts", {}), "stop": stopped}}
    return {**request, "fault": fault}


def check_fault_target(request: dict[str, Any], fault: str | None, epochs: int) -> None:
    """Refuse a fault that could never fire: a replica the job does not have, an epoch it never ends.

    Each replica of a rendered request names its TF_CONFIG task (``task``, as the runtime
    will see it); a ``@epoch:N`` fault fires at the end of epoch N, so 1 to ``epochs``.

    Raises:
        SpecError: naming the replicas there are, or the epochs there are.
    """
    aimed = _AIMED.match(fault or "")
    if aimed is None:
        return
    tasks = [replica["task"] for replica in request["replicas"] if "task" in replica]
    if aimed["task"] and tasks and aimed["task"] not in tasks:
        raise SpecError(
            f"--fault {fault}: the job has no replica {aimed['task']}, so the fault would never fire. "
            f"Its replicas are {', '.join(tasks)}; name one of them, or spot@... for all."
        )
    if aimed["unit"] == "epoch" and not 1 <= int(aimed["at"]) <= epochs:
        raise SpecError(
            f"--fault {fault}: the job trains {epochs} epoch{'s' * (epochs != 1)}, so epoch {aimed['at']} never "
            f"ends and the fault would never fire. Use @epoch:1 to @epoch:{epochs}, or raise training.epochs."
        )


def pending_hold_s(fault: str | None) -> float:
    """How long a ``pending@DURATION`` fault holds the job before it starts; 0 for any other.

    Example:
    >>> pending_hold_s("pending@90s"), pending_hold_s("pending@1.5m"), pending_hold_s("spot@epoch:1")
    (90.0, 90.0, 0.0)
    """
    if not fault or not fault.startswith(PENDING_FAULT):
        return 0.0
    duration = fault.removeprefix(PENDING_FAULT)
    unit = duration[-1] if duration[-1] in _UNIT_S else ""
    return float(duration.removesuffix(unit)) * _UNIT_S.get(unit, 1)


_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}
