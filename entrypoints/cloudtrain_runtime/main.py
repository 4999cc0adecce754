"""``cloudtrain-runtime [train] [--config FILE]``: the container's entrypoint.

environment → ClusterInfo → the code's requirements.txt → strategy → user code (managed or
script) → export.
SageMaker starts the image as ``docker run IMAGE train``; the ``train`` word is
accepted and ignored. Exit status 0 only on success; errors are one line on stderr
(a user error after its traceback, cut to the user's frames; ``CLOUDTRAIN_DEBUG=1`` adds
the traceback).

With ``CLOUDTRAIN_BENCH=STEPS`` set it times the managed module's training instead
(``cloudtrain_runtime.bench``, for ``cloudtrain bench``) and exports nothing.

``cloudtrain-runtime doctor [--config FILE] [--json]`` checks the devices, versions and
cluster instead of training (``cloudtrain_runtime.doctor``); its exit status is 1 when
any check fails.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import MutableMapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from cloudtrain_runtime import bench, devices, environments, hparams, locations, requirements, usercode
from cloudtrain_runtime import cluster as cluster_lib
from cloudtrain_runtime import config as config_lib
from cloudtrain_runtime.errors import Reclaimed, RuntimeFailure, UserCodeError
from cloudtrain_runtime.paths import root_from

if TYPE_CHECKING:  # the session imports numpy: ``doctor`` must run, and say so, where it is missing
    from cloudtrain_runtime.session import Session

DOCTOR = "doctor"  # the first word that runs the checks instead of training
_ACTIVE: list[Session] = []  # the process's one session, for cloudtrain_runtime.setup()


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """Parse the command line; a leading ``train`` (SageMaker's argument) is dropped.

    The words it does not know are kept as ``trial_args``: Vertex AI appends a sweep
    trial's hyperparameters to the command line (``cloudtrain_runtime.hparams``).

    Example:
    >>> args = parse_args(["train", "--config", "run.json", "--learning_rate=0.1"])
    >>> args.config, args.trial_args
    ('run.json', ['--learning_rate=0.1'])
    """
    parser = argparse.ArgumentParser(
        prog="cloudtrain-runtime",
        description="Run a cloudtrain training job inside its container.",
        epilog=f"{DOCTOR}: check the devices, versions and cluster instead (cloudtrain-runtime {DOCTOR} --help).",
    )
    parser.add_argument("--config", help="runtime configuration JSON file (else CLOUDTRAIN_CONFIG)")
    args = list(argv)
    known, trial_args = parser.parse_known_args(args[1:] if args[:1] == ["train"] else args)
    known.trial_args = trial_args
    return known


def say(line: str) -> None:
    """Print one log line now; container logs are read while the job runs."""
    print(line, flush=True)


def prepare(
    config_file: str | None,
    env: MutableMapping[str, str],
    *,
    enter_code: bool,
    trial_args: Sequence[str] = (),
) -> tuple[Session, Path]:
    """Read the configuration and environment, enter the code folder and start the session.

    ``trial_args``: the command-line words that may carry a sweep trial's hyperparameters.
    """
    root = root_from(env)
    loaded = config_lib.load(config_file, env, root, environments.hyperparameter_files())
    config = hparams.for_trial(loaded, trial_args, root)
    cluster = cluster_lib.from_environment(env, root)
    where = locations.resolve(config, cluster, env, root)
    devices.prepare_environment(config, cluster, env)
    cluster_lib.wait_for_peers(cluster)
    directory = usercode.code_dir(env, root) if enter_code else Path.cwd()
    if enter_code:
        usercode.enter(directory)
        requirements.satisfy(directory, root)
    from cloudtrain_runtime.session import start

    session = start(config, cluster, where, root=root, say=say)
    _ACTIVE[:] = [session]
    return session, directory


def active() -> Session | None:
    """The session the entrypoint started in this process, if any."""
    return _ACTIVE[0] if _ACTIVE else None


def run(config_file: str | None, env: MutableMapping[str, str], trial_args: Sequence[str] = ()) -> None:
    """Train as the configuration says: managed module or script; with CLOUDTRAIN_BENCH, time it instead."""
    steps = bench.requested_steps(env)
    session, directory = prepare(config_file, env, enter_code=True, trial_args=trial_args)
    if steps is not None:
        bench.run(session, directory, steps)
    elif session.config.module:
        from cloudtrain_runtime import managed

        managed.run(session, session.config.module, directory)
    else:
        from cloudtrain_runtime import script

        script.run(session.config.script or "", session.config.args, directory)


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point: run, then exit 0, or print one error line and exit non-zero."""
    words = list(sys.argv[1:] if argv is None else argv)
    if words[:1] == [DOCTOR]:
        from cloudtrain_runtime import doctor

        sys.exit(doctor.main(words[1:], os.environ))
    args = parse_args(words)
    try:
        run(args.config, os.environ, args.trial_args)
    except RuntimeFailure as err:
        if isinstance(err, UserCodeError) and err.trace:  # the user's own traceback, not the runtime's
            print(err.trace, end="", file=sys.stderr, flush=True)
        elif os.environ.get("CLOUDTRAIN_DEBUG"):
            traceback.print_exc()
        print(f"cloudtrain-runtime: {err.label}{err}", file=sys.stderr, flush=True)
        _tracked_failure(err)
        sys.exit(err.exit_code)
    sys.exit(0)


def _tracked_failure(err: RuntimeFailure) -> None:
    """The chief's MLflow run, where the run is tracked, says this attempt failed (``cloudtrain_runtime.tracking``).

    A reclaimed attempt did not fail: the run goes on in the next attempt, from the backup
    just written, so its MLflow run stays ``RUNNING`` (the next attempt logs the epochs this
    one had not sent, and the SDK sets the final status when it sees the run's job end).
    Nothing is sent either: the provider's grace is the backup's, not MLflow's.
    """
    if isinstance(err, Reclaimed):
        return
    session = active()
    tracker = session.tracker if session is not None else None
    if tracker is not None and session is not None:
        tracker.fail(session.history.history)
