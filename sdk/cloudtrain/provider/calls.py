"""How a provider's calls to its cloud are retried, and how their errors become cloudtrain's.

Every provider calls its cloud through that cloud's official library and its retry
facility (google-api-core's ``retry_target``, botocore's retry modes, the kubernetes
client's ``retry.on_error``); what they share is written here once:

- the schedule: at most ``ATTEMPTS`` tries, waiting ``FIRST_DELAY_S``, then twice as
  long each time, never more than ``MAX_DELAY_S`` (``delay``), for the libraries that
  take a schedule (botocore keeps its own, which the user's AWS config may set);
- the translation: a call's failure becomes one cloudtrain error
  (``cloudtrain.provider.failures.CallError`` with its reason, or a ``CredentialsError``),
  raised from the library's so ``CLOUDTRAIN_DEBUG=1`` shows both (``translated``).

Example:
>>> [delay(failures) for failures in range(1, ATTEMPTS)]
[1.0, 2.0, 4.0, 8.0]
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

ATTEMPTS = 5
FIRST_DELAY_S = 1.0
MAX_DELAY_S = 30.0


def delay(failures: int) -> float:
    """Seconds to wait after the ``failures``-th failed attempt (1-based) before the next."""
    return min(FIRST_DELAY_S * 2 ** (failures - 1), MAX_DELAY_S)


@contextlib.contextmanager
def translated(translate: Callable[[Exception], Exception]) -> Iterator[None]:
    """Raise what ``translate`` makes of an exception in the block, from the original.

    ``translate`` returns the exception itself for one that is not the library's (a bug
    of cloudtrain's own, an interrupt): that one propagates unchanged.
    """
    try:
        yield
    except Exception as exc:
        error = translate(exc)
        if error is exc:
            raise
        raise error from exc
