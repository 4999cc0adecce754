"""Reading what the environment hands the runtime: JSON text, addresses and values to quote.

Every environment input (TF_CONFIG, resourceconfig.json, hyperparameters.json,
CLOUDTRAIN_CONFIG, CLOUDTRAIN_HOSTS) is untrusted text. These helpers turn each way it
can be malformed into a ``ValueError`` with a one-line reason, or a yes/no, so that the
caller raises its own error naming the variable or file and what was expected.

Example:
>>> loads('{"index": 1}')
{'index': 1}
>>> is_address("cmle-training-workerpool0-ab-0:2222"), is_address("a:99999"), is_address("a")
(True, False, False)
>>> shown("x" * 300)[-6:]
"xx...'"
"""

from __future__ import annotations

import json
import re
from typing import Any

SHOWN_MAX = 200
# host:port: a DNS name, an IPv4 address or a bracketed IPv6 one ("[fe80::1%eth0]"), then
# a port from 1 to 65535. Nothing that separates CLOUDTRAIN_HOSTS entries (",", "=").
_ADDRESS = re.compile(r"[A-Za-z0-9._~%:\[\]-]+:([0-9]{1,5})")


def loads(text: str) -> Any:
    """``json.loads``, with every way it fails as one ``ValueError``.

    Besides malformed JSON that covers NaN and Infinity (not JSON), numbers of more
    than 4,300 digits and nesting too deep for the parser.

    Raises:
        ValueError: with a one-line reason.
    """
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def is_address(value: object) -> bool:
    """Whether ``value`` is a ``host:port`` string with a port from 1 to 65535."""
    if not isinstance(value, str):
        return False
    match = _ADDRESS.fullmatch(value)
    return match is not None and 0 < int(match.group(1)) < 65536


def is_count(value: object, *, at_least: int = 0) -> bool:
    """Whether ``value`` is a JSON integer (not a boolean) of at least ``at_least``."""
    return type(value) is int and value >= at_least


def duplicates(values: list[str] | tuple[str, ...]) -> list[str]:
    """The values that occur more than once, in order of their second occurrence.

    Example:
    >>> duplicates(["a:1", "b:1", "a:1"])
    ['a:1']
    """
    seen: set[str] = set()
    repeated = []
    for value in values:
        if value in seen and value not in repeated:
            repeated.append(value)
        seen.add(value)
    return repeated


def shown(value: object) -> str:
    """``repr(value)`` cut to 200 characters, so a huge input still makes one short line."""
    text = repr(value)
    return text if len(text) <= SHOWN_MAX else f"{text[: SHOWN_MAX - 4]}...{text[-1]}"
