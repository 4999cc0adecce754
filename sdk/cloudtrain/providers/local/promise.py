"""A run id is a promise: a local submit of a changed job to a run that finished or left a backup is refused.

The rule and its one line are the runtime's (``cloudtrain_runtime.backups``): on every
provider, the container refuses an attempt of a run whose training settings or code
are not the run's, rather than training over its model or reporting "nothing to redo".
Here the run's storage is on this machine, so ``submit`` asks first: the same line, exit
2, and nothing is started. An unchanged job attaches to its run as before
(``run.find_submitted``); a changed one that reaches a run with nothing in its storage
yet (a run that failed before its first backup) starts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cloudtrain.container import CONFIG_ENV
from cloudtrain.errors import SpecError
from cloudtrain.provider.emulation import bucket_path
from cloudtrain_runtime import backups, bundle
from cloudtrain_runtime import config as runtime_config
from cloudtrain_runtime.errors import ConfigError
from cloudtrain_runtime.replica import COMPLETE_FILE


def check_same_run(request: dict[str, Any], packed: Path, buckets: Path) -> None:
    """Refuse ``request`` when its run finished, or holds a backup, with other training settings or code.

    Args:
        request: the rendered local request (an emulated cloud's included), its run id set.
        packed: the code bundle it runs.
        buckets: where the stand-in buckets are (``$CLOUDTRAIN_LOCAL_HOME/buckets``).

    Raises:
        SpecError: the run's line (``cloudtrain_runtime.backups.changed_run``).
    """
    chief = request["replicas"][0]
    text = {**request.get("cluster", {}).get("env", {}), **chief["env"]}.get(CONFIG_ENV)
    if not isinstance(text, str) or not request.get("run_id"):
        return

    def here(uri: str) -> Path:
        return Path(bucket_path(uri).replace("<buckets>", str(buckets)))

    try:
        config = runtime_config.parse(text, CONFIG_ENV)
        mine = backups.Stamp(
            run=request["run_id"],
            config=backups.config_fingerprint(config),
            model="",
            code=bundle.code_digest(packed),
        )
        marker = here(config.export_dir).parent / COMPLETE_FILE
        backups.Backups(here(config.backup_dir), marker, mine, False, lambda _: None).check_same_run()
    except ConfigError as refused:
        raise SpecError(str(refused)) from None
