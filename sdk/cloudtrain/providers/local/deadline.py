"""The deadline watcher: a local run stops once it has run ``limits.max_runtime``, as its provider stops it.

The request says when and how (``deadline``: its seconds, the provider's word for the
end, the reason's code and the request field that sets it). A plain local run takes
``limits.max_runtime`` itself; an emulated cloud reads its own request's field, as
that service would (``Emulable.emulate``): Vertex AI's ``scheduling.timeout``,
SageMaker's ``StoppingCondition.MaxRuntimeInSeconds``, the JobSet's
``activeDeadlineSeconds``. The clock starts when the launcher starts the first attempt
and runs across restarts; once it passes, the launcher stops the replicas as a cancel
does (SIGTERM, ``CANCEL_GRACE_S``, SIGKILL) and records ``failed`` with that word, never
restarting.

Example:
>>> watch = Deadline.of({"deadline": {"seconds": 20, "provider_state": "MAX_RUNTIME_EXCEEDED",
...                      "code": "max_runtime", "rule": "limits.max_runtime"}}, started=100.0)
>>> watch.passed(119.0), watch.passed(120.0)
(False, True)
>>> watch.detail.split(";")[0]
'stopped: limits.max_runtime (20s) reached'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cloudtrain.planning import human_duration
from cloudtrain.provider.failures import Failure, Reason


@dataclass(frozen=True)
class Deadline:
    """When a run must have ended (``started + seconds``, on the monotonic clock) and how it reads then."""

    seconds: int
    provider_state: str
    code: str
    rule: str
    started: float

    @classmethod
    def of(cls, request: dict[str, Any], *, started: float) -> Deadline | None:
        """The request's deadline from ``started``; None for a request without one."""
        found = request.get("deadline")
        if not found:
            return None
        return cls(
            int(found["seconds"]),
            str(found["provider_state"]),
            str(found["code"]),
            str(found["rule"]),
            started,
        )

    def passed(self, now: float) -> bool:
        return now >= self.started + self.seconds

    @property
    def detail(self) -> str:
        """``stopped: limits.max_runtime (20s) reached; ...``: what ``status`` says, with the fix."""
        where = (
            ""
            if self.rule == "limits.max_runtime"
            else f" (the request's {self.rule}, as the provider stops it)"
        )
        return (
            f"stopped: limits.max_runtime ({human_duration(self.seconds)}) reached{where}; "
            "raise limits.max_runtime, or make the job faster."
        )

    @property
    def failure(self) -> Failure:
        """A limit the spec set: fixed by changing it, so not retried (``Reason.CONFIGURATION``)."""
        return Failure(Reason.CONFIGURATION, self.detail, self.code)
