"""``validate``, ``plan`` and ``schema``: everything that needs only the spec and the catalog."""

from __future__ import annotations

import json

import click

from cloudtrain.cli.options import json_option, local_options, run_id_option, spec_options, target
from cloudtrain.errors import SpecError
from cloudtrain.messages import counted
from cloudtrain.outputs import Outputs
from cloudtrain.planning import RUN, Plan, plan
from cloudtrain.provider import Provider, registry
from cloudtrain.provider.base import StartsProcesses
from cloudtrain.provider.sweeps import TRIAL
from cloudtrain.specfile import load_spec, load_spec_sources, problem_details


@click.command()
@spec_options
@local_options
@json_option
def validate(
    job: str,
    provider: str | None,
    overrides: tuple[str, ...],
    profile: str | None,
    emulate: str | None,
    faults: tuple[str, ...],
    as_json: bool,
) -> None:
    """Check JOB (a job.yaml) and that it can run on the provider: every check submit makes before sending.

    Every problem is printed on its own line with the field, the value and the fix;
    the exit code is 2 when there is any. The provider's request is rendered too (and
    thrown away), so its limits are checked as submit would check them; on the local
    provider the code's requirements.txt is checked against the Python that runs the
    replicas, and --fault against the job's replicas and epochs. What is allowed but
    cannot be checked (a node type the catalog cannot price) is a warning on stderr.
    With --json the answer is always JSON: {"valid": true, "warnings": [...], ...} or
    {"valid": false, "errors": [{"field", "message", "fix"}]}. Nothing is contacted over
    the network.

    \b
    Examples:
      cloudtrain validate job.yaml
      cloudtrain validate job.yaml --provider sagemaker --set resources.hosts=4
      cloudtrain validate job.yaml --emulate vertex --fault worker:0@epoch:2
    """
    from cloudtrain import api

    try:
        spec = load_spec(job, overrides, profile=profile, check_code=False, provider=provider)
        placing = emulate == "placement" or (spec.placement is not None and provider is None)
        chosen = None if placing else target(provider or spec.provider, emulate=emulate, faults=faults)
        planned = api.validate(spec, chosen)
    except SpecError as err:
        if not as_json:
            raise
        click.echo(json.dumps({"valid": False, "errors": problem_details(err.problems)}))
        click.get_current_context().exit(err.exit_code)
    warnings = api.warnings_of(planned)
    if as_json:
        valid = {
            "valid": True,
            "provider": planned.provider,
            "summary": summary(planned),
            "warnings": warnings,
        }
        click.echo(json.dumps(valid))
        return
    for warning in warnings:
        click.echo(f"Warning: {warning}", err=True)
    if spec.placement is not None and provider is None:
        count = len(spec.placement.candidates)
        click.echo(
            f"{job} is valid on every candidate of its placement ({count}); the first: {planned.provider}, {summary(planned)}"
        )
    else:
        click.echo(f"{job} is valid for {planned.provider}: {summary(planned)}")


@click.command("plan")
@spec_options
@run_id_option
@json_option
def plan_command(
    job: str,
    provider: str | None,
    overrides: tuple[str, ...],
    profile: str | None,
    run_id: str | None,
    as_json: bool,
) -> None:
    """Show how JOB resolves on a provider: machine, replicas, batch, learning rate, strategy, paths.

    Every artifact of a run lives under ROOT/runs/RUN_ID. Without --run-id the paths say
    {run}: submit names the run (on the clouds a digest of the spec and code, so the same
    spec and code are the same run; on the local provider a new one every time).

    \b
    Examples:
      cloudtrain plan job.yaml --provider vertex
      cloudtrain plan job.yaml --provider vertex --run-id 2026-12-03   where that run's model lands
                                  (and what resuming it there would copy, and its transfer charge)
      cloudtrain plan job.yaml --provider sagemaker --json | jq .global_batch
    """
    spec, sources = load_spec_sources(job, overrides, profile=profile, provider=provider)
    placed = spec.placement is not None and provider is None
    placement_spec = spec
    if placed:
        from cloudtrain.cli import candidates_view

        candidates = candidates_view.ordered(spec)
        spec = candidates[0].spec
    chosen = registry.get(provider or spec.provider)
    planned = plan(spec, chosen).with_run(run_id)
    moving = _resume_note(planned, chosen) if run_id else None
    if as_json:
        document = {**planned.to_dict(), "sources": sources.fields}
        if placed:
            document["candidates"] = candidates_view.rows(candidates)
        if moving:
            document["resume"] = moving
        click.echo(json.dumps(document, indent=2))
        return
    if placed:
        candidates_view.echo(placement_spec)
        click.echo(f"\nThe first candidate ({candidates[0].label}):")
    notes = sources.notes(spec, planned.provider)
    click.echo(describe(planned) + (f"\n{describe_defaults(notes)}" if notes else ""))
    if moving:
        click.echo(moving)


def _resume_note(planned: Plan, target: Provider) -> str | None:
    """What submitting this run would copy here first, and its charge; None where runs cannot move."""
    from cloudtrain import resume
    from cloudtrain.provider.backups import StoresBackups

    if not isinstance(target, StoresBackups) or planned.run_id is None:
        return None
    return resume.move_note(planned.run_id, resume.Location.of(planned, target))


@click.command()
def schema() -> None:
    """Print the JSON Schema of job.yaml (for editor autocompletion and CI checks).

    \b
    Example:
      cloudtrain schema > job.schema.json
    """
    from cloudtrain.spec import JobSpec

    click.echo(json.dumps(JobSpec.model_json_schema(), indent=2))


def summary(p: Plan) -> str:
    """One line: hosts × machine, replicas, global batch, strategy."""
    machine = (
        (p.machine.machine_type or "any node") if p.machine else f"local ({p.devices_per_host} CPU device(s))"
    )
    return (
        f"{p.hosts} × {machine}, {counted(p.replicas, 'replica')}, global batch {p.global_batch}, "
        f"strategy {p.strategy}"
    )


def describe(p: Plan) -> str:
    """The plan as aligned ``key  value`` lines for people."""
    lr = f"{p.learning_rate:g} ({p.lr_scaling} from {p.base_learning_rate:g}"
    lr += f", warm-up {p.warmup_steps} steps)" if p.warmup_steps else ")"
    rows = [
        ("job", p.name),
        ("provider", p.provider),
        ("machine", _machine(p)),
        ("hosts", str(p.hosts)),
        *([("processes", p.target.processes(p))] if isinstance(p.target, StartsProcesses) else []),
        ("replicas", f"{p.replicas} ({p.hosts} × {p.devices_per_host})"),
        ("global batch", f"{p.global_batch} ({p.per_replica_batch} per replica)"),
        ("learning rate", lr),
        ("steps/epoch", str(p.steps_per_epoch or "from the dataset")),
        ("strategy", f"{p.strategy}: {p.strategy_reason}"),
        ("mixed precision", p.mixed_precision),
        ("spot", "yes" if p.spot else "no"),
        ("max runtime", f"{p.max_runtime_s} s"),
        ("image", p.image),
        ("run", p.run_id or f"{RUN} (named at submit; --run-id to choose)"),
    ]
    return f"{aligned(rows)}\n{describe_outputs(p.outputs)}"


def describe_outputs(outputs: Outputs) -> str:
    """The ``outputs`` block: where each artifact is once the job has ended.

    ``{job}`` stands for the job name or ID the provider has not given yet; a URI ending
    in ``#FILE`` is that file inside the tarball; an empty one is not delivered. A sweep's
    say ``{trial}`` until its best trial is known, and the heading says so.
    """
    rows = [(name, uri or "(not delivered)") for name, uri in outputs.to_dict().items()]
    heading = "outputs"
    if any(TRIAL in uri for _, uri in rows):
        heading += f" of each trial ({TRIAL}: the trial's id; the best trial's are shown once the sweep ends)"
    return f"{heading}\n" + "\n".join(f"  {line}" for line in aligned(rows).splitlines())


def describe_defaults(notes: list[tuple[str, str]]) -> str:
    """The values the profile or the environment gave, each with where it came from."""
    return "from profile and environment\n" + "\n".join(f"  {line}" for line in aligned(notes).splitlines())


def aligned(rows: list[tuple[str, str]]) -> str:
    """``key  value`` lines, the values in one column."""
    width = max(len(key) for key, _ in rows)
    return "\n".join(f"{key:<{width}}  {value}" for key, value in rows)


def _machine(p: Plan) -> str:
    m = p.machine
    if m is None:
        return f"this machine, {p.devices_per_host} emulated device(s) per host"
    if not m.vcpus:  # a machine the catalog does not describe: a cluster's node (planning.PicksMachine)
        return m.source
    accel = f", {m.accelerator_count} × {m.accelerator}" if m.accelerator_count else ""
    return (
        f"{m.machine_type} ({m.vcpus} vCPU, {m.memory_gb} GB{accel}, {m.intra_host}, {m.network_gbps} Gb/s)"
    )
