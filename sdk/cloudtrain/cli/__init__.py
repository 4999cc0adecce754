"""The ``cloudtrain`` command line.

Commands are registered by name and imported only when run, so ``cloudtrain --help``
and the spec commands stay fast: no TensorFlow, no cloud SDK, on the start-up path.
Only ``main`` prints errors and chooses the exit code; everything below it raises.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import traceback
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import click

from cloudtrain.errors import CloudtrainError

# name -> "module:attribute"; imported when the command is used.
COMMANDS = {
    "init": "cloudtrain.cli.init_command:init_command",
    "list": "cloudtrain.cli.list_command:list_command",
    "validate": "cloudtrain.cli.spec_commands:validate",
    "plan": "cloudtrain.cli.spec_commands:plan_command",
    "schema": "cloudtrain.cli.spec_commands:schema",
    "render": "cloudtrain.cli.job_commands:render_command",
    "submit": "cloudtrain.cli.job_commands:submit_command",
    "status": "cloudtrain.cli.job_commands:status",
    "logs": "cloudtrain.cli.job_commands:logs",
    "cancel": "cloudtrain.cli.job_commands:cancel",
    "check": "cloudtrain.cli.check_command:check_command",
    "quotas": "cloudtrain.cli.quotas_command:quotas_command",
    "wait": "cloudtrain.cli.job_commands:wait",
    "cost": "cloudtrain.cli.cost_commands:cost_command",
    "prices": "cloudtrain.cli.cost_commands:prices_group",
    "doctor": "cloudtrain.cli.doctor_command:doctor_command",
    "bench": "cloudtrain.cli.bench_command:bench_command",
    "compare": "cloudtrain.cli.compare_command:compare_command",
    "history": "cloudtrain.cli.history_command:history_command",
    "cache": "cloudtrain.cli.cache_command:cache_group",
}


class LazyGroup(click.Group):
    """A click group whose subcommands are imported on first use."""

    def __init__(self, *args: Any, lazy: dict[str, str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = lazy
        # True while ``main`` runs as the process's own command (see ``_imported``).
        self.whole_process = False

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """List commands with the first line of each help text, read without importing them."""
        rows = [(name, _short_help(self.lazy[name])) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy:
            module, _, attr = self.lazy[cmd_name].partition(":")
            return getattr(_imported(module, settle=self.whole_process), attr)
        return super().get_command(ctx, cmd_name)


def _imported(module: str, *, settle: bool) -> ModuleType:
    """``module``, imported; with ``settle``, with the cyclic garbage collector paused, then frozen.

    A command's modules, classes and pydantic models live until the process exits, so a
    collection while they are imported frees nothing, and every later one (the last at
    exit) would walk them again: pausing and freezing (``gc.freeze``) saves about 5% of a
    spec command's start-up. Only where the process is the command: in a longer-lived one
    (a test calling ``main(argv)``) a freeze would also keep the garbage it holds then.
    """
    if not settle:
        return importlib.import_module(module)
    import gc

    enabled = gc.isenabled()
    gc.disable()
    try:
        with _no_pydantic_plugin_lookup():
            return importlib.import_module(module)
    finally:
        if enabled:
            gc.enable()
        gc.freeze()


@contextlib.contextmanager
def _no_pydantic_plugin_lookup() -> Iterator[None]:
    """While the command imports (and pydantic builds its models), skip pydantic's plugin look-up where there is none.

    Building its first model, pydantic walks every installed distribution for the
    ``pydantic`` entry-point group (``pydantic/plugin/_loader.py``): some 30 M
    instructions, 3% of a spec command's start-up. Cloudtrain's own scan of the entry points
    (``cloudtrain_runtime.entry_points``) already tells whether there is any; with none,
    ``PYDANTIC_DISABLE_PLUGINS`` (which that loader honours) disables nothing and skips the
    walk. The variable is removed afterwards, so the replicas a local run starts get the
    environment the provider would give them; a value the user set is kept.
    """
    from cloudtrain_runtime import entry_points

    if "PYDANTIC_DISABLE_PLUGINS" in os.environ or entry_points.group("pydantic"):
        yield
        return
    os.environ["PYDANTIC_DISABLE_PLUGINS"] = "1"
    try:
        yield
    finally:
        del os.environ["PYDANTIC_DISABLE_PLUGINS"]


def _short_help(target: str) -> str:
    """The first docstring line of a command function, found by parsing its module's source.

    ``--help`` must not import the command modules (they load pydantic and the
    providers), so the text is read with ``ast`` from the file instead.
    """
    import ast
    import importlib.util

    module, _, attr = target.partition(":")
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return ""
    with open(spec.origin, encoding="utf-8") as source:
        tree = ast.parse(source.read())
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name == attr:
            return (ast.get_docstring(node) or "").split("\n", 1)[0]
    return ""


@click.group(
    cls=LazyGroup,
    lazy=COMMANDS,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(package_name="cloudtrain", prog_name="cloudtrain")
def cli() -> None:
    """Distributed TensorFlow/Keras training on Vertex AI, SageMaker or this machine, from one job spec.

    \b
    Start here:
      cloudtrain init my-project                        a new project that trains at once
      cloudtrain validate job.yaml                      check the spec
      cloudtrain plan job.yaml --provider vertex        machines, replicas, batch, strategy
      cloudtrain submit job.yaml --dry-run              the exact request, nothing sent
      cloudtrain submit job.yaml --provider local       run it here, as the cloud would

    Every command that reads a spec takes --set KEY=VALUE overrides, e.g.
    --set training.epochs=5, and --profile NAME: fields the spec leaves out come from
    that profile of ~/.config/cloudtrain/config.yaml, then from gcloud's and the AWS
    CLI's settings. Set CLOUDTRAIN_DEBUG=1 to see tracebacks.

    \b
    Shell completion (bash; zsh_source and fish_source for the others):
      eval "$(_CLOUDTRAIN_COMPLETE=bash_source cloudtrain)"
    """


def main(argv: list[str] | None = None) -> None:
    """Run the CLI; the only place that prints errors and exits.

    Without ``argv`` the command is the process's own (``sys.argv``: the ``cloudtrain``
    script, ``python -m cloudtrain``), which lets start-up settle its imports (``_imported``).
    """
    cli.whole_process = argv is None
    try:
        code = cli.main(args=argv, prog_name="cloudtrain", standalone_mode=False)
    except CloudtrainError as exc:
        from cloudtrain.messages import cut_long_words

        _debug_traceback()
        for problem in exc.problems:
            click.echo(f"Error: {cut_long_words(problem)}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort as exc:
        # click turns Ctrl-C into Abort; a job command that follows a job says more itself (job_commands).
        click.echo("Interrupted." if isinstance(exc.__cause__, KeyboardInterrupt) else "Aborted.", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)


def _debug_traceback() -> None:
    if os.environ.get("CLOUDTRAIN_DEBUG") == "1":
        traceback.print_exc()
