"""One module per provider environment the runtime knows without any package metadata.

Each defines an ``Environment`` (``cloudtrain_runtime.replica``) as ``ENVIRONMENT``.
``BUILTIN`` lists them in the order they are asked, before the environments of
installed packages and the neutral ones (``cloudtrain_runtime.environments``). SageMaker
comes first: it sets no TF_CONFIG, and its ``resourceconfig.json`` says more than any
variable. Vertex AI next: its TF_CONFIG is plain, but ``CLUSTER_SPEC`` or an ``AIP_*``
variable marks its ``/gcs`` mount and paths. Then a Kubernetes JobSet's pod, recognised by
the JobSet's name and the pod's completion index.
"""

from __future__ import annotations

from cloudtrain_runtime.providers import jobset, sagemaker, vertex
from cloudtrain_runtime.replica import Environment

BUILTIN: tuple[Environment, ...] = (sagemaker.ENVIRONMENT, vertex.ENVIRONMENT, jobset.ENVIRONMENT)
