"""``init``: a new project that validates and trains at once."""

from __future__ import annotations

import shlex
from pathlib import Path

import click


@click.command("init")
@click.argument("directory", default=".", type=click.Path(file_okay=False))
@click.option("--name", default=None, help="The job's name. Default: the folder's name, made valid.")
@click.option("--force", is_flag=True, help="Overwrite the project's files where they exist.")
def init_command(directory: str, name: str | None, force: bool) -> None:
    """Create a new project in DIRECTORY (default: here): trainer module, job.yaml, .cloudtrainignore.

    The trainer module follows the managed-mode contract and trains on synthetic rows,
    so `cloudtrain submit job.yaml` runs at once; replace its data and model with yours.
    Existing files are never overwritten without --force.

    \b
    Examples:
      cloudtrain init churn-model
      cloudtrain init . --name churn-model --force
    """
    from cloudtrain import newproject

    folder = Path(directory)
    written = newproject.create(folder, name=name, force=force)
    click.echo(f"Created in {folder}:")
    for path in written:
        click.echo(f"  {path.relative_to(folder).as_posix()}")
    click.echo("Next:")
    if folder.resolve() != Path.cwd():
        click.echo(f"  cd {shlex.quote(directory)}")
    click.echo("  cloudtrain validate job.yaml")
    click.echo("  cloudtrain submit job.yaml        # trains here; needs: pip install 'cloudtrain[runtime]'")
