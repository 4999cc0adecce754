"""MLflow tracking from the submitting side: one MLflow run per cloudtrain run, and reading runs back.

``submitting`` finds or makes a run's MLflow run before each attempt and hands its id to
the replicas; the chief logs into it (``cloudtrain_runtime.tracking``). ``reading`` turns
MLflow runs back into the results ``cloudtrain compare`` and ``history`` print. ``mlflow``
is imported inside these functions only, so a command that tracks nothing never loads it.
"""
