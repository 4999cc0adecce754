"""What every provider puts into the training container: command, environment, runtime config.

The container contract is small and the same everywhere, so the Vertex and SageMaker
backends (and the local emulation of both) render it from here:

- ``CLOUDTRAIN_CONFIG``: the plan's runtime configuration (``cloudtrain_runtime.config``)
  as compact JSON. SageMaker caps Environment values at 512 characters, so there it
  travels as hyperparameters ``cloudtrain_config_0``, ``_1``, ... of at most 256
  characters each (the limit the CreateTrainingJob documentation states, stricter than
  botocore's model), which the runtime joins in order.
- ``CLOUDTRAIN_BUNDLE``: the code bundle's path *inside the container* (``/gcs/...`` on
  Vertex, ``/opt/ml/input/data/code/...`` on SageMaker).
- ``CLOUDTRAIN_ROOT`` (not set by providers): a folder that stands in for ``/`` when the
  local provider emulates ``/gcs`` or ``/opt/ml``. The runtime reads it for every fixed
  path, the bootstrap below included, and nothing else tells it it is emulated.

With ``image: auto`` the image is a stock TensorFlow image without cloudtrain, so the
command is a short bootstrap that unpacks the bundle (which then carries the runtime's
source under ``.cloudtrain-runtime/``) and starts the runtime. Where the image's own
start-up must run first (``catalog.image_startup``: SageMaker's Deep Learning
Containers), the provider keeps the image's ENTRYPOINT and passes the bootstrap as its
arguments, behind ``sourcing`` (see there). With your own image the image's ENTRYPOINT
(``cloudtrain-runtime``) runs and no command is rendered.
"""

from __future__ import annotations

import json

from cloudtrain.planning import Plan
from cloudtrain_runtime import config as runtime_config
from cloudtrain_runtime.profiling import PROFILE_ENV

CONFIG_ENV = "CLOUDTRAIN_CONFIG"
BUNDLE_ENV = "CLOUDTRAIN_BUNDLE"
ROOT_ENV = "CLOUDTRAIN_ROOT"
# Seconds between the provider's SIGTERM and its SIGKILL, where the request sets them
# (a JobSet pod, the local launcher): the runtime backs up its step within them
# (cloudtrain_runtime.notice).
GRACE_ENV = "CLOUDTRAIN_GRACE_S"
CONFIG_HYPERPARAMETER = "cloudtrain_config"
HYPERPARAMETER_VALUE_MAX = 256

# Runs in a stock TensorFlow image: stdlib only. The bundle is checked against the
# SHA-256 in its name before anything in it runs; only the runtime package is taken out
# here (tarfile's "data" filter: no absolute paths, no "..", no links out), and the
# runtime then unpacks the whole bundle with its own limits (cloudtrain_runtime.bundle).
BOOTSTRAP = """\
import hashlib, os, sys, tarfile
root = os.environ.get("CLOUDTRAIN_ROOT", "/")
bundle = os.path.join(root, os.environ["CLOUDTRAIN_BUNDLE"].lstrip("/"))
digest = hashlib.sha256()
with open(bundle, "rb") as packed:
    for chunk in iter(lambda: packed.read(1 << 20), b""):
        digest.update(chunk)
if not digest.hexdigest().startswith(os.path.basename(bundle).split(".")[0]):
    sys.exit(f"cloudtrain: {bundle} does not match the SHA-256 in its name: the upload is damaged. Submit again.")
dest = os.path.join(root, "tmp/cloudtrain/runtime")
with tarfile.open(bundle) as tar:
    tar.extractall(dest, [m for m in tar if m.name.startswith(".cloudtrain-runtime/")], filter="data")
sys.path.insert(0, os.path.join(dest, ".cloudtrain-runtime"))
from cloudtrain_runtime.main import main
main(sys.argv[1:])
"""


def runtime_config_json(plan: Plan) -> str:
    """The plan's runtime configuration as compact, key-sorted JSON (stable for golden files)."""
    return json.dumps(runtime_config.as_dict(plan.runtime), separators=(",", ":"), sort_keys=True)


def config_hyperparameters(plan: Plan) -> dict[str, str]:
    """The runtime config as numbered hyperparameters of at most 256 characters each.

    Example:
    >>> chunks = split_config("x" * 600)
    >>> list(chunks), [len(v) for v in chunks.values()]
    (['cloudtrain_config_0', 'cloudtrain_config_1', 'cloudtrain_config_2'], [256, 256, 88])
    """
    return split_config(runtime_config_json(plan))


def split_config(
    text: str, *, size: int = HYPERPARAMETER_VALUE_MAX, prefix: str = CONFIG_HYPERPARAMETER
) -> dict[str, str]:
    """``text`` in pieces of at most ``size`` characters, named ``<prefix>_0``, ``_1``, ... in order."""
    return {f"{prefix}_{i}": text[start : start + size] for i, start in enumerate(range(0, len(text), size))}


def command(plan: Plan) -> list[str] | None:
    """The container command, or None to run the image's own ENTRYPOINT."""
    if plan.spec.image == "auto":
        return ["python3", "-c", BOOTSTRAP]
    return None


def sourcing(script: str, command: list[str]) -> list[str]:
    """``command``, started by a shell that first sources the image's ``script`` where the image has it.

    A variable a script exports reaches the command only when the shell that execs the
    command sourced it: the TensorFlow DLC's entrypoint runs its CUDA set-up in a child
    shell, whose ``LD_LIBRARY_PATH`` is lost (``catalog/image_startup.csv``). The script's
    own output is dropped: the image's entrypoint already printed its decisions. Like
    every fixed path, ``script`` is looked up under ``CLOUDTRAIN_ROOT``.

    Example:
    >>> sourcing("/usr/local/bin/setup.sh", ["python3", "-c", "print(1)"])[2]
    'setup="${CLOUDTRAIN_ROOT%/}/usr/local/bin/setup.sh"; if [ -f "$setup" ]; then . "$setup" >/dev/null; fi; exec "$@"'
    """
    prelude = (
        f'setup="${{{ROOT_ENV}%/}}{script}"; if [ -f "$setup" ]; then . "$setup" >/dev/null; fi; exec "$@"'
    )
    return ["bash", "-c", prelude, "cloudtrain-start", *command]


def environment(plan: Plan, bundle_path: str, *, include_config: bool = True) -> dict[str, str]:
    """Environment variables for every replica: the user's ``env`` plus the runtime contract.

    ``training.profile`` travels as ``CLOUDTRAIN_TRACE_STEPS`` (``cloudtrain_runtime.profiling``),
    only when set: a job that profiles nothing carries nothing for it.
    """
    env = dict(plan.spec.env)
    env[BUNDLE_ENV] = bundle_path
    if plan.spec.training.profile is not None:
        env[PROFILE_ENV] = plan.spec.training.profile.window
    if include_config:
        env[CONFIG_ENV] = runtime_config_json(plan)
    return env
