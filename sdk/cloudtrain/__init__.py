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
    "JobSpec": "cloudtrain.spec",
    "MissingDependencyError": "cloudtrain.errors",
    "Plan": "cloudtrain.planning",
    "ProviderError": "cloudtrain.errors",
    "SpecError": "cloudtrain.errors",
    "attach": "cloudtrain.api",
    "estimate": "cloudtrain.cost",
    "load_spec": "cloudtrain.specfile",
    "plan": "cloudtrain.planning",
    "render": "cloudtrain.api",
    "submit": "cloudtrain.api",
}

__all__ = [
    "BudgetError",
    "CloudtrainError",
    "CostOption",
    "CredentialsError",
    "JobSpec",
    "MissingDependencyError",
    "Plan",
    "ProviderError",
    "SpecError",
    "attach",
    "estimate",
    "load_spec",
    "plan",
    "render",
    "submit",
]

if TYPE_CHECKING:
    from cloudtrain.api import attach, render, submit
    from cloudtrain.cost import CostOption, estimate
    from cloudtrain.errors import (
        BudgetError,
        CloudtrainError,
        CredentialsError,
        MissingDependencyError,
        ProviderError,
        SpecError,
    )
    from cloudtrain.planning import Plan, plan
    from cloudtrain.spec import JobSpec
    from cloudtrain.specfile import load_spec


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'cloudtrain' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
