"""How a local run's end reads in the shared words (``cloudtrain.provider.failures``).

A replica is a process here, and how it ended says why: a replica killed by a signal
lost its host (or, under a ``spot@`` fault, was reclaimed) and the run resumes from its
backup; under a ``stop@`` fault the whole region was lost, a capacity failure that only
a resume elsewhere recovers from; one that exits 2 met a configuration the runtime cannot run
(``cloudtrain_runtime.errors.ConfigError`` and ``ClusterError``); one that exits 75 got the
provider's notice and backed its step up (``RECLAIMED_EXIT``), a reclaim like a lost host;
any other non-zero exit is the training code's. The same words go into ``status.json`` so every reader of the
run sees them.

Example:
>>> exit_failure(2, "Replica chief-0 failed (exit 2).").reason
<Reason.CONFIGURATION: 'configuration'>
>>> from_record(to_record(exit_failure(-9, "Replica worker-0 died (killed by SIGKILL)."))).code
'killed by SIGKILL'
"""

from __future__ import annotations

import signal
from typing import Any

from cloudtrain.provider.failures import RECLAIMED_EXIT, Failure, Reason

# The runtime's exit code for a configuration it cannot run (cloudtrain_runtime.errors).
CONFIGURATION_EXIT = 2


def exit_failure(rc: int, detail: str) -> Failure:
    """The failure of a replica that ended with return code ``rc`` (negative: killed by that signal)."""
    if rc < 0:
        return Failure(Reason.PREEMPTED, detail, f"killed by {signal.Signals(-rc).name}")
    if rc == RECLAIMED_EXIT:
        return Failure(Reason.PREEMPTED, detail, f"exit {rc}")
    reason = Reason.CONFIGURATION if rc == CONFIGURATION_EXIT else Reason.USER_CODE
    return Failure(reason, detail, f"exit {rc}")


def lost_region(detail: str) -> Failure:
    """The failure of a run whose every replica was lost with its region (``--fault stop@``): move elsewhere."""
    return Failure(Reason.CAPACITY, detail, "REGION_LOST")


def launcher_failure(detail: str) -> Failure:
    """The failure of a run whose launcher itself failed: cloudtrain's, not the job's."""
    return Failure(Reason.INTERNAL, detail, "LAUNCHER_ERROR")


def to_record(failure: Failure) -> dict[str, str]:
    """``failure`` as ``status.json`` keeps it."""
    return {"reason": str(failure.reason), "message": failure.message, "code": failure.code}


def from_record(data: Any) -> Failure | None:
    """The failure ``to_record`` wrote; None for a record without one (or one this version cannot read)."""
    if not isinstance(data, dict) or data.get("reason") not in set(Reason):
        return None
    return Failure(Reason(data["reason"]), str(data.get("message", "")), str(data.get("code", "")))
