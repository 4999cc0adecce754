"""Did scaling pay? Read runs back from their outputs and compare them (``cloudtrain compare``).

``runs`` reads a run (a job ID, a local run, an output folder or a URI) into a
``RunRecord``: its shape, its per-epoch history over every attempt, its speed and its
price (``pricing``: billed where the provider says, else the catalog). ``analysis``
puts runs side by side at equal epochs, equal wall time and equal cost and judges each
against the one with the fewest replicas; ``plot`` draws it.

Example:
>>> result = compare("local:demo-1rep", "local:demo-2host", target="val_accuracy=0.95")  # doctest: +SKIP
>>> result.verdicts[0].kind  # doctest: +SKIP
'paid in time, not in money'
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from cloudtrain.arguments import PATH, TEXT, expect, instance_of
from cloudtrain.scaling.analysis import Comparison, Target, Verdict, compare_runs
from cloudtrain.scaling.runs import EpochPoint, RunRecord, read_run

if TYPE_CHECKING:
    from cloudtrain.planning import Plan
    from cloudtrain.spec import JobSpec

__all__ = ["Comparison", "EpochPoint", "RunRecord", "Target", "Verdict", "compare", "read", "read_run"]


def compare(
    *runs: str | RunRecord,
    target: str | None = None,
    metric: str | None = None,
    settings: JobSpec | None = None,
    clients: Any = None,
    spec: JobSpec | str | os.PathLike[str] | None = None,
    provider: str | None = None,
) -> Comparison:
    """Compare two or more runs: at equal epochs, time and cost, to a target, with a verdict.

    Args:
        *runs: job IDs (``local:<run>``, a Vertex AI job, a SageMaker ARN), local run names,
            output folders, ``gs://``/``s3://`` URIs, or ``RunRecord`` objects already read.
        target: ``METRIC=VALUE`` to reach; default the best value the slowest-converging run
            reached.
        metric: the metric to compare without a target; default a validation metric all logged.
        settings: where cloud outputs are read from and the region that prices a run nothing
            billed; default the profile and the environment (``specfile.load_settings``).
        clients: a provider's clients, for the runs read from that provider.
        spec: a job spec (or its path) whose run IDs (``--run-id`` at submit) ``runs`` may name.
        provider: where those runs ran; default the spec's provider.

    Raises:
        SpecError: fewer than two runs, a bad ``target``, or a metric not every run logged.
        CloudtrainError: a run cannot be found or read.
    """
    _expect_arguments(runs, target, metric, settings, spec, provider)
    settings, planned = _where(settings, spec, provider)
    read = [
        run
        if isinstance(run, RunRecord)
        else read_run(run, settings=settings, clients=clients, planned=planned)
        for run in runs
    ]
    return compare_runs(read, target=target, metric=metric)


def read(
    run: str,
    *,
    settings: JobSpec | None = None,
    clients: Any = None,
    spec: JobSpec | str | os.PathLike[str] | None = None,
    provider: str | None = None,
) -> RunRecord:
    """The run ``run`` names, read as ``compare`` reads each of its runs (``cloudtrain history``).

    The arguments are ``compare``'s.

    Raises:
        CloudtrainError: the run cannot be found or read.
    """
    _expect_arguments((run,), None, None, settings, spec, provider)
    settings, planned = _where(settings, spec, provider)
    return read_run(run, settings=settings, clients=clients, planned=planned)


def _where(
    settings: JobSpec | None, spec: JobSpec | str | os.PathLike[str] | None, provider: str | None
) -> tuple[JobSpec, Plan | None]:
    """The settings runs are read with (the profile and environment when None), and the plan of ``spec`` if given."""
    if settings is None:
        from cloudtrain.specfile import load_settings

        settings = load_settings(None, provider=provider)[0]
    if spec is None:
        return settings, None
    from cloudtrain import submission

    spec = submission.as_spec(spec)
    return settings, submission.provider_for(provider, spec).plan(spec)


def _expect_arguments(
    runs: tuple[object, ...], target: object, metric: object, settings: object, spec: object, provider: object
) -> None:
    """Refuse an argument of ``compare`` of the wrong type, before any run is read (``cloudtrain.arguments``)."""
    from cloudtrain.spec import JobSpec

    a_spec = instance_of(JobSpec, "a cloudtrain.JobSpec")
    for index, run in enumerate(runs):
        expect(**{f"runs[{index}]": (run, TEXT | instance_of(RunRecord, "a RunRecord"))})
    expect(
        target=(target, TEXT | None),
        metric=(metric, TEXT | None),
        settings=(settings, a_spec | None),
        spec=(spec, a_spec | PATH | None),
        provider=(provider, TEXT | None),
    )
