"""``cloudtrain bench`` inside a replica: how fast the job's own model trains, and what holds it back.

With ``CLOUDTRAIN_BENCH=STEPS`` in its environment the entrypoint measures instead of
training (``main.run``), so the same measurement runs wherever the job runs: here under
the local provider, or in a cloud container. It builds the user's datasets and compiled
model exactly as training does (``managed.prepare``: the same strategy, batching,
sharding and speed switches), then times STEPS optimizer steps of:

- ``pipeline``: the real input pipeline;
- ``ceiling``: one batch of it, cached and repeated (``take(1).cache().repeat()``): the
  model's speed when input costs nothing, the compute ceiling;
- where the devices run 16-bit math faster (``precision_policy``), the ceiling under the
  other precision policy (mixed precision on vs off).

Each timing follows a warm-up epoch of STEPS steps, which traces and compiles the step and
fills tf.data's buffers (``callbacks.Throughput`` counts only the epochs after it). A
process alone repeats the timed epoch until ``MIN_SECONDS`` have passed (``measure``) and
times pipeline and ceiling in turn ``ROUNDS`` times, keeping the median (``alternate``).
Nothing is exported, backed up or logged to TensorBoard. The chief writes the results to
``cloudtrain-bench.json`` beside the result file (``Locations.results``).

With ``CLOUDTRAIN_TRACE_STEPS=EPOCH:FIRST-LAST`` (``cloudtrain bench --profile-steps``) two
more untimed epochs of LAST steps run on the real pipeline once the timings are done, the
chief tracing steps FIRST to LAST of the second into its TensorBoard folder
(``cloudtrain_runtime.profiling``): the profile that shows where the input time goes. The
results name it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from cloudtrain_runtime import callbacks, data, profiling, tuning
from cloudtrain_runtime.errors import ConfigError

if TYPE_CHECKING:
    from cloudtrain_runtime.managed import Prepared
    from cloudtrain_runtime.session import Session

BENCH_ENV = "CLOUDTRAIN_BENCH"
BENCH_FILE = "cloudtrain-bench.json"
MAX_STEPS = 1_000_000
MIN_SECONDS = 0.5
"""What a process alone times at least, per measurement: the example's 300 steps on one CPU
device take 0.15 s, in which one scheduling delay weighs as much as the difference judged."""
MAX_EPOCHS = 50
ROUNDS = 3
"""How often a process alone times the pipeline and the ceiling in turn (``alternate``). Five
benches of the example with one round each on a shared 2-core machine put its input wait
anywhere from 0 % to 16 %."""
FLOAT32 = "float32"
# Compute capabilities from which NVIDIA GPUs run 16-bit math faster than float32: Tensor
# Cores from 7.0 ("those with compute capability 7.0 or higher will see the greatest
# performance benefit", https://www.tensorflow.org/guide/mixed_precision#supported_hardware);
# bfloat16 from 8.0 (Ampere), as the plan's ``mixed_precision: auto`` chooses.
_TENSOR_CORES = (7, 0)
_BFLOAT16 = (8, 0)


def requested_steps(env: Mapping[str, str]) -> int | None:
    """The steps to time per measurement (``CLOUDTRAIN_BENCH``), or None to train as usual.

    Raises:
        ConfigError: the value is not a whole number from 1 to ``MAX_STEPS``.

    Example:
    >>> requested_steps({"CLOUDTRAIN_BENCH": "200"}), requested_steps({})
    (200, None)
    """
    value = env.get(BENCH_ENV, "")
    if not value:
        return None
    if not (value.isascii() and value.isdigit() and 1 <= int(value) <= MAX_STEPS):
        raise ConfigError(
            f"{BENCH_ENV} must be the number of steps to time, 1 to {MAX_STEPS}. Received: {value!r}"
        )
    return int(value)


def run(session: Session, directory: Path, steps: int) -> dict[str, Any]:
    """Measure the managed module's training speed; the chief writes ``cloudtrain-bench.json``.

    Raises:
        ConfigError: the job is in script mode, whose loop bench cannot time.
    """
    from cloudtrain_runtime import managed

    if not session.config.module:
        raise ConfigError(
            "cloudtrain bench times a managed module (code.module: build_model and make_dataset); "
            "a script runs its own loop, which it cannot time. Switch to code.module to bench it."
        )
    prepared = managed.prepare(session, session.config.module, directory)
    model = prepared.model(session)
    session.log_speed(model)
    rounds = ROUNDS if session.cluster.num_hosts == 1 else 1
    with managed.failures(session, "model.fit()", directory):
        pipeline, ceiling = alternate(session, model, prepared.examples, steps, rounds)
        precision = compare_precision(session, prepared, steps, ceiling)
        profile = profile_steps(session, model, prepared.examples)
    result = {
        **_job(session, steps),
        "reads_files": data.reads_files(session.tf, prepared.examples),
        "pipeline": pipeline,
        "ceiling": ceiling,
        "precision": precision,
        "profile": profile,
    }
    if session.is_chief:
        _write(session, result)
    return result


def measure(session: Session, model: Any, dataset: Any, steps: int) -> dict[str, Any]:
    """``callbacks.Throughput`` of epochs of ``steps`` optimizer steps on ``dataset``, after a warm-up epoch.

    Several hosts time exactly one epoch: they step in lockstep, so none may stop on its
    own clock. A process alone times epochs until ``MIN_SECONDS`` have passed (at most
    ``MAX_EPOCHS``). The dataset is repeated, so a short one still gives every step;
    ``Throughput`` counts the optimizer's steps, whatever ``steps_per_execution`` is.
    """
    keras, alone = session.keras, session.cluster.num_hosts == 1
    meter = callbacks.keras_callback(keras, callbacks.Throughput, session.global_batch, steps)
    hooks = [meter, callbacks.keras_callback(keras, _Enough, meter)] if alone else [meter]
    epochs = 1 + (MAX_EPOCHS if alone else 1)
    model.fit(
        dataset.repeat(), epochs=epochs, steps_per_epoch=steps, callbacks=hooks, shuffle=False, verbose=0
    )
    return dict(meter.result())


def profile_steps(session: Session, model: Any, dataset: Any) -> dict[str, Any] | None:
    """With ``CLOUDTRAIN_TRACE_STEPS``, two untimed epochs of the real pipeline, the chief tracing the window of the second.

    The first shows the profiler how many steps one call runs (``steps_per_execution``),
    so the trace starts with the call that runs the window's first step. Every host runs
    the epochs (they step together). Returns where the trace is; None: no profile asked for.
    """
    window = profiling.requested(os.environ)
    if window is None:
        return None
    window = profiling.Window(2, window.first, window.last)
    profiler = session.profiler(window)
    hooks = [callbacks.keras_callback(session.keras, profiling.ProfileSteps, profiler)] if profiler else []
    model.fit(
        dataset.repeat(), epochs=2, steps_per_epoch=window.last, callbacks=hooks, shuffle=False, verbose=0
    )
    found = profiling.traces(session.locations.tensorboard)
    return {
        "steps": f"{window.first}-{window.last}",
        "logdir": str(session.locations.tensorboard),
        "trace": str(found[-1]) if found else None,
    }


class _Enough:
    """Ends ``fit`` at the end of the first epoch by which ``meter`` has timed ``MIN_SECONDS``."""

    model: Any  # set by the Keras Callback base that ``callbacks.keras_callback`` adds

    def __init__(self, meter: callbacks.Throughput) -> None:
        super().__init__()
        self.meter = meter

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        if self.meter.seconds >= MIN_SECONDS:
            self.model.stop_training = True


def alternate(
    session: Session, model: Any, dataset: Any, steps: int, rounds: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The real pipeline and the compute ceiling, timed in turn ``rounds`` times: the median of each.

    Taking turns spreads a change in the machine's load over both sides, as the interleaved
    pairs of benchmarks/entrypoint_overhead.py do; each median keeps every round's rate.
    """
    timings: tuple[list[dict[str, Any]], list[dict[str, Any]]] = ([], [])
    for _ in range(rounds):
        timings[0].append(measure(session, model, dataset, steps))
        timings[1].append(measure(session, model, one_batch(dataset), steps))
    return _median(timings[0]), _median(timings[1])


def _median(timings: list[dict[str, Any]]) -> dict[str, Any]:
    ranked = sorted(timings, key=lambda timing: float(timing["examples_per_sec"]))
    return {**ranked[len(ranked) // 2], "rounds": [timing["examples_per_sec"] for timing in timings]}


def one_batch(dataset: Any) -> Any:
    """The first batch of ``dataset``, kept in memory and given again and again: input at no cost."""
    return dataset.take(1).cache().repeat()


def precision_policy(tf: ModuleType, device_kind: str) -> tuple[str | None, str]:
    """The mixed policy these devices run faster than float32, or None; and why.

    Example:
    >>> precision_policy(None, "cpu")[0] is None
    True
    """
    if device_kind == "tpu":
        return "mixed_bfloat16", "TPUs run bfloat16 natively"
    if device_kind != "gpu":
        return None, (
            f"not supported here: {device_kind} devices gain nothing from 16-bit math that cloudtrain "
            "can check; bench on a GPU (compute capability 7.0+) to compare"
        )
    capability = min(_capability(tf, gpu) for gpu in tf.config.list_physical_devices("GPU"))
    shown = ".".join(map(str, capability))
    if capability >= _BFLOAT16:
        return "mixed_bfloat16", f"GPU compute capability {shown}: bfloat16 Tensor Cores"
    if capability >= _TENSOR_CORES:
        return "mixed_float16", f"GPU compute capability {shown}: float16 Tensor Cores"
    return None, f"not supported here: GPU compute capability {shown} has no Tensor Cores (7.0+)"


def _capability(tf: ModuleType, gpu: Any) -> tuple[int, int]:
    """A GPU's ``(major, minor)`` compute capability; ``(0, 0)`` when TensorFlow does not say."""
    major, minor = tf.config.experimental.get_device_details(gpu).get("compute_capability", (0, 0))
    return int(major), int(minor)


def compare_precision(
    session: Session, prepared: Prepared, steps: int, ceiling: dict[str, Any]
) -> dict[str, Any]:
    """The compute ceiling with mixed precision on and off, where the devices support it.

    ``ceiling`` was measured under the job's own policy; the other one is measured here,
    on a model built again under it.
    """
    policy, reason = precision_policy(session.tf, session.cluster.device_kind)
    current = session.keras.mixed_precision.global_policy().name
    found: dict[str, Any] = {"supported": policy is not None, "detail": reason, "job_policy": current}
    if policy is None:
        return found
    other = policy if current == FLOAT32 else FLOAT32
    measured = {current: ceiling, other: measure_policy(session, prepared, steps, other)}
    return {
        **found,
        "policy": policy,
        "on": measured[policy if current == FLOAT32 else current],
        "off": measured[FLOAT32],
    }


def measure_policy(session: Session, prepared: Prepared, steps: int, policy: str) -> dict[str, Any]:
    """The compute ceiling of the model built under ``policy``; the job's policy is restored after.

    Layers read the global policy when they are created, so only the build needs it.
    """
    precision = session.keras.mixed_precision
    before = precision.global_policy()
    precision.set_global_policy(policy)
    try:
        model = prepared.model(session)
    finally:
        precision.set_global_policy(before)
    return measure(session, model, one_batch(prepared.examples), steps)


def _job(session: Session, steps: int) -> dict[str, Any]:
    return {
        "name": session.config.name,
        "replicas": session.replicas,
        "hosts": session.cluster.num_hosts,
        "per_replica_batch": session.per_replica_batch,
        "global_batch": session.global_batch,
        "strategy": session.choice.name,
        "accelerator": session.measured_on,
        "device_kind": session.cluster.device_kind,
        "steps": steps,
        "speed": tuning.as_json(session.speed),
    }


def _write(session: Session, result: Mapping[str, Any]) -> None:
    folder = session.locations.results
    folder.mkdir(parents=True, exist_ok=True)
    (folder / BENCH_FILE).write_text(json.dumps(result, indent=2) + "\n")
    pipeline, ceiling = result["pipeline"]["examples_per_sec"], result["ceiling"]["examples_per_sec"]
    session.say(
        f"bench: {result['replicas']} replica(s), {result['steps']} steps: input pipeline "
        f"{pipeline:.0f} examples/s, compute ceiling {ceiling:.0f} examples/s"
    )
    session.say(f"bench={folder / BENCH_FILE}")
