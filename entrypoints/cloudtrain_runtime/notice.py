"""Save on the provider's notice: SIGTERM, a step-level backup every replica agrees on, exit 75.

Every provider signals before it takes a machine back, then kills it after a grace period:

==========================  ======================  ==================================================
provider                    grace after SIGTERM     source
==========================  ======================  ==================================================
SageMaker (stop, spot)      120 s                   https://docs.aws.amazon.com/sagemaker/latest/dg/
                                                    your-algorithms-training-algo-running-container.html
                                                    ("SIGTERM ... 120 seconds", ``docker stop -t 120``)
AWS spot (EC2 underneath)   2-minute notice         https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/
                                                    spot-instance-termination-notices.html
Vertex AI / GCE spot        about 30 s              https://cloud.google.com/compute/docs/instances/
                                                    spot#preemption ("Compute Engine sends a preemption
                                                    notice ... 30 seconds")
Kubernetes (JobSet pod)     the pod's               https://kubernetes.io/docs/concepts/workloads/pods/
                            terminationGrace-       pod-lifecycle/#pod-termination (default 30 s)
                            PeriodSeconds
==========================  ======================  ==================================================

SageMaker and Vertex AI fix their grace (``Environment.grace_s``); the JobSet pod and the
local launcher pass theirs as ``CLOUDTRAIN_GRACE_S``; elsewhere the shortest above (30 s)
is assumed. The runtime spends at most ``BUDGET_SHARE`` of it:
the rest is the provider's own margin (flushing logs, a bucket sync). On SIGTERM the
handler only sets a flag (``Notice``). At the next check every replica learns whether
any replica got the notice (``Agreement``: a one-number all-reduce across workers, so all
of them stop after the same step, even when only one host was told; every step, or every
few steps where a step is so short that asking would cost more than 1 % of it:
``checks_every``),
the chief writes a backup of that step (``callbacks.ChiefWritesBackup.save_within_epoch``)
and every replica ends with ``Reclaimed``: exit 75. Where the step never comes (a
notice during start-up, the export, a peer gone) the budget's timer ends the process
with exit 75 all the same, and the run resumes from its last backup.

Step-level backups need Keras 3 on TensorFlow. Keras on JAX and tf_keras fall back to the
last epoch's backup and say so (``STEP_BACKUP_REFUSED``).
"""

from __future__ import annotations

import math
import signal
import threading
import time
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

from cloudtrain_runtime.errors import ConfigError, Reclaimed, exit_reclaimed

GRACE_ENV = "CLOUDTRAIN_GRACE_S"
# The shortest grace of the table above (GCE/Vertex spot, a Kubernetes pod's default).
DEFAULT_GRACE_S = 30.0
# The part of the grace the runtime may use; the provider keeps the rest.
BUDGET_SHARE = 0.8
# Asking whether a notice came may cost this share of a step; waiting for the next time it is
# asked, this share of the budget.
CHECK_SHARE = 0.01
WAIT_SHARE = 0.25
# The calls of a ``fit`` that always ask, timed; after them the replicas settle how often to ask.
CALIBRATE_STEPS = 15
STEP_BACKUP_REFUSED = (
    "a step-level backup needs Keras 3 on TensorFlow; on {keras} this run resumes from its last "
    "epoch's backup"
)


def grace_s(env: Mapping[str, str], fixed: float | None = None) -> float:
    """The provider's grace period, seconds: ``CLOUDTRAIN_GRACE_S``, else the environment's ``fixed`` one, else 30.

    Raises:
        ConfigError: the variable is not a positive number.

    >>> grace_s({}), grace_s({}, fixed=120.0), grace_s({"CLOUDTRAIN_GRACE_S": "90"}, fixed=120.0)
    (30.0, 120.0, 90.0)
    """
    text = env.get(GRACE_ENV, "")
    if not text:
        return DEFAULT_GRACE_S if fixed is None else fixed
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise ConfigError(f"{GRACE_ENV} must be a number of seconds above 0, e.g. 30. Received: {text!r}")
    return value


class Notice:
    """The provider's notice: set by SIGTERM, read at step boundaries.

    ``budget_s`` after the notice the process ends with exit 75 whatever it is doing
    (``_give_up``): a backup that cannot be finished in time is worth less than the
    provider's own margin.
    """

    def __init__(
        self, budget_s: float, say: Callable[[str], None], clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.budget_s, self.say, self.clock = budget_s, say, clock
        self.received_at: float | None = None

    def __repr__(self) -> str:
        return f"Notice(budget_s={self.budget_s}, received={self.received})"

    @property
    def received(self) -> bool:
        return self.received_at is not None

    def install(self) -> None:
        """Handle SIGTERM from now on (the main thread's job: Python runs handlers there)."""
        signal.signal(signal.SIGTERM, self._on_signal)

    def _on_signal(self, signum: int, frame: Any) -> None:
        if self.received:
            return
        self.received_at = self.clock()
        timer = threading.Timer(self.budget_s, self._give_up)
        timer.daemon = True
        timer.start()

    def _give_up(self) -> None:
        self.say(
            f"the provider's notice came {self.budget_s:.0f}s ago and no step-level backup was finished; "
            "exiting so the run resumes from its last backup"
        )
        exit_reclaimed()


class Agreement:
    """Sums a few numbers over the workers, so every replica decides alike.

    Several workers (MultiWorkerMirroredStrategy) sum with one all-reduce, in a graph (an
    eager collective costs far more); in one process (MirroredStrategy, a single device,
    JAX) the numbers are already everyone's (``collective`` false).
    """

    def __init__(self, tf: ModuleType | None, strategy: Any, workers: int) -> None:
        self.collective = tf is not None and workers > 1
        self._total: Callable[[list[float]], list[float]] = list
        if tf is not None and self.collective:
            # No AutoGraph: it has nothing to convert here, and its generated source files
            # outlive a replica that exits at once (os._exit, SIGKILL) in the temp folder.
            summed = tf.function(
                lambda values: strategy.reduce(
                    tf.distribute.ReduceOp.SUM, strategy.run(tf.identity, args=(values,)), axis=None
                ),
                autograph=False,
            )
            self._total = lambda values: [float(v) for v in summed(tf.constant(values)).numpy()]

    def __repr__(self) -> str:
        return f"Agreement(collective={self.collective})"

    def sum(self, values: list[float]) -> list[float]:
        """Each of ``values`` summed over the workers."""
        return self._total(values)


def checks_every(step_s: float, agree_s: float, budget_s: float) -> int:
    """How many steps apart the replicas ask whether a notice came, so that asking costs ~1 % of a step.

    Never so far apart that waiting for the next check would take a quarter of the budget.

    >>> checks_every(step_s=0.008, agree_s=0.0015, budget_s=24)  # a tiny model on CPU
    19
    >>> checks_every(step_s=0.5, agree_s=0.0015, budget_s=24)  # a real one: every step
    1
    >>> checks_every(step_s=2.0, agree_s=0.5, budget_s=24)  # a slow all-reduce, capped by the budget
    3
    """
    wanted = math.ceil(agree_s / (CHECK_SHARE * max(step_s, 1e-6)))
    reachable = max(1, math.floor(budget_s * WAIT_SHARE / max(step_s, 1e-6)))
    return max(1, min(wanted, reachable))


class SaveOnNotice:
    """At the first step boundary after a notice every replica agrees on: back up that step, then exit 75.

    ``save(batches)`` writes the backup ``batches`` batches into the current epoch (None:
    this Keras cannot, and the run resumes from its last epoch's backup).

    Across workers the check is an all-reduce: over the first ``CALIBRATE_STEPS`` calls
    every call checks and is timed, then the workers agree on the mean step and check
    times and from there check every ``checks_every`` calls, the same calls on every
    worker (counted from this ``fit``'s start), so the collective never waits for a
    worker that skipped it.
    """

    def __init__(
        self,
        notice: Notice,
        agreement: Agreement,
        save: Callable[[int], None] | None,
        say: Callable[[str], None],
        keras: str,
    ) -> None:
        super().__init__()
        self.notice, self.agreement, self.save, self.say, self.keras = notice, agreement, save, say, keras
        self.epoch = 0
        self.calls = 0
        self.every = 1
        self._timed: list[
            float
        ] = []  # the clock at each call's end, and the checks' seconds, while calibrating
        self._checks_s = 0.0

    def on_epoch_begin(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        self.epoch = epoch

    def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        self.calls += 1
        if self.calls % self.every or not self._agreed():
            return
        batches = batch + 1  # ``batch`` is the last step of the execution, counted from 0
        if self.save is None:
            self.say(f"the provider's notice came: {STEP_BACKUP_REFUSED.format(keras=self.keras)}")
            raise Reclaimed(
                f"reclaimed by the provider at epoch {self.epoch + 1}; resuming from the last epoch"
            )
        started = self.notice.clock()
        self.save(batches)
        self.say(
            f"backup on notice after epoch {self.epoch} and {batches} batches written in "
            f"{self.notice.clock() - started:.2f}s (budget {self.notice.budget_s:.0f}s)"
        )
        raise Reclaimed(
            f"reclaimed by the provider; the run resumes at epoch {self.epoch + 1}, batch {batches + 1}"
        )

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        """Every epoch's end is a check too: however far apart the step checks, a notice waits an epoch at most.

        The epoch's own backup is on disk by now (the backup callback comes first), so that
        is the step the run resumes from.
        """
        if not self._anyone_noticed():
            return
        self.say(
            f"backup on notice: epoch {epoch + 1}'s own, written at its end (budget {self.notice.budget_s:.0f}s)"
        )
        raise Reclaimed(f"reclaimed by the provider; the run resumes at epoch {epoch + 2}")

    def _anyone_noticed(self) -> bool:
        """Whether any replica got the notice: every replica asks at the same call."""
        if not self.agreement.collective:
            return self.notice.received
        return self.agreement.sum([1.0 if self.notice.received else 0.0])[0] > 0

    def _agreed(self) -> bool:
        """``_anyone_noticed`` at a step; times the first checks, then settles how often to check."""
        if not self.agreement.collective:
            return self.notice.received
        started = self.notice.clock()
        agreed = self._anyone_noticed()
        if self.calls <= CALIBRATE_STEPS:
            self._checks_s += self.notice.clock() - started
            self._timed.append(self.notice.clock())
            if self.calls == CALIBRATE_STEPS:
                self._calibrate()
        return agreed

    def _calibrate(self) -> None:
        timed = CALIBRATE_STEPS - 1
        step_s = (self._timed[-1] - self._timed[0]) / timed - self._checks_s / CALIBRATE_STEPS
        step_sum, check_sum, workers = self.agreement.sum([step_s, self._checks_s / CALIBRATE_STEPS, 1.0])
        self.every = checks_every(step_sum / workers, check_sum / workers, self.notice.budget_s)
