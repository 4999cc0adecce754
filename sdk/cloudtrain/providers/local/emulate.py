"""Run a cloud provider's rendered request on this machine, as that provider would.

The request comes from the real provider's ``render``, so what runs here is exactly
what would be sent. The provider's ``emulate`` (``cloudtrain.provider.emulation``)
turns it into local replicas that get what that provider gives a replica, and nothing
that says it is emulated except the documented root (``CLOUDTRAIN_ROOT``) and, where
host names do not resolve on one machine, a name resolver override.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cloudtrain import runs
from cloudtrain.errors import ProviderError, SpecError
from cloudtrain.provider import registry
from cloudtrain.provider.emulation import JOB, Emulable, bucket_path, stand_in

if TYPE_CHECKING:
    from cloudtrain.planning import Plan


def emulable() -> tuple[str, ...]:
    """The providers whose requests can run here: ``--emulate`` choices."""
    return tuple(p.name for p in registry.providers() if isinstance(p, Emulable))


def emulator(name: str) -> Emulable:
    """The provider ``name``, if it can be emulated.

    Raises:
        SpecError: naming the providers that can.
    """
    provider = registry.get(name) if name in registry.names() else None
    if not isinstance(provider, Emulable):
        raise SpecError(f"--emulate: {name!r} is not a provider to emulate. Use {' or '.join(emulable())}.")
    return provider


def render(plan: Plan) -> dict[str, Any]:
    """The local request that runs ``plan``'s cloud request as that provider would.

    What is uploaded where, and how often the job restarts, come from the cloud request
    alone (the provider's ``emulate``); ``outputs`` is what the plan promises, so a run
    shows whether the request really delivers every artifact there.
    """
    assert plan.bundle is not None  # local.render checked it
    _check_emulable(plan)
    provider = plan.target if isinstance(plan.target, Emulable) else emulator(plan.provider)
    cloud = provider.render(plan)
    emulated = provider.emulate(plan, cloud)
    return {
        "name": plan.name,
        "run_id": runs.of_plan(plan),
        "emulates": plan.provider,
        "job": emulated.pop("job", ""),
        "outputs": stand_in(plan.outputs.for_job(JOB)),
        "upload": {"bundle": plan.bundle, "target": bucket_path(plan.bundle)},
        **emulated,
    }


def cpu_cannot_share_devices(plan: Plan) -> bool:
    """Whether one process per host cannot emulate the plan's devices on the CPU.

    TensorFlow's MultiWorkerMirroredStrategy drives a single CPU device per worker (its
    local devices are the GPUs, else the one CPU), so several devices on each of several
    hosts cannot live in one process per host. Keras on JAX and one-host jobs can.
    """
    return plan.hosts > 1 and plan.devices_per_host > 1 and plan.spec.training.keras_backend == "tensorflow"


def _check_emulable(plan: Plan) -> None:
    """Refuse what one CPU cannot emulate faithfully: the request runs one container per host."""
    if cpu_cannot_share_devices(plan):
        raise SpecError(
            f"--emulate {plan.provider}: {plan.hosts} hosts × {plan.devices_per_host} devices cannot be "
            "emulated with TensorFlow on CPUs (MultiWorkerMirroredStrategy uses one CPU device per "
            "worker). Emulate with --set resources.per_host=1, or run the plain local provider, "
            "which starts one worker per device."
        )


def take_job_name(request: dict[str, Any], taken: Path, provider: Emulable) -> str:
    """The first of the emulated service's (``provider``'s) names for this job that no earlier job here was given.

    Names are taken by creating ``taken/<provider>/<name>``, which fails if it exists, so
    two submits never share one, as on the service (SageMaker answers ``ResourceInUse``).

    Raises:
        ProviderError: every name the service would give is taken.
    """
    folder = taken / provider.name
    folder.mkdir(parents=True, exist_ok=True)
    for name in provider.job_names(request["job"]):
        with contextlib.suppress(FileExistsError):
            (folder / name).mkdir()
            return name
    raise ProviderError(
        f"Every name {provider.name} would give another job of {request['job']!r} is taken here. "
        "Change the spec, or submit with --new."
    )
