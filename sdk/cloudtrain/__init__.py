"""cloudtrain: one job spec to distributed TensorFlow/Keras training on Vertex AI, SageMaker or this machine.

The public API is loaded on first use (PEP 562), so ``import cloudtrain`` and the
``cloudtrain`` command start in milliseconds and pay for pydantic only when a spec is read.

Example:
>>> import cloudtrain
>>> spec = cloudtrain.JobSpec(name="demo", code={"module": "trainer.task"})
>>> cloudtrain.plan(spec, "local").replicas
1
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS = {
    "BudgetError": "cloudtrain.errors",
    "CloudtrainError": "cloudtrain.errors",
    "CostOption": "cloudtrain.cost",
    "CredentialsError": "cloudtrain.errors",
    "Job": "cloudtrain.provider.jobs",
    "JobSpec": "cloudtrain.spec",
    "JobStatus": "cloudtrain.provider.jobs",
    "JobSummary": "cloudtrain.provider.jobs",
    "MissingDependencyError": "cloudtrain.errors",
    "Outputs": "cloudtrain.outputs",
    "Plan": "cloudtrain.planning",
    "Progress": "cloudtrain.progress",
    "ProviderError": "cloudtrain.errors",
    "SpecError": "cloudtrain.errors",
    "TrainingProgress": "cloudtrain.run_progress",
    "attach": "cloudtrain.api",
    "compare": "cloudtrain.scaling",
    "estimate": "cloudtrain.api",
    "list_jobs": "cloudtrain.api",
    "load_spec": "cloudtrain.specfile",
    "plan": "cloudtrain.api",
    "render": "cloudtrain.api",
    "stage": "cloudtrain.api",
    "Submission": "cloudtrain.api",
    "submit": "cloudtrain.api",
    "training_progress": "cloudtrain.api",
    "validate": "cloudtrain.api",
    "wait_to_start": "cloudtrain.provider.pending",
    "with_defaults": "cloudtrain.specfile",
}

__all__ = [
    "BudgetError",
    "CloudtrainError",
    "CostOption",
    "CredentialsError",
    "Job",
    "JobSpec",
    "JobStatus",
    "JobSummary",
    "MissingDependencyError",
    "Outputs",
    "Plan",
    "Progress",
    "ProviderError",
    "SpecError",
    "Submission",
    "TrainingProgress",
    "attach",
    "compare",
    "estimate",
    "list_jobs",
    "load_spec",
    "plan",
    "render",
    "stage",
    "submit",
    "training_progress",
    "validate",
    "wait_to_start",
    "with_defaults",
]

if TYPE_CHECKING:
    from cloudtrain.api import (
        Submission,
        attach,
        estimate,
        list_jobs,
        plan,
        render,
        stage,
        submit,
        training_progress,
        validate,
    )
    from cloudtrain.cost import CostOption
    from cloudtrain.errors import (
        BudgetError,
        CloudtrainError,
        CredentialsError,
        MissingDependencyError,
        ProviderError,
        SpecError,
    )
    from cloudtrain.outputs import Outputs
    from cloudtrain.planning import Plan
    from cloudtrain.progress import Progress
    from cloudtrain.provider.jobs import Job, JobStatus, JobSummary
    from cloudtrain.provider.pending import wait_to_start
    from cloudtrain.run_progress import TrainingProgress
    from cloudtrain.scaling import compare
    from cloudtrain.spec import JobSpec
    from cloudtrain.specfile import load_spec, with_defaults


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'cloudtrain' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
