"""``check``: is this machine set up to submit to a provider, before the first submit finds out?

The checks belong to the providers (``ChecksSetup.check_setup``); this command loads the
settings they check (a job spec, or the profile and the environment alone) and prints
their lines the way ``cloudtrain doctor`` prints its own (``cloudtrain_runtime.diagnosis``).
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

import click

from cloudtrain.cli.options import PROVIDER_CHOICE, json_option, profile_option

if TYPE_CHECKING:
    from cloudtrain.defaults import Sources
    from cloudtrain.providers import Provider
    from cloudtrain.spec import JobSpec
    from cloudtrain_runtime.diagnosis import Check

# Without JOB the settings come from the profile and the environment alone; these stand
# in for the fields a spec must have and a profile cannot give. A profile's storage_root
# gets this name as its job folder, where the storage check writes its probe.
NO_JOB: dict[str, Any] = {
    "name": "cloudtrain-check",
    "code": {"module": "trainer.task"},
    "storage": {"root": "./outputs"},
}


def load_settings(
    job: str | None, overrides: tuple[str, ...] = (), profile: str | None = None
) -> tuple[JobSpec, Sources]:
    """The spec to check, with the ``KEY=VALUE`` overrides, and where each of its settings came from.

    Without ``job``, every setting the checks read comes from the overrides, the
    profile, the environment or the built-in defaults, as it would beneath a spec that
    leaves it out.

    Raises:
        SpecError: the job spec, or the settings, are invalid.
        ConfigError: the user config file is invalid, or has no such profile.
    """
    from cloudtrain.specfile import load_spec_sources

    if job is not None:
        return load_spec_sources(job, overrides, profile=profile)
    from cloudtrain import defaults
    from cloudtrain.specfile import apply_overrides, parse_spec

    written = apply_overrides(copy.deepcopy(NO_JOB), overrides)
    layered = defaults.layer(written, spec={}, overrides=apply_overrides({}, overrides), profile=profile)
    return parse_spec(layered.data, source="the profile and environment"), layered.sources


def setup_checks(provider: Provider, spec: JobSpec, sources: Sources) -> list[Check]:
    """The provider's own checks, or one line saying it has none."""
    from cloudtrain.providers.base import ChecksSetup
    from cloudtrain_runtime.diagnosis import OK, Check

    if isinstance(provider, ChecksSetup):
        return provider.check_setup(spec, sources)
    return [Check("setup", OK, f"{provider.title} has no set-up checks; submit tells what is missing")]


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
    from cloudtrain.providers import registry
    from cloudtrain_runtime.diagnosis import exit_code, render_json, render_text

    spec, sources = load_settings(job, overrides, profile)
    checks = setup_checks(registry.get(provider or spec.provider), spec, sources)
    click.echo(render_json(checks) if as_json else render_text(checks))
    click.get_current_context().exit(exit_code(checks))
