"""Run ids: which run of a spec a job is, shared by every attempt of that run.

A run is what users reason about: the first attempt, the provider's own restarts, a
resubmit after a failure (SageMaker's ``-r2`` job, a new Vertex CustomJob), a pipeline
step's retry. Every artifact of a run lives under its own prefix, ``ROOT/runs/<run_id>/``
(``cloudtrain.planning.storage_paths``), so no run overwrites or deletes another's.

A run id is the user's (``--run-id``, ``run_id=``), else given at submit:

- ``derived``: a digest of what the job is (provider, spec, code bundle, image, extra
  environment). Submitting the same spec and code again is the same run, so a retry
  resumes its backups and an identical submit attaches to the job it made.
- ``fresh``: a new id (the time and random digits), for ``--new`` and for providers that
  start a new run on every submit, as a script started twice would (the local provider).

Example:
>>> check_run_id("2026-12-03")
'2026-12-03'
>>> len(fresh())
22
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import time
from typing import TYPE_CHECKING

from cloudtrain.errors import ProviderError, SpecError

if TYPE_CHECKING:
    from cloudtrain.planning import Plan

# A run id fits a Vertex label value, a SageMaker tag value and a path segment as it is.
RUN_ID = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")
DIGEST_CHARS = 12


def check_run_id(run_id: str) -> str:
    """``run_id`` if it is one.

    Raises:
        SpecError: ``run_id`` is not 1-63 lowercase letters, digits, '-' or '_'.
    """
    if not RUN_ID.fullmatch(run_id):
        raise SpecError(
            f"run_id: {run_id[:80]!r} is not a run id. Use 1-63 lowercase letters, digits, '-' or '_', "
            "starting with a letter or digit, e.g. 2026-12-03 or nightly-42."
        )
    return run_id


def fresh() -> str:
    """A run id no earlier submit used: the UTC time, and random digits for two in one second."""
    return f"{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{secrets.token_hex(3)}"


def derived(plan: Plan) -> str:
    """The run id of ``plan`` submitted without one: a digest of what the job is.

    It covers everything the plan is made from (the provider, the spec with its profile
    and environment defaults filled in, the code bundle's content hash, the image and
    the extra environment a bench adds), and nothing that only describes the job (the
    cost estimate), so the same spec and code give the same run, and any change a new one.
    """
    identity = {
        "provider": plan.provider,
        "spec": plan.spec.model_dump(mode="json"),
        "bundle": plan.bundle,
        "image": plan.image,
        "env": dict(plan.env),
    }
    canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:DIGEST_CHARS]


def of_plan(plan: Plan) -> str:
    """The run id a request is rendered for.

    Raises:
        ProviderError: the plan has no run id yet; ``cloudtrain.api.prepare`` names the run.
    """
    if plan.run_id is None:
        raise ProviderError(
            "The plan has no run id, so its artifacts have no place yet. Render it through "
            "cloudtrain.api.prepare (which names the run), or call plan.with_run(RUN_ID) first."
        )
    return plan.run_id
