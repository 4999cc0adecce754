"""The pods a rendered JobSet becomes, and the environment each one's container sees.

What the JobSet and Job controllers add, from the same sources ``render`` cites:

- the JobSet controller creates ``replicas`` Jobs per replicatedJob, named
  ``<jobset>-<replicatedJob>-<jobIndex>`` (pkg/util/placement/placement.go:14-16), and
  annotates each pod with the JobSet's name, the replicatedJob's name and replica count,
  and the Job's index (pkg/controllers/jobset_controller.go:1014-1070);
- the Job controller gives each pod of an Indexed Job its completion index, as the
  annotation ``batch.kubernetes.io/job-completion-index`` and the variable
  ``JOB_COMPLETION_INDEX`` (kubernetes pkg/controller/job/indexed_job_utils.go), and the
  host name ``<job>-<index>`` (``V1JobSpec.completion_mode``);
- the kubelet resolves the container's ``env``: ``valueFrom.fieldRef`` from the pod's
  annotations (the downward API), ``$$`` in a value to ``$`` (``V1EnvVar.value``).

The local emulation of Kubernetes starts one process per pod with this environment;
the tests hand it to the runtime's JobSet environment.

Example:
>>> request = {"metadata": {"name": "demo-0123456789"}, "spec": {"replicatedJobs": [{"name": "host",
...     "replicas": 1, "template": {"spec": {"completions": 2, "template": {"spec": {"containers": [
...     {"name": "trainer", "env": [{"name": "JOBSET_NAME", "valueFrom": {"fieldRef":
...     {"fieldPath": "metadata.annotations['jobset.sigs.k8s.io/jobset-name']"}}}]}]}}}}}]}}
>>> [(pod.hostname, pod.env["JOB_COMPLETION_INDEX"], pod.env["JOBSET_NAME"]) for pod in pods(request)]
[('demo-0123456789-host-0-0', '0', 'demo-0123456789'), ('demo-0123456789-host-0-1', '1', 'demo-0123456789')]
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from cloudtrain.errors import ProviderError
from cloudtrain.providers.kubernetes.render import (
    JOB_INDEX_KEY,
    JOBSET_NAME_KEY,
    REPLICATED_JOB_NAME_KEY,
    REPLICATED_JOB_REPLICAS_KEY,
)

COMPLETION_INDEX_KEY = "batch.kubernetes.io/job-completion-index"
COMPLETION_INDEX_ENV = "JOB_COMPLETION_INDEX"
_ANNOTATION_FIELD = re.compile(r"metadata\.annotations\['([^']+)'\]")


@dataclass(frozen=True)
class Pod:
    """One pod of the JobSet: its host name, subdomain and its first container's environment."""

    hostname: str
    subdomain: str
    annotations: Mapping[str, str]
    env: Mapping[str, str]


def pods(request: dict[str, Any]) -> list[Pod]:
    """Every pod the JobSet ``request`` starts, in job then completion-index order."""
    return list(_pods(request))


def _pods(request: dict[str, Any]) -> Iterator[Pod]:
    name = request["metadata"]["name"]
    for replicated in request["spec"]["replicatedJobs"]:
        job_spec = replicated["template"]["spec"]
        replicas = replicated.get("replicas", 1)
        for job_index in range(replicas):
            for index in range(job_spec.get("completions", 1)):
                annotations = {
                    JOBSET_NAME_KEY: name,
                    REPLICATED_JOB_NAME_KEY: replicated["name"],
                    REPLICATED_JOB_REPLICAS_KEY: str(replicas),
                    JOB_INDEX_KEY: str(job_index),
                    COMPLETION_INDEX_KEY: str(index),
                }
                container = job_spec["template"]["spec"]["containers"][0]
                yield Pod(
                    hostname=f"{name}-{replicated['name']}-{job_index}-{index}",
                    subdomain=name,
                    annotations=annotations,
                    env={**container_env(container, annotations), COMPLETION_INDEX_ENV: str(index)},
                )


def container_env(container: dict[str, Any], annotations: Mapping[str, str]) -> dict[str, str]:
    """The container's variables as the kubelet sets them, annotations read through the downward API.

    Raises:
        ProviderError: a ``valueFrom`` this emulation does not resolve (only pod annotations).
    """
    env: dict[str, str] = {}
    for variable in container.get("env", []):
        if "value" in variable:
            env[variable["name"]] = variable["value"].replace("$$", "$")
            continue
        path = variable.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath", "")
        match = _ANNOTATION_FIELD.fullmatch(path)
        if match is None:
            raise ProviderError(f"env {variable['name']}: only pod annotations are emulated, not {path!r}.")
        env[variable["name"]] = annotations.get(match.group(1), "")
    return env
