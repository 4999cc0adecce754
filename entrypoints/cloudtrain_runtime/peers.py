"""Name the replica that died when a collective fails because a peer is gone.

When a peer dies, the survivors' next collective fails with a TensorFlow error whose
deepest frame is in a thread pool (``multiprocessing/pool.py``), far from any cause.
TensorFlow names the unhealthy task in the message (``/job:worker/replica:0/task:1``);
this turns it into one line naming the replica.

Example:
>>> from pathlib import Path
>>> info = ClusterInfo("tf_config", "worker", 0, 0, True, ("a:1", "b:2"), Path("/"))
>>> text = "Collective ops is aborted by: ... unhealthy (stopped sending heartbeats):\\n/job:worker/replica:0/task:1"
>>> str(lost_peer(RuntimeError(text), info, "model.fit()"))[:48]
'replica 1 (worker_1) died during model.fit(): it'
"""

from __future__ import annotations

import re

from cloudtrain_runtime.errors import PeerLost
from cloudtrain_runtime.replica import ClusterInfo

# Phrases of TensorFlow's coordination service and collective ops when a task is gone.
_SIGNS = ("stopped sending heartbeats", "Collective ops is aborted", "unhealthy", "Socket closed")
_TASK = re.compile(r"/job:(chief|master|worker)(?:/replica:\d+)?/task:(\d+)")


def lost_peer(err: BaseException, cluster: ClusterInfo, doing: str) -> PeerLost | None:
    """A ``PeerLost`` naming the dead replica when ``err`` says a peer is gone, else None."""
    text = str(err)
    if cluster.num_hosts < 2 or not any(sign in text for sign in _SIGNS):
        return None
    after = text.split("unhealthy", 1)[-1]
    tasks = [(kind, int(index)) for kind, index in _TASK.findall(after)]
    others = [task for task in tasks if task != (cluster.task_type, cluster.task_index)]
    who = _replica(cluster, *others[0]) if others else "a peer replica"
    return PeerLost(
        f"{who} died during {doing}: it stopped answering ({type(err).__name__}). "
        "Its own log and exit status say why; a restart resumes from the last backup."
    )


def _replica(cluster: ClusterInfo, kind: str, index: int) -> str:
    """``replica 2 (worker_1)``: ranks put the chief first, then the workers."""
    if kind in ("chief", "master"):
        return f"replica 0 ({kind}_{index})"
    # This replica's own rank and index tell whether a chief pool comes before the workers.
    offset = 1 if cluster.task_type in ("chief", "master") else cluster.rank - cluster.task_index
    return f"replica {index + offset} ({kind}_{index})"
