"""``cloudtrain bench``: measure the job's own training speed, and say what holds it back.

The advice cloudtrain follows: before adding hardware, prove the one device is busy (an
input-bound job gets worse when distributed); after scaling, judge it by scaling
efficiency, ``throughput_N / (N × throughput_1)``, not by wall clock.

``bench(spec)`` runs the job on the local provider (or ``provider=``, a cloud) with 1
replica, then with the spec's N (hosts × per_host; locally emulated as processes and CPU
devices where there is no GPU), the per-replica batch fixed. Every replica runs the
container entrypoint with ``CLOUDTRAIN_BENCH`` set (``Plan.with_env``, so render puts it
in every container; ``cloudtrain_runtime.bench``): it builds the model and datasets
exactly as training does and times the real input pipeline and one cached batch (the
compute ceiling). From those timings, pure functions give the verdicts
(``input_verdict``, ``scaling_verdict``, ``precision_verdict``), and
``BenchResult.to_json`` is also a throughput file that ``cloudtrain cost --throughput`` reads.

Example:
>>> scaling_efficiency(1000.0, 1800.0, 2)
0.9
>>> input_wait(pipeline=800.0, ceiling=1000.0)
0.2
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cloudtrain import figures
from cloudtrain.errors import BudgetError, ProviderError, SpecError, require
from cloudtrain.progress import OnProgress, Progress
from cloudtrain.uris import sibling
from cloudtrain_runtime import profiling
from cloudtrain_runtime.bench import BENCH_ENV, BENCH_FILE

if TYPE_CHECKING:
    import os

    from cloudtrain.planning import Plan
    from cloudtrain.provider import Job, JobStatus
    from cloudtrain.provider.base import Provider, ReadsOutputs
    from cloudtrain.spec import JobSpec

DEFAULT_STEPS = 300
"""Steps timed per measurement, after as many of warm-up: seconds per run on the example here."""
LOCAL = "local"
BENCH_MAX_RUNTIME = "30m"
"""``limits.max_runtime`` of every bench job, so a stuck one is stopped and bills at most this.

Warm-up plus ``steps`` steps, timed twice (input pipeline and one cached batch), and the
model's compilation take minutes at the default steps; 30 minutes leaves room for image
pulls and a slow input pipeline. The budget check bills every host for all of it.
"""
# The share of a step spent waiting for input, 1 - pipeline/ceiling, at which a job is partly
# and at which it is mainly input-bound: the TensorFlow Profiler's "moderately" (5 %) and
# "highly" (20 %) input-bound (kModeratelyInfeedBoundThresholdInPercent and
# kHighlyInfeedBoundThresholdInPercent, tensorflow/core/profiler/convert/
# op_stats_to_input_pipeline_analysis.cc). Below 5 % bench reports no difference, which is
# also the smallest mixed-precision gain it reports.
PARTLY_INPUT_BOUND = 0.05
INPUT_BOUND = 0.20
SMALLEST_GAIN = 1 + PARTLY_INPUT_BOUND
# Scaling efficiency at or above the best the cost table assumes for any shape (0.90,
# NVLink/ICI in catalog/scaling.csv) is as good as scaling gets; below the worst it assumes
# (0.60, Ethernet between hosts) the cost table is optimistic for this job.
SCALES_WELL = 0.90
SCALES_POORLY = 0.60
_SPEC_PRECISION = {"mixed_bfloat16": "bf16", "mixed_float16": "fp16"}


def scaling_efficiency(one: float, many: float, replicas: int) -> float:
    """``many / (replicas × one)``: the share of linear speed-up that ``replicas`` replicas reach.

    Example:
    >>> scaling_efficiency(100.0, 150.0, 2)
    0.75
    """
    return many / (replicas * one)


def input_wait(*, pipeline: float, ceiling: float) -> float:
    """The share of each step spent waiting for input: ``1 - pipeline / ceiling``, at least 0.

    Example:
    >>> input_wait(pipeline=1000.0, ceiling=900.0)  # timing noise: the ceiling came out lower
    0.0
    """
    return round(max(0.0, 1 - pipeline / ceiling), 12)


@dataclass(frozen=True)
class Verdict:
    """One finding: its name, the measurement behind it, and what to do (nothing when all is well)."""

    kind: str
    detail: str
    fixes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"verdict": self.kind, "detail": self.detail, "fixes": list(self.fixes)}


@dataclass(frozen=True)
class Measurement:
    """One bench run: the job on ``replicas`` replicas, as the chief's ``cloudtrain-bench.json`` says.

    Attributes:
        replicas: replicas in sync; hosts: processes (machines) among them.
        global_batch: examples per step over all replicas.
        strategy: the tf.distribute strategy the runtime chose.
        accelerator: what the speed describes (``cpu`` where devices were emulated).
        device_kind: ``cpu``, ``gpu`` or ``tpu``, as the replica found it.
        pipeline: examples/s on the real input pipeline.
        ceiling: examples/s on one cached batch: the compute ceiling.
        reads_files: whether the input reads files (so it can be sharded by FILE).
        switches: the speed switches in force, by name (``training.prefetch``, ...).
        precision: the runtime's mixed-precision comparison (``cloudtrain_runtime.bench``).
        profile: where the chief's profiler trace is (``steps``, ``logs``: the TensorBoard
            folder to open, ``trace``: the file), with ``--profile-steps``; else None.
    """

    replicas: int
    hosts: int
    global_batch: int
    strategy: str
    accelerator: str
    device_kind: str
    pipeline: float
    ceiling: float
    reads_files: bool
    switches: Mapping[str, Any]
    precision: Mapping[str, Any]
    profile: Mapping[str, Any] | None = None

    @classmethod
    def from_runtime(cls, data: Mapping[str, Any]) -> Measurement:
        """Read the runtime's ``cloudtrain-bench.json``."""
        return cls(
            replicas=int(data["replicas"]),
            hosts=int(data["hosts"]),
            global_batch=int(data["global_batch"]),
            strategy=str(data["strategy"]),
            accelerator=str(data["accelerator"]),
            device_kind=str(data["device_kind"]),
            pipeline=float(data["pipeline"]["examples_per_sec"]),
            ceiling=float(data["ceiling"]["examples_per_sec"]),
            reads_files=bool(data["reads_files"]),
            switches={name: setting["value"] for name, setting in data["speed"].items()},
            precision=data["precision"],
            profile=data.get("profile"),
        )

    @property
    def input_wait(self) -> float:
        return input_wait(pipeline=self.pipeline, ceiling=self.ceiling)

    def to_json(self) -> dict[str, Any]:
        return {
            "replicas": self.replicas,
            "hosts": self.hosts,
            "global_batch": self.global_batch,
            "strategy": self.strategy,
            "accelerator": self.accelerator,
            "pipeline_examples_per_sec": self.pipeline,
            "ceiling_examples_per_sec": self.ceiling,
            "input_wait": self.input_wait,
            "steps_per_execution": self.switches.get("steps_per_execution"),
            "profile": self.profile,
        }


def input_verdict(run: Measurement) -> Verdict:
    """Is the device waiting for input? The compute ceiling against the real pipeline, with the fixes."""
    wait = run.input_wait
    measured = (
        f"input pipeline {run.pipeline:,.0f} examples/s, compute ceiling {run.ceiling:,.0f} "
        f"(×{run.ceiling / run.pipeline:.2f}): the device waits for input {wait:.0%} of each step"
    )
    profile = _profile_note(run)
    if wait >= INPUT_BOUND:
        return Verdict(
            "input-bound",
            f"{measured}. Fix the input before adding hardware: more replicas would wait too.{profile}",
            input_fixes(run),
        )
    if wait >= PARTLY_INPUT_BOUND:
        return Verdict("partly input-bound", f"{measured}.{profile}", input_fixes(run))
    return Verdict(
        "compute-bound", f"{measured}; the device is busy, so more or faster devices help.{profile}"
    )


def _profile_note(run: Measurement) -> str:
    """Where this run's profile is, and how to open it; empty without one."""
    if not run.profile:
        return ""
    if not run.profile.get("trace"):
        return f" No profile of steps {run.profile['steps']} reached the job's outputs (its TensorBoard folder is not delivered)."
    return (
        f" Profile of steps {run.profile['steps']}: {run.profile['trace']} "
        f"(tensorboard --logdir {run.profile['logs']}, Profile tab: where each step's time goes)."
    )


def input_fixes(run: Measurement) -> tuple[str, ...]:
    """The changes that make this input faster, most likely first; the ones already made are left out."""
    fixes = []
    if not run.switches.get("prefetch"):
        fixes.append("Set training.prefetch: true (prefetch(AUTOTUNE) after batching).")
    if not run.switches.get("parallel_map"):
        fixes.append(
            "Set training.parallel_map: true, or give map() num_parallel_calls=tf.data.AUTOTUNE in make_dataset."
        )
    if not run.switches.get("cache_train"):
        fixes.append(
            "Cache what is the same every epoch: training.cache: true when the examples fit in memory, "
            "or .cache() right after the expensive map() in make_dataset (before shuffle and augmentation)."
        )
    if run.hosts > 1 and not run.reads_files:
        fixes.append(
            f"Each of the {run.hosts} hosts reads all the data and keeps 1/{run.hosts} (DATA sharding): write "
            "TFRecord shards and read them with tf.data.Dataset.list_files() to shard by FILE."
        )
    if run.reads_files:
        fixes.append(
            "Split the data into more files (at least 4 per host) and read them in parallel: "
            "list_files(...).interleave(tf.data.TFRecordDataset, num_parallel_calls=tf.data.AUTOTUNE)."
        )
    fixes.append("Vectorize per-example work: batch() first, then map() a function of whole batches.")
    return tuple(fixes)


def scaling_verdict(one: Measurement, many: Measurement) -> Verdict:
    """How much of a linear speed-up ``many`` replicas reach over ``one``, and what limits it."""
    efficiency = scaling_efficiency(one.pipeline, many.pipeline, many.replicas)
    detail = (
        f"scaling efficiency {efficiency:.2f}: {many.pipeline:,.0f} examples/s on {many.replicas} replicas "
        f"= {efficiency:.2f} × {many.replicas} × {one.pipeline:,.0f} on 1"
    )
    if many.pipeline <= one.pipeline:
        kind = "slower distributed"
        detail += f". {many.replicas} replicas are no faster than 1: train on one device."
    elif efficiency >= SCALES_WELL:
        return Verdict("scales well", detail + ".")
    else:
        kind = "scales" if efficiency >= SCALES_POORLY else "scales poorly"
        detail += "."
    return Verdict(kind, detail, scaling_fixes(one, many))


def scaling_fixes(one: Measurement, many: Measurement) -> tuple[str, ...]:
    """What closes the gap to linear scaling, for this pair of runs."""
    fixes = []
    if one.input_wait >= PARTLY_INPUT_BOUND:
        fixes.append(
            "Fix the input first (see input): an input-bound replica only waits longer when there are more."
        )
    one_call, many_call = one.switches.get("steps_per_execution"), many.switches.get("steps_per_execution")
    if isinstance(one_call, int) and isinstance(many_call, int) and one_call > many_call:
        fixes.append(
            f"1 replica ran {one_call} steps per call and {many.replicas} ran {many_call} (Keras 3 under "
            f"{many.strategy}, keras-team/keras#19246): per-step overhead is part of the gap."
        )
    fixes.append(
        "Raise training.per_replica_batch: each step's all-reduce then carries the same gradients for more examples."
    )
    if many.hosts > 1:
        fixes.append(
            "Prefer fewer, larger hosts (resources.per_host up, resources.hosts down): "
            "an all-reduce within a host is faster than one between hosts."
        )
    return tuple(fixes)


def precision_verdict(run: Measurement) -> Verdict:
    """Mixed precision on vs off, from the runtime's comparison of the compute ceiling."""
    found = run.precision
    if not found.get("supported"):
        return Verdict("not measured", str(found.get("detail", "not supported here")))
    on, off = (float(found[side]["examples_per_sec"]) for side in ("on", "off"))
    spec_value = _SPEC_PRECISION.get(str(found["policy"]), str(found["policy"]))
    detail = f"compute ceiling {on:,.0f} examples/s with {found['policy']}, {off:,.0f} with float32 (×{on / off:.2f})"
    if on / off < SMALLEST_GAIN:
        return Verdict("no gain", f"{detail}: mixed precision does not speed this model up here.")
    if found.get("job_policy") != "float32":
        return Verdict("faster", f"{detail}; the job already uses it.")
    return Verdict("faster", f"{detail}.", (f"Set training.mixed_precision: {spec_value}.",))


@dataclass(frozen=True)
class BenchResult:
    """What ``bench`` measured and concluded.

    Attributes:
        name: the job's name.
        runs: one ``Measurement`` per replica count, 1 first, the job's own shape last.
        input: whether the job's replicas wait for input (judged on one replica).
        scaling: how the job's replica count scales over one; None for a one-replica job.
        precision: mixed precision on vs off.
        notes: what the numbers do not say (emulated devices).
    """

    name: str
    runs: tuple[Measurement, ...]
    input: Verdict
    scaling: Verdict | None
    precision: Verdict
    notes: tuple[str, ...] = ()

    @property
    def job(self) -> Measurement:
        """The run with the job's own replica count."""
        return self.runs[-1]

    @property
    def efficiency(self) -> float | None:
        if len(self.runs) < 2:
            return None
        return scaling_efficiency(self.runs[0].pipeline, self.job.pipeline, self.job.replicas)

    def __repr__(self) -> str:
        rates = ", ".join(f"{run.replicas}: {run.pipeline:,.0f}/s" for run in self.runs)
        return f"BenchResult(name={self.name!r}, runs=[{rates}], input={self.input.kind!r})"

    def to_json(self) -> dict[str, Any]:
        """The results; ``examples_per_sec``, ``accelerator`` and ``devices`` make it a throughput file."""
        return {
            "name": self.name,
            "examples_per_sec": self.job.pipeline,
            "accelerator": self.job.accelerator,
            "devices": self.job.replicas,
            "scaling_efficiency": self.efficiency,
            "runs": [run.to_json() for run in self.runs],
            "input": self.input.to_json(),
            "scaling": self.scaling.to_json() if self.scaling else None,
            "precision": self.precision.to_json(),
            "notes": list(self.notes),
        }


def summarize(name: str, found: Sequence[Mapping[str, Any]], *, accelerator: str = "") -> BenchResult:
    """The verdicts on the runtime's results, one per replica count (1 first).

    ``accelerator`` is the plan's; when the runs measured emulated CPU devices instead, a note says so.
    """
    runs = tuple(Measurement.from_runtime(data) for data in found)
    return BenchResult(
        name=name,
        runs=runs,
        input=input_verdict(runs[0]),
        scaling=scaling_verdict(runs[0], runs[-1]) if len(runs) > 1 else None,
        precision=precision_verdict(runs[0]),
        notes=_emulation_note(runs[-1], accelerator),
    )


def _emulation_note(run: Measurement, accelerator: str) -> tuple[str, ...]:
    if run.device_kind != "cpu" or accelerator in ("", "cpu"):
        return ()
    return (
        f"The spec asks for {accelerator}; this machine has none, so the {run.replicas} replica(s) ran on "
        "its CPU, sharing its cores: the examples/s and the scaling efficiency are this machine's. "
        "cost converts a CPU rate only to accelerators catalog/speeds.csv relates to it.",
    )


def bench(
    spec: JobSpec | str | os.PathLike[str],
    *,
    provider: str | Provider | None = None,
    steps: int = DEFAULT_STEPS,
    progress: OnProgress | None = None,
    force: bool = False,
    poll_s: float = 30.0,
    profile_steps: str | None = None,
) -> BenchResult:
    """Run the job's bench with 1 replica and with its own N, and judge them.

    Each run is a job of its own on ``provider`` (default: this machine) whose containers
    get ``CLOUDTRAIN_BENCH``; its request, and so its job name, differs from the training
    job's. A billed provider's runs write under ``<storage root>/bench/<N>`` and are
    checked against ``limits.max_cost_usd`` as submit checks a job, with
    ``limits.max_runtime`` set to ``BENCH_MAX_RUNTIME``.

    Args:
        spec: a JobSpec, or the path of a job.yaml.
        provider: a provider name or object; None: local.
        steps: optimizer steps timed per measurement (after as many of warm-up).
        progress: called with ``Progress(step="bench", name="N replica(s)", done, total)`` as each
            run starts (``done`` runs finished of ``total``), with ``name="N replica(s): STATE"``
            as a run's job changes state, and once more when all have.
        force: run even when a run's worst case exceeds ``limits.max_cost_usd``.
        poll_s: seconds between status polls of a run's job.
        profile_steps: ``"FIRST-LAST"``: after its timings each run's chief traces these steps of
            one more epoch with the TensorFlow Profiler, and the input verdict names the trace.
            The runs then write under the storage root's ``bench/<N>`` here too, so the trace stays.

    Raises:
        SpecError: the job is in script mode (bench times a managed module), or the provider
            cannot read a job's outputs back.
        BudgetError: a run's worst case exceeds ``limits.max_cost_usd`` and ``force`` is False.
        ProviderError: a run failed; the message has its error line and the log command.

    Example:
    >>> result = bench("examples/binary_classifier/job.yaml", steps=100)  # doctest: +SKIP
    >>> result.input.kind, result.efficiency  # doctest: +SKIP
    ('compute-bound', 0.11)
    """
    from cloudtrain import submission

    spec = submission.as_spec(spec)
    target = _reader(submission.provider_for(provider or LOCAL, spec))
    report = progress or _silent
    found = []
    with tempfile.TemporaryDirectory(prefix="cloudtrain-bench-") as scratch:
        runs = bench_plans(spec, target, steps, Path(scratch), profile_steps=profile_steps)
        for plan_ in runs if target.billed and not force else ():
            _within_budget(plan_)
        for done, plan_ in enumerate(runs):
            name = f"{plan_.replicas} replica(s)"
            report(Progress("bench", name, done=done, total=len(runs)))
            found.append(_run(target, plan_, _on_state(report, name, done, len(runs)), poll_s))
    report(Progress("bench", "done", done=len(runs), total=len(runs)))
    return summarize(spec.name, found, accelerator=spec.resources.accelerator)


def _within_budget(planned: Plan) -> None:
    """Refuse a bench run whose worst case exceeds ``limits.max_cost_usd``, as submit refuses a job.

    Raises:
        BudgetError: it does.
    """
    from cloudtrain.cost import budget

    check = budget.check_budget(planned, None)
    if check.over:
        raise BudgetError(
            f"The bench run on {planned.replicas} replica(s) can cost ${check.usd:.2f} "
            f"({planned.hosts} host(s) for all of its {BENCH_MAX_RUNTIME}), over "
            f"limits.max_cost_usd={check.limit}. Raise the limit (--set limits.max_cost_usd=...) "
            "or pass --force to run anyway."
        )


def bench_plans(
    spec: JobSpec, target: Provider, steps: int, scratch: Path, *, profile_steps: str | None = None
) -> list[Plan]:
    """The plans of ``spec``'s bench runs on ``target``: 1 replica, then its own N if more.

    Each has the bench variable and ``BENCH_MAX_RUNTIME``, and with ``profile_steps`` the
    profile variable (``cloudtrain_runtime.profiling``). An unbilled provider writes under
    ``scratch`` unless a profile must stay; a billed one, or one that profiles, under the
    storage root's ``bench/<N>``.

    Raises:
        SpecError: the job is in script mode (bench times a managed module), or
            ``profile_steps`` is not FIRST-LAST.
    """
    if spec.code.module is None:
        raise SpecError(
            "code: cloudtrain bench times a managed module (code.module with build_model and make_dataset); "
            "a script runs its own loop, which it cannot time."
        )
    env = {BENCH_ENV: str(steps), **profile_env(profile_steps)}
    planned = target.plan(spec)
    kept = target.billed or profile_steps is not None
    root = f"{planned.storage.root.rstrip('/')}/bench" if kept else str(scratch)
    counts = [1] if planned.replicas == 1 else [1, planned.replicas]
    return [
        target.plan(shape(spec, planned, replicas, f"{root}/{replicas}")).with_env(env) for replicas in counts
    ]


def profile_env(steps: str | None) -> dict[str, str]:
    """The profile variable for a bench's extra epoch (its first and only one), or nothing.

    Raises:
        SpecError: ``steps`` is not FIRST-LAST.
    """
    if steps is None:
        return {}
    found = profiling.parse_steps(steps)
    problem = (
        "write FIRST-LAST"
        if found is None
        else profiling.window_problem(epoch=1, first=found[0], last=found[1])
    )
    if problem or found is None:
        raise SpecError(f'--profile-steps must be FIRST-LAST, e.g. "10-20" ({problem}). Received: {steps!r}')
    return {profiling.PROFILE_ENV: str(profiling.Window(1, *found))}


def worst_cost(spec: JobSpec, provider: str | Provider | None = None) -> float | None:
    """Dollars all of ``spec``'s bench runs on ``provider`` can bill at most; None: nothing or unknown.

    Every host of each run billed for all of ``BENCH_MAX_RUNTIME`` (``cost.budget.worst_case``).

    Raises:
        SpecError: the provider cannot read a job's outputs back, so cannot bench.
    """
    from cloudtrain import submission
    from cloudtrain.cost import budget

    target = _reader(submission.provider_for(provider or LOCAL, spec))
    if not target.billed:
        return None
    with tempfile.TemporaryDirectory(prefix="cloudtrain-bench-") as scratch:
        costs = [budget.worst_case(plan_).usd for plan_ in bench_plans(spec, target, 1, Path(scratch))]
    return None if None in costs else sum(cost for cost in costs if cost is not None)


def _reader(target: Provider) -> ReadsOutputs:
    """``target``, once it is known to read a job's outputs back (the bench file is one).

    Raises:
        SpecError: it cannot.
    """
    from cloudtrain.provider.base import ReadsOutputs

    if not isinstance(target, ReadsOutputs):
        raise SpecError(
            f"--provider {target.name}: cloudtrain bench needs to read a job's outputs back, "
            f"which the {target.name} provider cannot. Run it on another provider, e.g. --provider local."
        )
    return target


def shape(spec: JobSpec, planned: Plan, replicas: int, root: str | Path) -> JobSpec:
    """``spec`` on ``replicas`` replicas (1, or its own), the per-replica batch fixed, writing under ``root``.

    One replica is one host of one device under the strategy ``auto`` picks for it. Its
    ``limits.max_runtime`` is ``BENCH_MAX_RUNTIME``. ``root`` replaces the provider
    section's own ``storage_root`` too, where the spec sets one (it wins over ``storage.root``).
    """
    from cloudtrain.specfile import parse_spec

    section = getattr(spec, planned.provider, None)
    own_root = [f"{planned.provider}.storage_root={root}"] if getattr(section, "storage_root", None) else []
    overrides = [
        *own_root,
        f"storage.root={root}",
        f"limits.max_runtime={BENCH_MAX_RUNTIME}",
        f"training.per_replica_batch={planned.per_replica_batch}",
        "training.global_batch=null",
    ]
    if replicas == 1:
        overrides += ["resources.hosts=1", "resources.per_host=1", "training.strategy=auto"]
    return parse_spec(spec.model_dump(exclude_unset=True), overrides)


def _run(
    target: ReadsOutputs, planned: Plan, on_status: Callable[[JobStatus], None], poll_s: float
) -> dict[str, Any]:
    """Run one bench job and return the chief's ``cloudtrain-bench.json``, read from its outputs."""
    from cloudtrain import submission

    planned, packed = submission.pack_code(planned)
    planned = planned.with_run(submission.new_run_id(target, planned))
    target.upload(planned, packed)
    job = target.submit(planned, target.render(planned), packed)
    try:
        status = job.wait(poll_s, on_status)
    except BaseException:  # Ctrl-C, or anything else: leave no replica running, nothing billing
        job.cancel()
        raise
    if status.state != "succeeded":
        raise ProviderError(_failure(job, planned.spec, status.detail))
    found = dict(json.loads(target.read_output(planned, sibling(job.outputs.result, BENCH_FILE))))
    return {**found, "profile": delivered(found.get("profile"), job.outputs.tensorboard)}


def delivered(profile: Mapping[str, Any] | None, tensorboard: str) -> dict[str, Any] | None:
    """The runtime's profile, its paths as the job's outputs name them (the container's are gone).

    ``tensorboard`` is ``Job.outputs.tensorboard``; ``""`` where the request delivers no
    TensorBoard files (a SageMaker request without ``TensorBoardOutputConfig``): no trace.

    Example:
    >>> delivered({"steps": "2-4", "logdir": "/opt/ml/output/tensorboard",
    ...            "trace": "/opt/ml/output/tensorboard/plugins/profile/r/algo-1.xplane.pb"}, "s3://b/logs")
    {'steps': '2-4', 'logs': 's3://b/logs', 'trace': 's3://b/logs/plugins/profile/r/algo-1.xplane.pb'}
    """
    if not profile:
        return None
    trace, logdir = profile.get("trace"), str(profile["logdir"]).rstrip("/")
    relative = str(trace)[len(logdir) + 1 :] if trace and str(trace).startswith(logdir + "/") else None
    base = tensorboard.rstrip("/")
    return {
        "steps": profile["steps"],
        "logs": base or None,
        "trace": f"{base}/{relative}" if base and relative else None,
    }


def _on_state(report: OnProgress, name: str, done: int, total: int) -> Callable[[JobStatus], None]:
    """A ``Job.wait`` callback that reports each state of the run's job (queued, running...)."""

    def on_status(status: JobStatus) -> None:
        report(Progress("bench", f"{name}: {status.state}", done=done, total=total))

    return on_status


def _failure(job: Job, spec: JobSpec, detail: str) -> str:
    """Why a run failed: the launcher's detail and the replica's own error line, with the log command."""
    errors = [line for line in job.logs() if "error" in line.lower()]
    said = f" {errors[-1]}" if errors else ""
    replicas = spec.resources.hosts * spec.resources.per_host
    return f"The bench run on {replicas} replica(s) failed: {detail}{said} Full log: cloudtrain logs {job.id}"


def _silent(event: Progress) -> None:
    """The progress callback of a caller who asked for none."""


def plot(result: BenchResult, path: str | Path) -> Path:
    """Write throughput and scaling efficiency against replicas to ``path`` (PNG) and return it.

    Left: examples/s of the input pipeline and of the compute ceiling, and the linear
    speed-up of one replica's pipeline. Right: scaling efficiency, with the thresholds
    the verdict uses. matplotlib is imported here only, with the headless Agg backend.
    """
    require("matplotlib", "plot")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (speed, efficiency) = plt.subplots(1, 2, figsize=(11, 4.5), dpi=120)
    replicas = [run.replicas for run in result.runs]
    speed.plot(replicas, [run.pipeline for run in result.runs], "o-", label="input pipeline")
    speed.plot(
        replicas, [run.ceiling for run in result.runs], "s--", label="compute ceiling (one cached batch)"
    )
    speed.plot(
        replicas, [result.runs[0].pipeline * n for n in replicas], ":", color="#80868b", label="linear"
    )
    speed.set(xlabel="replicas", ylabel="examples/s", xticks=replicas, title="Throughput")
    speed.set_ylim(bottom=0)
    speed.legend(fontsize=8)
    efficiency.plot(
        replicas, [run.pipeline / (run.replicas * result.runs[0].pipeline) for run in result.runs], "o-"
    )
    for level, label in ((SCALES_WELL, "scales well"), (SCALES_POORLY, "scales poorly below")):
        efficiency.axhline(level, color="#80868b", linewidth=0.8, linestyle=":")
        efficiency.annotate(
            label, (replicas[0], level), textcoords="offset points", xytext=(2, 3), fontsize=8
        )
    efficiency.set(xlabel="replicas", ylabel="throughput_N / (N × throughput_1)", xticks=replicas)
    efficiency.set(ylim=(0, 1.1), title="Scaling efficiency")
    for ax in (speed, efficiency):
        ax.grid(True, linewidth=0.3, alpha=0.6)
    fig.suptitle(f"{result.name}: cloudtrain bench on {result.job.accelerator}", fontsize=10)
    fig.tight_layout()
    return figures.save(fig, path)
