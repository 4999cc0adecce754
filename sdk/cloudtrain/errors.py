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


class ConfigError(SpecError):
    """The user config file, or the profile asked for, is invalid; the message names the file and key.

    A SpecError, because it stops a spec from loading, with the same exit code (2).
    """


class FilesExistError(CloudtrainError):
    """A command would overwrite files the user has; the message lists them and the flag that allows it."""

    exit_code = 2


class SpecValidationError(SpecError, ValueError):
    """A spec's values were refused, whether read from YAML or passed to ``JobSpec(...)``.

    A SpecError, so the CLI and pipelines catch it with every other cloudtrain error, and
    also a ValueError, as pydantic's ValidationError is: code that caught ValueError
    around ``JobSpec(...)`` keeps working, and a section built inside a pydantic
    validator still fails as a validation error of the model around it.

    Example:
    >>> err = SpecValidationError(["name: 'Bad_Name' is not a valid job name."])
    >>> isinstance(err, SpecError), isinstance(err, ValueError), err.exit_code
    (True, True, 2)
    """


class JobNotFoundError(CloudtrainError):
    """No job has the ID, run id, name or short id given; the same exit code whatever the provider or prefix.

    A usage error, as a misspelt option is: the command was given something that names nothing.
    """

    exit_code = 2


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
    """Raise MissingDependencyError with the install command if ``module`` is absent.

    Example:
    >>> require("json", "vertex")  # present: nothing happens
    """
    require_all((module,), extra)


def require_all(modules: Sequence[str], extra: str, *, needed_for: str = "") -> None:
    """Raise one MissingDependencyError naming every absent module of ``modules`` and the extra.

    Never raises anything else: ``find_spec("google.cloud.aiplatform")`` imports ``google``
    first and raises ModuleNotFoundError when that parent is missing, and a broken parent
    package can raise anything while it imports.

    Example:
    >>> require_all(["json", "no_such_module", "nor_this_one"], "runtime", needed_for="training here")
    Traceback (most recent call last):
    ...
    cloudtrain.errors.MissingDependencyError: no_such_module and nor_this_one are not installed (needed for training here). Run: pip install 'cloudtrain[runtime]'
    """
    problems = {module: _import_problem(module) for module in modules}
    absent = [module for module, problem in problems.items() if problem == ""]
    parts = [problem for problem in problems.values() if problem]
    if absent:
        names = absent[0] if len(absent) == 1 else f"{', '.join(absent[:-1])} and {absent[-1]}"
        parts.insert(0, f"{names} {'is' if len(absent) == 1 else 'are'} not installed")
    if not parts:
        return
    why = f" (needed for {needed_for})" if needed_for else ""
    raise MissingDependencyError(f"{'; '.join(parts)}{why}. Run: pip install 'cloudtrain[{extra}]'")


def _import_problem(module: str) -> str | None:
    """None when ``module`` can be imported; empty when it is absent; else why it cannot be."""
    import importlib.util

    try:
        found = importlib.util.find_spec(module)
    except ModuleNotFoundError:
        found = None
    except Exception as err:  # a parent package that fails while importing
        return f"{module} cannot be imported ({type(err).__name__}: {err})"
    return None if found is not None else ""
