"""Script mode: run the user's own training script, which asks cloudtrain for a Session.

The script (``code.script``) runs as ``__main__`` with ``code.args`` as its arguments
and calls ``cloudtrain_runtime.setup()`` once::

    import cloudtrain_runtime

    session = cloudtrain_runtime.setup()
    with session.scope():
        model = build_my_model()
        model.compile(optimizer=keras.optimizers.Adam(session.learning_rate(steps)), loss=...)
    train = session.distribute(my_examples)  # batches, shards, prefetches
    model.fit(train, epochs=session.config.epochs, callbacks=session.callbacks)
    session.export(model)                    # every task calls it; only the chief keeps it

Example: examples/script_mode/train.py.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

from cloudtrain_runtime import usercode
from cloudtrain_runtime.errors import RuntimeFailure, UserCodeError


def run(script: str, args: tuple[str, ...], directory: Path) -> None:
    """Run ``script`` from ``directory`` as ``__main__`` with ``args``.

    Raises:
        UserCodeError: when the script is missing, raises, or exits non-zero.
    """
    path = directory / script
    if not path.is_file():
        raise UserCodeError(f"code.script {script!r} was not found in the code folder {str(directory)!r}.")
    sys.argv = [str(path), *args]
    try:
        runpy.run_path(str(path), run_name="__main__")
    except SystemExit as err:
        if err.code not in (None, 0):
            raise UserCodeError(f"{script} exited with status {err.code!r}.") from None
    except RuntimeFailure:
        raise
    except Exception as err:
        raise usercode.user_error(err, script, directory) from None
