"""No silent CPU: the devices a replica sees, held to the ones its plan gave it.

A GPU job whose container cannot reach its GPUs still trains: TensorFlow and JAX fall
back to the CPU without an error, and the only trace is ``"accelerator": "cpu"`` in the
throughput file, on a GPU bill. So before the strategy is built, the runtime compares
what the framework sees with the plan (``accelerator``, ``devices_per_host``) and stops
with one line naming the planned shape, what it sees and the likely cause.

Three ways through, each explicit:

- **emulated**: ``CLOUDTRAIN_CPU_DEVICES`` is set (the local provider, ``--emulate`` and
  ``cloudtrain doctor JOB`` set it; no cloud does): the plan's devices are logical CPU
  devices on purpose, as before;
- **fallback**: the spec says ``resources.allow_cpu_fallback: true`` and no GPU is
  visible: the replica trains on the CPU with the plan's devices as logical CPU devices
  (the plan's replicas and global batch), and says so in one line;
- otherwise a replica that sees fewer GPUs than planned stops (``ConfigError``).

TPUs are not counted here: ``TPUStrategy`` connects to the TPU system when it is
created and raises where there is none, so a TPU plan never falls back silently.

Judging (``judge``) is a plain function of the facts; probing them (``nvidia_driver``)
is apart, so ``doctor`` reports the same verdict without raising.

Example:
>>> from cloudtrain_runtime.config import from_dict
>>> plan = {"name": "demo", "module": "trainer.task", "epochs": 1, "per_replica_batch": 8,
...         "replicas": 1, "learning_rate": 0.01, "base_learning_rate": 0.01,
...         "mixed_precision": "off", "strategy": "one-device", "keras_backend": "tensorflow",
...         "accelerator": "t4", "devices_per_host": 1, "hosts": 1, "backup_dir": "b",
...         "tensorboard_dir": "t", "export_dir": "e"}
>>> seen = Sight("TensorFlow", gpus=0, gpu_build=False, cuda=None, visible=None, driver="550.54.15")
>>> print(judge(from_dict(plan, "example"), seen).line)  # doctest: +NORMALIZE_WHITESPACE
Planned 1 × t4 per host, but TensorFlow sees 0 GPUs (a build without CUDA; CUDA_VISIBLE_DEVICES unset;
NVIDIA driver 550.54.15). Likely cause: this TensorFlow has no CUDA support (tensorflow-cpu is
installed, or the image has no GPU build): use a GPU image (image: auto picks one for GPU machines)
or pip install 'tensorflow[and-cuda]'. To train on the CPU on purpose, set
resources.allow_cpu_fallback: true.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from cloudtrain_runtime.config import RuntimeConfig

OK, FALLBACK, SHORT, EMULATED = "ok", "fallback", "short", "emulated"
FALLBACK_FIELD = "resources.allow_cpu_fallback"
# The NVIDIA kernel module's version, where start_cuda_compat.sh of the AWS Deep Learning
# Containers reads it first (aws/deep-learning-containers scripts/docker/common/
# start_cuda_compat.sh @e0ecede): "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15 ...",
# or from NVIDIA's open kernel modules "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04
# Release Build ..." (read on an H200 host; nvidia-smi said 580.159.04), where that script's sed
# finds an empty version and falls back to nvidia-smi.
NVIDIA_VERSION_FILE = Path("/proc/driver/nvidia/version")
_DRIVER = re.compile(r"^NVRM.*Kernel Module(?: for \S+)?\s+([0-9][0-9.]*)", re.MULTILINE)
# Where NVIDIA's CUDA images keep the forward-compatibility libraries (cuda-compat package).
CUDA_COMPAT_DIR = "/usr/local/cuda/compat"


@dataclass(frozen=True)
class Sight:
    """What a replica's framework sees, and the facts that explain a GPU it does not see.

    Attributes:
        framework: who looked, ``TensorFlow`` or ``JAX``.
        gpus: the GPUs it lists.
        gpu_build: whether it was built with CUDA or ROCm; None when unknown.
        cuda: the CUDA version it was built with, when known.
        visible: ``CUDA_VISIBLE_DEVICES``, when set.
        driver: the NVIDIA kernel module's version; None where no driver reaches the container.
        library_path: ``LD_LIBRARY_PATH``.
        emulated: ``CLOUDTRAIN_CPU_DEVICES``: devices emulated on the CPU on purpose, else None.
    """

    framework: str
    gpus: int
    gpu_build: bool | None
    cuda: str | None
    visible: str | None
    driver: str | None
    library_path: str = ""
    emulated: int | None = None


@dataclass(frozen=True)
class Verdict:
    """How the devices seen compare with the plan: ``ok``, ``fallback`` or ``short``.

    Attributes:
        status: ``ok``: as planned, emulated, or nothing to check here; ``fallback``: no
            GPU, and the spec allows training on the CPU; ``short``: fewer GPUs than planned.
        detail: what was planned and what is seen.
        cause: why GPUs are missing, likely, and the fix (``short`` and ``fallback``).
        instead: what the replica does instead (``fallback``).
    """

    status: str
    detail: str
    cause: str | None = None
    instead: str | None = None

    @property
    def line(self) -> str:
        """The one line the runtime prints: the detail, then what happens instead or the cause."""
        return " ".join(part for part in (self.detail, self.instead or self.cause) if part)


def planned_kind(config: RuntimeConfig) -> str:
    """``cpu``, ``tpu`` or ``gpu``: what the plan's accelerator is.

    Example:
    >>> planned_kind(type("C", (), {"accelerator": "tpu-v5e"})())
    'tpu'
    """
    if config.accelerator == "cpu":
        return "cpu"
    return "tpu" if config.accelerator.startswith("tpu") else "gpu"


def may_fall_back(config: RuntimeConfig) -> bool:
    """Whether a replica of this plan that sees no GPU trains on the CPU instead of stopping."""
    return config.allow_cpu_fallback and planned_kind(config) == "gpu"


def judge(config: RuntimeConfig, sight: Sight) -> Verdict:
    """Compare the GPUs seen with the plan's; pure, so doctor and the runtime share it."""
    kind, planned = planned_kind(config), config.devices_per_host
    shape = f"{planned} × {config.accelerator} per host"
    if kind == "cpu":
        return Verdict(OK, f"planned CPU; {_sees(sight)}")
    if kind == "tpu":
        return Verdict(OK, f"planned {shape}: TPUStrategy checks them when it connects")
    if sight.emulated is not None and sight.gpus == 0:
        return Verdict(
            EMULATED,
            f"planned {shape}, emulated on the CPU as {sight.emulated} device(s) (CLOUDTRAIN_CPU_DEVICES)",
        )
    if sight.gpus >= planned:
        return Verdict(OK, f"planned {shape}; {_sees(sight)}")
    detail = f"Planned {shape}, but {_sees(sight)} ({_facts(sight)})."
    if sight.gpus == 0 and may_fall_back(config):
        instead = (
            f"Training on the CPU instead, as {FALLBACK_FIELD} allows: {planned} logical CPU device(s) "
            f"per host, global batch {config.global_batch} as planned."
        )
        return Verdict(FALLBACK, detail, likely_cause(sight, offer_fallback=False), instead)
    return Verdict(SHORT, detail, likely_cause(sight, offer_fallback=sight.gpus == 0))


def likely_cause(sight: Sight, *, offer_fallback: bool) -> str:
    """Why the GPUs are missing, judged from the facts, and what to do; with the fallback switch if offered."""
    if sight.gpu_build is False:
        cause = (
            f"this {sight.framework} has no CUDA support (tensorflow-cpu is installed, or the image has "
            "no GPU build): use a GPU image (image: auto picks one for GPU machines) or pip install "
            "'tensorflow[and-cuda]'."
        )
    elif sight.driver is None:
        cause = (
            f"no NVIDIA driver reaches the container ({NVIDIA_VERSION_FILE} is missing): the machine has "
            "no GPU, or the container was started without GPUs (docker run --gpus all); check the "
            "machine type with cloudtrain plan."
        )
    elif sight.visible is not None:
        cause = f"CUDA_VISIBLE_DEVICES={sight.visible!r} hides GPUs: unset it."
    elif sight.gpus > 0:
        cause = (
            f"the machine has {sight.gpus} usable GPU(s), fewer than the plan: check resources.per_host "
            "against the machine type (cloudtrain plan), and nvidia-smi for a GPU in error."
        )
    else:
        compat = "is" if CUDA_COMPAT_DIR in sight.library_path.split(":") else "is not"
        cause = (
            f"CUDA does not start with driver {sight.driver}: a driver older than the CUDA "
            f"{sight.framework} was built with ({sight.cuda or 'unknown'}) needs CUDA forward "
            f"compatibility ({CUDA_COMPAT_DIR} on LD_LIBRARY_PATH; here it {compat}), or the CUDA "
            "libraries are missing (TF_CPP_MIN_LOG_LEVEL=0 shows TensorFlow's 'Cannot dlopen' lines)."
        )
    fallback = f" To train on the CPU on purpose, set {FALLBACK_FIELD}: true." if offer_fallback else ""
    return f"Likely cause: {cause}{fallback}"


def _sees(sight: Sight) -> str:
    return f"{sight.framework} sees {sight.gpus} GPU{'' if sight.gpus == 1 else 's'}"


def _facts(sight: Sight) -> str:
    """The facts behind a shortfall: the build, CUDA_VISIBLE_DEVICES and the driver."""
    build = {
        True: f"built with CUDA {sight.cuda}" if sight.cuda else "a GPU build",
        False: "a build without CUDA",
    }
    facts = [build[sight.gpu_build]] if sight.gpu_build is not None else []
    facts.append(
        f"CUDA_VISIBLE_DEVICES={sight.visible!r}"
        if sight.visible is not None
        else "CUDA_VISIBLE_DEVICES unset"
    )
    facts.append(f"NVIDIA driver {sight.driver}" if sight.driver else "no NVIDIA driver")
    return "; ".join(facts)


def nvidia_driver(path: Path = NVIDIA_VERSION_FILE) -> str | None:
    """The NVIDIA kernel module's version from ``path``; None where no driver reaches this container.

    Example:
    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile("w", suffix="version") as f:
    ...     _ = f.write("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\\n")
    ...     f.flush()
    ...     nvidia_driver(Path(f.name))
    '550.54.15'
    """
    try:
        found = _DRIVER.search(path.read_text(errors="replace"))
    except (OSError, ValueError):
        return None
    return found.group(1) if found else None
