"""Vertex AI custom training: a Plan becomes a CustomJob, submitted with google-cloud-aiplatform.

The provider object is ``backend.provider``. The rooms: ``checks`` (what Vertex refuses), ``render`` (the CustomJob body, pure),
``outputs`` (where the job's artifacts land), ``clients`` (building the Google clients, retries and error translation), ``job``
(submit, attach, owns, and the job's status, cancel and wait), ``names`` (job IDs and
states), ``listing`` (cloudtrain's jobs, their times and usage), ``logs`` (Cloud
Logging), ``upload`` (the code bundle to Cloud Storage, once), ``emulate`` (the replicas
Vertex would start, run by the local provider).
"""

from __future__ import annotations

from typing import Any

from cloudtrain import lazy

# public name -> the module that defines it, imported on first use: importing one room
# (``vertex.settings``, read whenever a spec is built) loads no other.
_EXPORTS = {
    "Vertex": "cloudtrain.providers.vertex.backend",
    "VertexClients": "cloudtrain.providers.vertex.clients",
    "VertexJob": "cloudtrain.providers.vertex.job",
    "attach": "cloudtrain.providers.vertex.job",
    "fuse_path": "cloudtrain.providers.vertex.render",
    "owns": "cloudtrain.providers.vertex.job",
    "provider": "cloudtrain.providers.vertex.backend",
    "request_hash": "cloudtrain.providers.vertex.render",
    "submit": "cloudtrain.providers.vertex.job",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    return lazy.attribute(__name__, _EXPORTS, name)
