"""What doctor finds and what it holds a machine to: ``Check``, ``Expectation``, the report.

Each check of ``cloudtrain-runtime doctor`` is one ``Check``: ``ok``, ``warn`` or
``fail``, with the fix when it is not ok; the exit status is 1 when any check fails.
A check that could not run because an earlier one failed (``cloudtrain check``'s bucket
without credentials) is listed as ``skip``, with why, rather than left out.
``cloudtrain doctor`` reads the JSON report back with ``from_rows``, so both sides share
these few lines and no framework is imported here.

Example:
>>> checks = [Check("python", OK, "3.12.3"), Check("replicas", FAIL, "1 replica", "Set CLOUDTRAIN_CPU_DEVICES=2.")]
>>> exit_code(checks)
1
>>> print(render_text(checks))
ok    python    3.12.3
fail  replicas  1 replica
                fix: Set CLOUDTRAIN_CPU_DEVICES=2.
1 failed, 0 warnings, 1 ok
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from cloudtrain_runtime.config import RuntimeConfig
from cloudtrain_runtime.replica import ClusterInfo

OK, WARN, FAIL, SKIP = "ok", "warn", "fail", "skip"
STATUSES = (OK, WARN, FAIL, SKIP)
# The report's order: the plan and the environment, versions, devices, then the run.
ORDER = (
    "config",
    "environment",
    "hosts",
    "peers",
    "python",
    "tensorflow",
    "keras",
    "jax",
    "cuda",
    "nccl",
    "nvidia-smi",
    "tf-devices",
    "jax-devices",
    "gpus",
    "plan-devices",
    "strategy",
    "replicas",
    "plan-devices",
    "smoke-step",
    "all-reduce",
)


@dataclass(frozen=True)
class Check:
    """One line of the report: what was checked, how it went, and the fix when it is not ok.

    Attributes:
        check: a short name, e.g. ``replicas``.
        status: ``ok``, ``warn``, ``fail``, or ``skip`` (not run; ``detail`` says why).
        detail: what was found.
        fix: what to do about it; None when the check is ok.
    """

    check: str
    status: str
    detail: str
    fix: str | None = None

    def to_dict(self) -> dict[str, str | None]:
        """The JSON row ``--json`` prints: ``{check, status, detail, fix}``."""
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Expectation:
    """What the checks hold this machine to.

    Attributes:
        config: the plan's runtime configuration, or ``cloudtrain_runtime.doctor.NO_PLAN``'s.
        planned: whether ``config`` came from a plan: then the replicas must be its count,
            else at least 2.
        stand_in: whether this one process stands in for all the plan's hosts, as when
            ``cloudtrain doctor JOB`` checks a multi-host plan on a bare machine.
    """

    config: RuntimeConfig
    planned: bool
    stand_in: bool = False

    def hosts(self, cluster: ClusterInfo) -> int:
        """The hosts the checks speak for: the plan's when standing in for them, else the environment's."""
        return self.config.hosts if self.stand_in else cluster.num_hosts


def skipped(names: Iterable[str], why: str) -> list[Check]:
    """A ``skip`` line for each check that ``why`` kept from running.

    Example:
    >>> skipped(["bucket"], "no credentials")
    [Check(check='bucket', status='skip', detail='not checked: no credentials', fix=None)]
    """
    return [Check(name, SKIP, f"not checked: {why}") for name in names]


def exit_code(checks: Iterable[Check]) -> int:
    """1 when any check failed, else 0: warnings alone never stop a run."""
    return 1 if any(check.status == FAIL for check in checks) else 0


def summary(checks: Sequence[Check]) -> str:
    """``1 failed, 0 warnings, 12 ok``: the last line of the text report, and ``, 3 skipped`` if any were."""
    counts = Counter(check.status for check in checks)
    warnings = "warning" if counts[WARN] == 1 else "warnings"
    line = f"{counts[FAIL]} failed, {counts[WARN]} {warnings}, {counts[OK]} ok"
    return f"{line}, {counts[SKIP]} skipped" if counts[SKIP] else line


def render_text(checks: Sequence[Check]) -> str:
    """One aligned line per check, the fix under it, then the summary."""
    width = max((len(check.check) for check in checks), default=0)
    lines = []
    for check in checks:
        lines.append(f"{check.status:<4}  {check.check:<{width}}  {check.detail}")
        if check.fix:
            lines.append(f"{'':<4}  {'':<{width}}  fix: {check.fix}")
    return "\n".join([*lines, summary(checks)])


def render_json(checks: Sequence[Check]) -> str:
    """The checks as a JSON list of ``{check, status, detail, fix}``."""
    return json.dumps([check.to_dict() for check in checks], indent=2)


def from_rows(rows: Any) -> list[Check]:
    """Checks back from ``render_json``'s list (what ``cloudtrain doctor`` reads from this process).

    Raises:
        ValueError: unless ``rows`` is a list of ``{check, status, detail, fix}`` objects
            with a known status.
    """
    if not isinstance(rows, list) or not all(map(_is_row, rows)):
        raise ValueError(
            f"expected a list of objects with the string keys {[f.name for f in dataclasses.fields(Check)]}"
        )
    checks = [Check(**row) for row in rows]
    unknown = sorted({check.status for check in checks} - set(STATUSES))
    if unknown:
        raise ValueError(f"unknown statuses {unknown}; expected {list(STATUSES)}")
    return checks


def _is_row(row: Any) -> bool:
    """A ``{check, status, detail, fix}`` object of strings; ``fix`` may be null."""
    fields = [field.name for field in dataclasses.fields(Check)]
    return (
        isinstance(row, dict)
        and sorted(row) == sorted(fields)
        and all(isinstance(row[name], str) for name in ("check", "status", "detail"))
        and (row["fix"] is None or isinstance(row["fix"], str))
    )


def first_line(err: BaseException) -> str:
    """``TypeName: first line of the message``, at most 300 characters: TensorFlow's messages run long."""
    line = (str(err).strip().splitlines() or [""])[0]
    return f"{type(err).__name__}: {line[:300]}"
