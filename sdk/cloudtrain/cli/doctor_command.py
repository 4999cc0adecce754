"""``doctor``: are this machine's devices, versions and collectives what a plan needs?

The checks import TensorFlow, so they run in a child process, ``python -m
cloudtrain_runtime doctor --json``, the same runtime a training replica runs; this
process (the ``cloudtrain`` CLI) never imports TensorFlow. ``doctor_request`` builds
that child's command and environment from the plan (pure); ``run_doctor`` starts it
and reads its report.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import click

from cloudtrain.cli.options import PROVIDER_CHOICE, json_option, profile_option
from cloudtrain.errors import CloudtrainError, SpecError

if TYPE_CHECKING:
    from cloudtrain.planning import Plan
    from cloudtrain_runtime.diagnosis import Check

# Without a job: the smallest distributed run, 2 replicas (the issue: "replicas >= 2").
NO_JOB_DEVICES = 2
# TensorFlow's import, one Keras step and an all-reduce take ~10 s on 2 CPU cores; many
# emulated replicas take longer.
TIMEOUT_S = 600


@dataclass(frozen=True)
class DoctorRequest:
    """The child process that runs the checks: its command and the variables it gets.

    Attributes:
        argv: the command, this Python running the runtime's doctor.
        set_env: variables set on top of this process's environment.
        unset_env: variables removed from it.
        devices: the replicas the checks hold this machine to.
    """

    argv: tuple[str, ...]
    set_env: Mapping[str, str] = field(default_factory=dict)
    unset_env: tuple[str, ...] = ()
    devices: int = NO_JOB_DEVICES

    def environment(self, base: Mapping[str, str]) -> dict[str, str]:
        """``base`` with ``unset_env`` removed and ``set_env`` applied."""
        kept = {name: value for name, value in base.items() if name not in self.unset_env}
        return {**kept, **self.set_env}

    def __repr__(self) -> str:
        return (
            f"DoctorRequest(argv={list(self.argv)!r}, devices={self.devices}, set={sorted(self.set_env)!r})"
        )


def doctor_request(plan: Plan | None) -> DoctorRequest:
    """The child that checks ``plan``'s replicas on this machine, or 2 replicas without a plan.

    Every replica of the plan runs in the one child, so it gets the plan's replica count
    as emulated CPU devices (used only where TensorFlow finds no GPU) and the plan's
    runtime configuration, from which it takes the strategy and the count to expect.

    Example:
    >>> request = doctor_request(None)
    >>> request.argv[1:], request.set_env, request.unset_env
    (('-m', 'cloudtrain_runtime', 'doctor', '--json'), {'CLOUDTRAIN_CPU_DEVICES': '2'}, ('CLOUDTRAIN_CONFIG',))
    """
    from cloudtrain import container
    from cloudtrain.provider.emulation import CPU_DEVICES_ENV, RUNTIME_ENTRYPOINT

    argv = (sys.executable, *RUNTIME_ENTRYPOINT, "doctor", "--json")
    if plan is None:
        # A CLOUDTRAIN_CONFIG left in the shell would be taken for the plan.
        return DoctorRequest(argv, {CPU_DEVICES_ENV: str(NO_JOB_DEVICES)}, (container.CONFIG_ENV,))
    env = {CPU_DEVICES_ENV: str(plan.replicas), container.CONFIG_ENV: container.runtime_config_json(plan)}
    return DoctorRequest(argv, env, devices=plan.replicas)


def plan_check(job: str, plan: Plan) -> Check:
    """The report's first line: the plan whose replicas the runtime's checks then expect."""
    from cloudtrain_runtime.diagnosis import OK, Check

    machine = f" on {plan.hosts} × {plan.machine.machine_type}" if plan.machine else ""
    return Check(
        "plan",
        OK,
        f"{job} planned for {plan.provider}{machine}: its {plan.replicas} replicas are checked here in "
        "one process (emulated on the CPU where no GPU is visible)",
    )


def run_doctor(request: DoctorRequest, environ: Mapping[str, str] | None = None) -> list[Check]:
    """Start the child and return its checks.

    Raises:
        CloudtrainError: when the child does not finish in time or answers with no report,
            with the command that shows why.
    """
    env = request.environment(os.environ if environ is None else environ)
    try:
        done = subprocess.run(list(request.argv), env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise CloudtrainError(f"The checks did not finish in {TIMEOUT_S} s. {_by_hand(request)}") from None
    return read_report(done, request)


def read_report(done: subprocess.CompletedProcess[str], request: DoctorRequest) -> list[Check]:
    """The checks in the child's JSON report.

    Raises:
        CloudtrainError: naming the child's exit status and last line of stderr when
            stdout holds no report.
    """
    from cloudtrain_runtime.diagnosis import from_rows

    try:
        return from_rows(json.loads(done.stdout))
    except ValueError as err:
        said = (done.stderr.strip().splitlines() or ["nothing on stderr"])[-1]
        raise CloudtrainError(
            f"The checks gave no report (exit {done.returncode}, {err}): {said}. {_by_hand(request)}"
        ) from None


def _by_hand(request: DoctorRequest) -> str:
    """The command that shows the checks' own output; the plan's JSON is left out, it is long."""
    from cloudtrain.provider.emulation import CPU_DEVICES_ENV

    command = shlex.join(request.argv[:-1])  # without --json: the text report
    return f"Run them by hand to see why: {CPU_DEVICES_ENV}={request.devices} {command}"


def _plan(
    job: str | None, provider: str | None, overrides: tuple[str, ...], profile: str | None
) -> Plan | None:
    """The plan of JOB for ``provider``, or None without a job."""
    if job is None:
        if provider or overrides:
            raise SpecError(
                "--provider and --set choose whose plan to check; give JOB too: "
                "cloudtrain doctor job.yaml --provider P"
            )
        return None
    from cloudtrain.planning import plan
    from cloudtrain.provider import registry
    from cloudtrain.specfile import load_spec

    spec = load_spec(job, overrides, profile=profile, provider=provider)
    return plan(spec, registry.get(provider or spec.provider))


@click.command("doctor")
@click.argument("job", required=False, type=click.Path(dir_okay=False))
@click.option(
    "--provider",
    "-p",
    type=PROVIDER_CHOICE,
    default=None,
    help="Whose plan to check. Default: the spec's provider field (local if unset).",
)
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a spec field, e.g. --set resources.per_host=4 (repeatable).",
)
@profile_option
@json_option
def doctor_command(
    job: str | None, provider: str | None, overrides: tuple[str, ...], profile: str | None, as_json: bool
) -> None:
    """Check this machine's devices, versions and all-reduce before trusting a run.

    Runs `python -m cloudtrain_runtime doctor` (the checks a replica can run in its
    container as `cloudtrain-runtime doctor`): Python, TensorFlow, Keras, JAX,
    CUDA/cuDNN and NCCL versions; the devices each framework sees, and nvidia-smi's
    GPUs; the environment the provider gave (TF_CONFIG, SageMaker's resourceconfig.json:
    who is chief); the strategy the plan would pick, its replicas (>= 2, or the plan's
    count), one Keras training step under it and an all-reduce whose sum is checked on
    every replica. With JOB the replicas and strategy come from its plan; without, 2
    replicas. Where no GPU is visible the replicas are emulated on the CPU.

    Each line is ok, warn or fail, with the fix. The exit code is 1 when any check fails.
    With --json: a list of {"check", "status", "detail", "fix"}.

    \b
    Examples:
      cloudtrain doctor
      cloudtrain doctor job.yaml --provider vertex --json
    """
    from cloudtrain.cli.live import Working
    from cloudtrain_runtime.diagnosis import exit_code, render_json, render_text

    planned = _plan(job, provider, overrides, profile)
    request = doctor_request(planned)
    with Working(
        f"doctor: checking {request.devices} replica(s) in a child process (TensorFlow loads first)..."
    ):
        checks = run_doctor(request)
    if job and planned:
        checks.insert(0, plan_check(job, planned))
    click.echo(render_json(checks) if as_json else render_text(checks))
    click.get_current_context().exit(exit_code(checks))
