"""The candidates of a spec's placement, in the order they are tried, as ``plan`` and ``cost`` show them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from cloudtrain.cli import tables

if TYPE_CHECKING:
    from cloudtrain.placement.resolve import Resolved
    from cloudtrain.spec import JobSpec

COLUMNS = (
    tables.Column("#"),
    tables.Column("provider"),
    tables.Column("region"),
    tables.Column("shape"),
    tables.Column("replicas × batch"),
    tables.Column("worst case", justify="right"),
)


def ordered(spec: JobSpec) -> list[Resolved]:
    """The candidates in the order a submit tries them."""
    from cloudtrain import api
    from cloudtrain.placement.resolve import resolve

    return api.in_order(spec, resolve(spec))


def rows(candidates: list[Resolved]) -> list[dict[str, Any]]:
    """Each candidate as JSON-ready facts: where, on what, its batch, and its worst-case cost."""
    return [
        {
            "candidate": c.index,
            "provider": c.plan.provider,
            "region": c.plan.region,
            "shape": f"{c.plan.hosts} × {c.shape}",
            "replicas": c.plan.replicas,
            "per_replica_batch": c.plan.per_replica_batch,
            "global_batch": c.plan.global_batch,
            "worst_case_usd": _worst_case(c),
        }
        for c in candidates
    ]


def echo(spec: JobSpec) -> None:
    """Print the candidates table, and how each quota is checked."""
    found = rows(ordered(spec))
    assert spec.placement is not None  # only a spec with placement: has candidates
    click.echo(
        f"placement ({spec.placement.order}): tried in this order, the first that takes the run trains it"
    )
    tables.echo(
        COLUMNS,
        [
            [
                str(row["candidate"]),
                row["provider"],
                row["region"],
                row["shape"],
                f"{row['replicas']} × {row['per_replica_batch']} = {row['global_batch']}",
                "free" if row["worst_case_usd"] == 0 else _usd(row["worst_case_usd"]),
            ]
            for row in found
        ],
    )
    click.echo(
        "worst case: every host for all of limits.max_runtime. Quotas: cloudtrain quotas JOB "
        "(a candidate short of quota is skipped at submit)."
    )


def _worst_case(candidate: Resolved) -> float | None:
    if not candidate.plan.target.billed:
        return 0.0
    from cloudtrain.cost import budget

    return budget.worst_case(candidate.plan).usd


def _usd(value: float | None) -> str:
    return "price unknown" if value is None else f"${value:,.2f}"
