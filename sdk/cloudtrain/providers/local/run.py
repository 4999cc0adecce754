"""Start a local run and find it again: the bundle "upload", the run folder, the detached launcher.

``submit`` copies the code bundle to where the request says, writes the run folder and
starts the detached launcher (``launcher``), which supervises the replicas and records
status and logs in the run folder. The run outlives the shell, as a cloud job does:
Ctrl-C on ``cloudtrain submit`` stops following it, ``cloudtrain cancel local:<id>``
stops it.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cloudtrain.errors import ProviderError
from cloudtrain.providers import transfer
from cloudtrain.providers.local.job import LocalJob, local_home, run_dir_for
from cloudtrain.providers.local.launcher import substitute

if TYPE_CHECKING:
    from cloudtrain.bundle import Bundle
    from cloudtrain.planning import Plan

ID_PREFIX = "local:"
# Not ``-m cloudtrain.providers.local.launcher``: importing cloudtrain imports that
# module first, and runpy warns about running a module that is already imported.
LAUNCHER_PROGRAM = "import sys; from cloudtrain.providers.local.launcher import main; main(sys.argv[1:])"


def submit(plan: Plan, request: dict[str, Any], bundle: Bundle) -> LocalJob:
    """Upload the bundle, write the run folder and start the detached launcher."""
    home = local_home()
    job_id = f"{ID_PREFIX}{plan.name}-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"
    run_dir = run_dir_for(job_id)
    run_dir.mkdir(parents=True)
    resolved = substitute(request, {"<run>": str(run_dir), "<buckets>": str(home / "buckets")})
    _upload(bundle.path, Path(resolved["upload"]["target"]))
    (run_dir / "request.json").write_text(json.dumps(resolved, indent=2))
    _start_launcher(run_dir)
    return LocalJob(job_id, request=resolved)


def _upload(source: Path, target: Path) -> None:
    """Copy the bundle to its target; the name is the content hash, so an existing copy is it."""

    def copy(advance: transfer.Progress) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        with source.open("rb") as raw, tmp.open("wb") as copied:
            shutil.copyfileobj(transfer.ProgressReader(raw, advance), copied)
        tmp.replace(target)

    transfer.upload_once(exists=target.exists, upload=copy, name=source.name, size=source.stat().st_size)


def _start_launcher(run_dir: Path) -> None:
    """Start the launcher detached: it forks, writes its pid file, and this call returns."""
    started = subprocess.run(
        [sys.executable, "-c", LAUNCHER_PROGRAM, "--detach", str(run_dir)],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    if started.returncode != 0:
        raise ProviderError(
            f"The local launcher did not start (exit {started.returncode}): "
            f"{(started.stderr.strip().splitlines() or ['no output'])[-1]}. Run folder: {run_dir}"
        )


def attach(job_id: str) -> LocalJob:
    """Reconnect to a local run by its ID, from any shell on this machine.

    Raises:
        ProviderError: if no run folder exists for ``job_id``.
    """
    run_dir = run_dir_for(job_id)
    if not (run_dir / "request.json").is_file():
        raise ProviderError(
            f"No local run {job_id!r} under {run_dir.parent}. Check the ID that submit printed, "
            "and that CLOUDTRAIN_LOCAL_HOME is the same as when it was submitted."
        )
    return LocalJob(job_id, request=json.loads((run_dir / "request.json").read_text()))


def owns(job_id: str) -> bool:
    """Local job IDs start with ``local:``."""
    return job_id.startswith(ID_PREFIX)
