r"""A metric read off the runtime's epoch lines, ``epoch N/M name=value ...``, as a log scanner reads it.

The runtime's chief prints one such line per epoch (``cloudtrain_runtime.callbacks.Progress``).
A service that charts or tunes on metrics from the logs (SageMaker's MetricDefinitions)
gets ``metric_regex``; the local search reads trials' logs with the same expression.
``(?<![\w.])`` keeps ``loss`` from matching inside ``val_loss``.

Example:
>>> epoch_value("[chief-0] epoch 2/3 loss=0.2500 val_loss=0.3000", "loss")
(2, 0.25)
>>> epoch_value("[chief-0] strategy=one-device", "loss") is None
True
"""

from __future__ import annotations

import math
import re

# A float as Python prints it: 0.2500, 1e-05, nan, inf.
NUMBER = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|inf)"
# A replica's prefix in cloudtrain's own logs: "[chief-0] ".
_PREFIX = re.compile(r"^\[[^\]]*\] ")


def metric_regex(name: str) -> str:
    """The expression whose first group is ``name``'s value on an epoch line."""
    return rf"^epoch \d+/\d+ .*(?<![\w.]){name}=({NUMBER})"


def epoch_value(line: str, name: str) -> tuple[int, float] | None:
    """The epoch and ``name``'s value on a log line; None when it is not an epoch line with it."""
    text = _PREFIX.sub("", line.rstrip("\n"))
    match = re.search(metric_regex(name), text)
    if match is None:
        return None
    value = float(match.group(1))
    return (int(text.split()[1].split("/")[0]), value) if math.isfinite(value) else None
