"""cloudtrain: one job spec to distributed TensorFlow/Keras training on Vertex AI, SageMaker or this machine.

Example:
>>> import cloudtrain
>>> spec = cloudtrain.JobSpec(name="demo", code={"module": "trainer.task"})
>>> cloudtrain.plan(spec, "local").replicas
1
"""

from cloudtrain.api import attach, render, submit
from cloudtrain.errors import (
    BudgetError,
    CloudtrainError,
    CredentialsError,
    ProviderError,
    SpecError,
)
from cloudtrain.plan import Plan, plan
from cloudtrain.spec import JobSpec
from cloudtrain.specfile import load_spec

__version__ = "0.1.0"

__all__ = [
    "BudgetError",
    "CloudtrainError",
    "CredentialsError",
    "JobSpec",
    "Plan",
    "ProviderError",
    "SpecError",
    "attach",
    "load_spec",
    "plan",
    "render",
    "submit",
]
