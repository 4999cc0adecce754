"""The shared vocabulary of why a job did not start or stopped, whatever the provider."""

from __future__ import annotations

import pytest

from cloudtrain.errors import CredentialsError, MissingDependencyError, ProviderError, SpecError
from cloudtrain.provider import Failure, Reason
from cloudtrain.provider.failures import CallError, failure_of


@pytest.mark.parametrize(
    ("reason", "recoverable"),
    [
        (Reason.CAPACITY, True),  # machines come back: the same, later, or elsewhere
        (Reason.PREEMPTED, True),  # resumes from its backup
        (Reason.INTERNAL, True),  # the provider's own failure passes
        (Reason.QUOTA, False),  # stays until someone raises it
        (Reason.PERMISSION, False),  # stays until someone grants it
        (Reason.CONFIGURATION, False),  # the spec must change
        (Reason.USER_CODE, False),  # the code must change: never run it again as it is
    ],
)
def test_which_reasons_another_attempt_may_get_past(reason: Reason, recoverable: bool) -> None:
    assert reason.recoverable is recoverable


def test_the_reasons_are_the_words_users_type() -> None:
    assert [str(reason) for reason in Reason] == [
        "capacity",
        "quota",
        "permission",
        "configuration",
        "user_code",
        "preempted",
        "internal",
    ]


@pytest.mark.parametrize(
    ("error", "reason", "code"),
    [
        (
            CallError("x", Failure(Reason.QUOTA, "x", "ResourceLimitExceeded")),
            Reason.QUOTA,
            "ResourceLimitExceeded",
        ),
        (
            CredentialsError("No usable AWS credentials. Run:\n  $ aws configure"),
            Reason.PERMISSION,
            "credentials",
        ),
        (SpecError(["resources.hosts must be >= 1."]), Reason.CONFIGURATION, "SpecError"),
        (MissingDependencyError("boto3 is not installed."), Reason.CONFIGURATION, "MissingDependencyError"),
    ],
)
def test_an_error_raised_while_starting_a_job_has_a_reason(
    error: Exception, reason: Reason, code: str
) -> None:
    failure = failure_of(error)
    assert failure is not None
    assert (failure.reason, failure.code) == (reason, code)
    assert "\n" not in failure.message


def test_an_error_that_is_none_of_them_has_no_reason() -> None:
    # A ProviderError a provider did not classify is not guessed at.
    assert failure_of(ProviderError("the bundle is missing")) is None
    assert failure_of(ValueError("a bug")) is None


def test_a_call_error_is_a_provider_error_with_its_reason() -> None:
    error = CallError("Could not create ...", Failure(Reason.CAPACITY, "stockout", "CapacityError"))
    assert isinstance(error, ProviderError)
    assert error.reason is Reason.CAPACITY
    assert str(error.failure) == "capacity: stockout (CapacityError)"


def test_every_reason_says_what_to_do() -> None:
    for reason in Reason:
        assert reason.explained.startswith(f"{reason}: ")
        assert len(reason.explained) > len(f"{reason}: ") + 20
