"""The one exception tree of cloudtrain.

The library raises; only the CLI's ``main`` prints ``Error: ...`` and exits with the
error's ``exit_code``. Every message names what was wrong and how to fix it.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence


class CloudtrainError(Exception):
    """Base of every error cloudtrain raises on purpose."""

    exit_code = 1

    @property
    def problems(self) -> list[str]:
        """One line per problem, as the CLI prints them."""
        return [str(self)]


class SpecError(CloudtrainError):
    """The job spec is invalid. Carries one message per problem.

    Example:
    >>> err = SpecError(["resources.hosts must be >= 1. Received: resources.hosts=0."])
    >>> err.exit_code
    2
    """

    exit_code = 2

    def __init__(self, problems: str | Sequence[str]) -> None:
        self._problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("\n".join(self._problems))

    @property
    def problems(self) -> list[str]:
        return list(self._problems)


class ProviderError(CloudtrainError):
    """The provider refused or failed a call; the message says what to do."""


class CredentialsError(CloudtrainError):
    """No usable credentials for the provider; the message shows the command that fixes it."""


class BudgetError(CloudtrainError):
    """The estimated cost exceeds ``limits.max_cost_usd``."""

    exit_code = 3


class MissingDependencyError(CloudtrainError):
    """An optional dependency is needed for this command; the message shows the pip command."""


def did_you_mean(value: str, choices: Iterable[str], noun: str = "values") -> str:
    """Return ``" Did you mean 'x'?"`` for a close match, else the list of valid ``noun``.

    Example:
    >>> did_you_mean("h100", ["h100-80gb", "a100-40gb"])
    " Did you mean 'h100-80gb'?"
    """
    options = sorted(set(choices))
    text = str(value)
    close = [o for o in options if text and o.startswith(text)][:1]
    close = close or difflib.get_close_matches(text, options, n=1, cutoff=0.6)
    if close:
        return f" Did you mean {close[0]!r}?"
    return f" Valid {noun}: {', '.join(options)}."


def require(module: str, extra: str) -> None:
    """Raise MissingDependencyError with the install command if ``module`` is absent."""
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise MissingDependencyError(f"{module} is not installed. Run: pip install 'cloudtrain[{extra}]'")
