"""Where a job's artifacts are once it has ended: one URI per artifact, true on the provider.

Each provider answers for itself (``Provider.outputs(plan)`` before the job exists,
``Job.outputs`` after), from the facts its service documents: on SageMaker the model is
the ``model.tar.gz`` SageMaker uploads under ``OutputDataConfig.S3OutputPath``, not a
folder of cloudtrain's choosing. A URI that depends on a job name the provider has not
given yet carries the placeholder ``{job}``; ``Outputs.for_job`` fills it in.

A URI may end in ``#MEMBER``: the artifact is the file ``MEMBER`` inside that tarball
(SageMaker packs ``/opt/ml/output/data`` into ``output.tar.gz``).

Example:
>>> outputs = standard("gs://bucket/run", logs="https://example.com/logs?job={job}")
>>> outputs.model, outputs.for_job("42").logs
('gs://bucket/run/model', 'https://example.com/logs?job=42')
"""

from __future__ import annotations

from dataclasses import MISSING, asdict, dataclass, fields

from cloudtrain_runtime.replica import HISTORY_FILE, RESULT_FILE, THROUGHPUT_FILE

JOB = "{job}"


@dataclass(frozen=True)
class Outputs:
    """The durable home of each artifact of one job.

    Attributes:
        model: the exported SavedModel (a folder, or a tarball holding it).
        backup: the training backups a restarted job resumes from.
        tensorboard: the TensorBoard event files.
        logs: the job's log lines (a console URL on a cloud, a file here).
        result: ``cloudtrain-result.json`` (history, epochs run, the export's check).
        throughput: ``cloudtrain-throughput.json`` (examples/s, for ``cloudtrain cost``).
        history: ``cloudtrain-history.json``, the run's per-epoch history over every attempt
            (``cloudtrain_runtime.history``; ``cloudtrain compare`` reads it). ``""`` in the
            records of runs made before it existed.
    """

    model: str
    backup: str
    tensorboard: str
    logs: str
    result: str
    throughput: str
    history: str = ""

    def for_job(self, job: str) -> Outputs:
        """These outputs with the job's name or ID in place of ``{job}``."""
        return Outputs(**{name: uri.replace(JOB, job) for name, uri in self.to_dict().items()})

    def to_dict(self) -> dict[str, str]:
        """Artifact name -> URI, in the order above (``plan --json`` prints it as ``outputs``)."""
        return asdict(self)

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(field.name for field in fields(cls))

    @classmethod
    def required(cls) -> tuple[str, ...]:
        """The artifacts every record names; the others came later and default to ``""``."""
        return tuple(field.name for field in fields(cls) if field.default is MISSING)


def standard(run: str, *, logs: str) -> Outputs:
    """The layout the runtime writes under one run's prefix (``planning.storage_paths``).

    The result, throughput and history files sit beside the model folder, in its parent,
    which is where the runtime writes them (``cloudtrain_runtime.locations``).
    """
    base = run.rstrip("/")
    return Outputs(
        model=f"{base}/model",
        backup=f"{base}/checkpoints",
        tensorboard=f"{base}/logs",
        logs=logs,
        result=f"{base}/{RESULT_FILE}",
        throughput=f"{base}/{THROUGHPUT_FILE}",
        history=f"{base}/{HISTORY_FILE}",
    )
