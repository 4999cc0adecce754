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
replica (or, for ``spot``, every replica) kills itself once and the restart recovers.
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
    restart,
    stand_in,
)
from cloudtrain.provider.transfer import bundle_uri
from cloudtrain.providers.local import emulate

if TYPE_CHECKING:
    from cloudtrain.planning import Plan

MAX_RESTARTS = 3
_FAULT = re.compile(r"^((chief|master|worker):[0-9]+|spot|stop)@(epoch|step):[0-9]+\Z")
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
        "outputs": stand_in(plan.outputs),
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
    a resume elsewhere: ``cloudtrain submit --run-id``).

    Raises:
        SpecError: if ``fault`` is not ``<task_type>:<index>@epoch:<n>``, ``@step:<n>``,
            ``spot@...`` or ``stop@...``, or is a spot interruption of a job that does not use spot.
    """
    if fault is None:
        return request
    if not _FAULT.match(fault):
        raise SpecError(
            f"--fault: {fault!r} is not a fault. Use <task_type>:<index>@epoch:<n> or @step:<n>, "
            "e.g. --fault worker:0@epoch:1 (task types as in TF_CONFIG: chief, worker; "
            "where the provider sets no TF_CONFIG, host N is worker:N-1), spot@epoch:<n> "
            "for a spot interruption, or stop@epoch:<n> for a lost region (no restart)."
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
