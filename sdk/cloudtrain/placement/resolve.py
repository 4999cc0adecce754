"""Each placement candidate as a spec and a plan of its own, with the spec's batch and learning rate.

A candidate is the spec on another provider, region or shape. What the job computes must
not change with where it runs: the candidate's replicas split the spec's global batch
(``training.global_batch``; a candidate whose replicas cannot split it evenly is refused,
naming it), and its learning rate is the one the spec's own plan scales to, held as it is
(``scaling: none``), with the same warm-up.

Example:
>>> from cloudtrain.spec import JobSpec
>>> spec = JobSpec(name="demo", code={"module": "trainer.task"}, resources={"per_host": 4},
...                training={"per_replica_batch": 16},
...                placement=[{"provider": "local"}, {"provider": "local", "per_host": 2}])
>>> [(r.plan.replicas, r.plan.per_replica_batch, r.plan.global_batch) for r in resolve(spec)]
[(4, 16, 64), (2, 32, 64)]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cloudtrain import installed, planning
from cloudtrain.candidates import Candidate
from cloudtrain.errors import SpecError
from cloudtrain.provider import registry
from cloudtrain.spec import JobSpec

if TYPE_CHECKING:
    from cloudtrain.planning import Plan


@dataclass(frozen=True)
class Resolved:
    """A candidate, ready to try: its place in the list, its spec and its plan."""

    index: int
    candidate: Candidate
    spec: JobSpec
    plan: Plan

    @property
    def label(self) -> str:
        """``vertex us-central1 (1 × a2-highgpu-8g)``: where and on what."""
        return f"{self.plan.provider} {self.plan.region} ({self.plan.hosts} × {self.shape})"

    @property
    def shape(self) -> str:
        machine = self.plan.machine
        return machine.machine_type if machine is not None else f"{self.plan.devices_per_host} device(s)"

    @property
    def where(self) -> str:
        """``placement.candidates[1]``: how messages name it."""
        return f"placement.candidates[{self.index}]"


def resolve(spec: JobSpec) -> list[Resolved]:
    """Every candidate of ``spec``'s placement, planned; the spec alone if it has none.

    Raises:
        SpecError: one problem per candidate that cannot run the job, each naming it
            (``placement.candidates[1] (sagemaker us-east-1): ...``).
    """
    reference = registry.get(spec.provider).plan(spec)
    if spec.placement is None:
        return [Resolved(0, as_candidate(spec), spec, reference)]
    resolved: list[Resolved] = []
    problems: list[str] = []
    for index, candidate in enumerate(spec.placement.candidates):
        try:
            resolved.append(resolve_one(spec, index, candidate, reference))
        except SpecError as refused:
            problems += [
                f"placement.candidates[{index}] ({candidate.label()}): {p}" for p in refused.problems
            ]
    if problems:
        raise SpecError(problems)
    return resolved


def resolve_one(spec: JobSpec, index: int, candidate: Candidate, reference: Plan) -> Resolved:
    """Candidate ``index`` of ``spec`` as a spec and plan, holding ``reference``'s batch and learning rate.

    Raises:
        SpecError: the candidate's spec is invalid, or its provider cannot run it.
    """
    provider = registry.get(candidate.provider)
    candidate_spec = JobSpec.model_validate(_overridden(spec, candidate, reference))
    return Resolved(index, candidate, candidate_spec, planning.plan(candidate_spec, provider))


def _overridden(spec: JobSpec, candidate: Candidate, reference: Plan) -> dict[str, Any]:
    """``spec``'s fields with the candidate's provider, region, shape and storage, and the reference's batch."""
    data = spec.model_dump(exclude_unset=True, exclude={"placement"})
    data["provider"] = candidate.provider
    data["resources"] = {**data.get("resources", {}), **candidate.shape()}
    data["training"] = _held(data.get("training", {}), reference)
    section = {key: value for key, value in _section(candidate).items() if value is not None}
    if section:
        data[candidate.provider] = {**data.get(candidate.provider, {}), **section}
    return data


def _section(candidate: Candidate) -> dict[str, Any]:
    """What the candidate sets in its provider's section: the region and the storage root.

    Raises:
        SpecError: the candidate names a region on a provider whose section has none.
    """
    fields = _section_fields(candidate.provider)
    if candidate.region is not None and "region" not in fields:
        raise SpecError(
            f"region: {candidate.provider} runs in no region cloudtrain can choose; remove the candidate's region."
        )
    if candidate.storage_root is not None and "storage_root" not in fields:
        raise SpecError(f"storage_root: {candidate.provider} keeps no storage root of its own; remove it.")
    return {"region": candidate.region, "storage_root": candidate.storage_root}


def _section_fields(provider: str) -> tuple[str, ...]:
    section = installed.sections().get(provider)
    return tuple(section.model_fields) if section is not None else ()


def _held(training: dict[str, Any], reference: Plan) -> dict[str, Any]:
    """The training fields with the reference plan's global batch and scaled learning rate, held."""
    rate = dict(training.get("learning_rate", {}))
    rate.update(base=reference.learning_rate, scaling="none")
    held = {key: value for key, value in training.items() if key != "per_replica_batch"}
    return {**held, "global_batch": reference.global_batch, "learning_rate": rate}


def as_candidate(spec: JobSpec) -> Candidate:
    """The spec's own provider, as the one candidate of a spec without placement."""
    return Candidate(provider=spec.provider)
