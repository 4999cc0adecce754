"""One module per provider environment the runtime recognises, each an ``Environment`` adapter.

``ENVIRONMENTS`` lists them in the order they are asked, before the neutral adapters
(plain TF_CONFIG, bare machine). SageMaker comes first: it sets no TF_CONFIG, and its
``resourceconfig.json`` says more than any variable. Vertex AI next: its TF_CONFIG is
plain, but ``CLUSTER_SPEC`` or an ``AIP_*`` variable marks its ``/gcs`` mount and paths.
"""

from __future__ import annotations

from cloudtrain_runtime.providers import sagemaker, vertex
from cloudtrain_runtime.replica import Environment

ENVIRONMENTS: tuple[Environment, ...] = (sagemaker.ENVIRONMENT, vertex.ENVIRONMENT)
