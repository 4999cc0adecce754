"""``check``: is this machine set up to submit to a provider, before the first submit finds out?

The checks belong to the providers (``ChecksSetup.check_setup``); this command loads the
settings they check (a job spec, or the profile and the environment alone) and prints
their lines the way ``cloudtrain doctor`` prints its own (``cloudtrain_runtime.diagnosis``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from cloudtrain.cli.options import PROVIDER_CHOICE, json_option, profile_option
from cloudtrain.errors import CloudtrainError
from cloudtrain.specfile import load_settings

if TYPE_CHECKING:
    from cloudtrain.provider import Provider
    from cloudtrain.sources import Sources
    from cloudtrain.spec import JobSpec
    from cloudtrain_runtime.diagnosis import Check


def setup_checks(provider: Provider, spec: JobSpec, sources: Sources) -> list[Check]:
    """The provider's own checks, or one line saying it has none."""
    from cloudtrain.provider.base import ChecksSetup
    from cloudtrain_runtime.diagnosis import OK, Check

    if isinstance(provider, ChecksSetup):
        return provider.check_setup(spec, sources)
    return [Check("setup", OK, f"{provider.title} has no set-up checks; submit tells what is missing")]


def quota_checks(provider: Provider, spec: JobSpec) -> list[Check]:
    """One line per quota the job needs on ``provider``: ok, or short (with the command that asks for more).

    A quota that cannot be read is a warning, never a failure: submit still tries (``cloudtrain quotas``).
    """
    from cloudtrain.placement import preflight
    from cloudtrain.placement.resolve import Resolved, as_candidate
    from cloudtrain.provider.quotas import OK as ENOUGH
    from cloudtrain.provider.quotas import UNKNOWN
    from cloudtrain_runtime.diagnosis import FAIL, OK, WARN, Check

    try:
        planned = provider.plan(spec)
    except CloudtrainError as refused:  # the spec does not run here: the setup lines and validate say why
        return [Check("quota", WARN, f"not checked: {str(refused).splitlines()[0]}")]
    found = preflight.check(Resolved(0, as_candidate(spec), spec, planned))
    status = {ENOUGH: OK, UNKNOWN: WARN}
    return [
        Check(
            "quota",
            status.get(reading.verdict, FAIL),
            reading.explained(),
            None if reading.verdict == ENOUGH else reading.need.increase,
        )
        for reading in found.readings
    ]


@click.command("check")
@click.argument("job", required=False, type=click.Path(dir_okay=False))
@click.option(
    "--provider",
    "-p",
    type=PROVIDER_CHOICE,
    default=None,
    help="The provider to check for. Default: the spec's provider field (local if unset).",
)
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a setting, e.g. --set storage.root=./runs (repeatable).",
)
@profile_option
@json_option
def check_command(
    job: str | None, provider: str | None, overrides: tuple[str, ...], profile: str | None, as_json: bool
) -> None:
    """Check credentials, project, region, storage, role and service before the first submit.

    Vertex AI: Application Default Credentials (whose), the project and region (and where
    each came from), the storage root's bucket (exists; a probe object is written and
    deleted) and the Vertex AI API (one job listed). SageMaker: the AWS caller (STS), the
    region, the S3 bucket (exists, writable), the execution role (exists, trusts SageMaker)
    and the SageMaker API (one training job listed). Local: Python, the runtime (found,
    not imported) and free disk where the outputs go. With JOB the settings are the
    job's; without, those of the profile and the environment.

    Each line is ok, warn or fail, with the fix. The exit code is 1 when any check fails.
    With --json: a list of {"check", "status", "detail", "fix"}. No secret is printed.

    \b
    Examples:
      cloudtrain check --provider vertex
      cloudtrain check --provider vertex --set vertex.storage_root=gs://my-bucket/runs
      cloudtrain check job.yaml --provider sagemaker --json
    """
    from cloudtrain.provider import registry
    from cloudtrain_runtime.diagnosis import exit_code, render_json, render_text

    spec, sources = load_settings(job, overrides, profile, provider=provider)
    target = registry.get(provider or spec.provider)
    checks = setup_checks(target, spec, sources)
    if job is not None:  # a job's shape says which quota it needs
        checks += quota_checks(target, spec)
    click.echo(render_json(checks) if as_json else render_text(checks))
    click.get_current_context().exit(exit_code(checks))
