"""``quotas``: what each place a job may start needs of its provider's quotas, and what is left."""

from __future__ import annotations

import json

import click

from cloudtrain.cli.options import json_option, spec_options
from cloudtrain.specfile import load_spec


@click.command("quotas")
@spec_options
@click.option(
    "--dry-run", is_flag=True, help="Name each quota and amount only; read nothing, no credentials."
)
@json_option
def quotas_command(
    job: str,
    provider: str | None,
    overrides: tuple[str, ...],
    profile: str | None,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Show each quota JOB needs, its limit and current use, and how to ask for more.

    For a spec with placement:, every candidate in the order it is tried; else the
    spec's provider (or --provider). SageMaker: the Service Quotas "<type> for [spot]
    training job usage" of each instance type, in instances. Vertex AI: the per-region
    custom_model_training_* GPU (or CPU) metric, through the Cloud Quotas API. Kubernetes:
    the namespace's ResourceQuota on its GPU resource. A quota that cannot be read is
    shown as not checked, with why: submit still tries it (the check fails open); one
    conclusively over its limit is skipped by a placement without a submit.

    \b
    Examples:
      cloudtrain quotas job.yaml --dry-run          what each candidate needs, no credentials
      cloudtrain quotas job.yaml --provider vertex  the limit and use in vertex.region
      cloudtrain quotas job.yaml --json
    """
    from cloudtrain import api

    spec = load_spec(job, overrides, profile=profile, check_code=False)
    if provider is not None:
        spec = spec.model_copy(update={"provider": provider, "placement": None})
    checks = api.quotas(spec, dry_run=dry_run)
    if as_json:
        click.echo(json.dumps([check.to_dict() for check in checks], indent=2))
        return
    for check in checks:
        where = f"{check.candidate.where} " if spec.placement else ""
        click.echo(f"{where}{check.candidate.label}:")
        for line in check.lines():
            click.echo(f"  {line}")
