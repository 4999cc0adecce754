"""boto3 clients for the SageMaker backend: botocore's retries, and one way to report errors.

Every AWS call of the backend goes through ``AwsClients.call``, so a failure is reported
one way: one clear ``ProviderError`` (``AwsCallError``) or ``CredentialsError`` line
with the fix.

Retries are botocore's own (reference: boto3's "Retries" guide): transient failures
(throttling, 5xx, dropped connections) are retried with exponential backoff and
jitter, inside the client. The clients built here use the retry mode and the attempt
count the user set (``AWS_RETRY_MODE`` / ``AWS_MAX_ATTEMPTS``, or ``retry_mode`` /
``max_attempts`` in the AWS config file), and otherwise ``standard`` mode with
``AwsClients.attempts`` attempts. Injected clients keep the retries they were built with.

boto3 is imported only when a client is first needed, after checking it is installed:
without it, every path ends in one ``MissingDependencyError`` with the pip command, the
error translation included. Endpoints follow botocore's own
configuration, so ``AWS_ENDPOINT_URL`` / ``AWS_ENDPOINT_URL_SAGEMAKER`` / ``_S3`` /
``_LOGS`` point the backend at other endpoints (tests use loopback services).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cloudtrain.errors import CloudtrainError, CredentialsError, require
from cloudtrain.provider.calls import translated
from cloudtrain.provider.failures import CallError
from cloudtrain.providers.sagemaker import failures

CREDENTIAL_CODES = frozenset(
    {
        "UnrecognizedClientException",
        "InvalidClientTokenId",
        "InvalidAccessKeyId",
        "ExpiredToken",
        "ExpiredTokenException",
        "InvalidSignatureException",
        "SignatureDoesNotMatch",
        "MissingAuthenticationToken",
    }
)

HINTS = {
    "AccessDenied": "Grant the caller (and sagemaker.role) the missing permission named above.",
    "AccessDeniedException": "Grant the caller (and sagemaker.role) the missing permission named above.",
    "403": "The caller may not read this S3 location: grant s3:GetObject and s3:PutObject on it.",
    "ResourceLimitExceeded": (
        "Request a higher quota for this instance type in the Service Quotas console "
        "(Amazon SageMaker, 'training job usage'), or use fewer hosts or another accelerator."
    ),
}

CREDENTIALS_FIX = (
    "No usable AWS credentials. Run:\n  $ aws configure\n"
    "or set AWS_PROFILE (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)."
)


class AwsCallError(CallError):
    """A failed AWS call (after botocore's retries); ``code`` is the service's error code (``ResourceInUse``).

    ``failure`` is what it means in every provider's words (``failures.call_failure``),
    from AWS's own message ``said``.
    """

    def __init__(self, message: str, code: str, *, said: str = "") -> None:
        super().__init__(message, failures.call_failure(code, said or message))
        self.code = code


@dataclass
class AwsClients:
    """The boto3 clients one job uses, built on first use unless injected.

    Args:
        region: AWS region of the job (``sagemaker.region``, or the region in the job's ARN).
        session: the ``boto3.session.Session`` to build clients from (default: a new one,
            with the user's profile, credentials and settings).
        sagemaker, s3, logs, service_quotas, batch: ready boto3 clients to use instead of building them.
        sleep: how to wait between status polls and log reads (tests pass a recorder).
        attempts: tries per call (the first included) when the user set no
            ``AWS_MAX_ATTEMPTS``.
        log_poll_s: seconds between log reads with ``logs(follow=True)``.
    """

    region: str
    session: Any = None
    sagemaker: Any = None
    s3: Any = None
    logs: Any = None
    service_quotas: Any = None
    batch: Any = None
    sleep: Callable[[float], None] = time.sleep
    attempts: int = 6
    log_poll_s: float = 5.0
    _built: dict[str, Any] = field(default_factory=dict, repr=False)

    def client(self, service: str) -> Any:
        """The injected client for ``service`` ("sagemaker", "s3", "logs", "service-quotas", "batch"), else a new one."""
        injected = getattr(self, service.replace("-", "_"))
        if injected is not None:
            return injected
        if service not in self._built:
            self._built[service] = self._new_client(service)
        return self._built[service]

    def call(self, service: str, operation: str, **kwargs: Any) -> Any:
        """Call ``operation`` on ``service``; botocore has retried transient failures by then.

        Raises:
            AwsCallError: a permanent error, or a transient one that outlived every attempt.
            CredentialsError: no credentials, or credentials AWS rejects.
        """
        with translated(lambda exc: translate(exc, operation)):
            return getattr(self.client(service), operation)(**kwargs)

    def _new_client(self, service: str) -> Any:
        require_boto3()
        import boto3
        from botocore.config import Config

        if self.session is None:
            self.session = boto3.session.Session(region_name=self.region)
        retries = retry_settings(self.session.profile_name, self.attempts)
        config = Config(retries=retries, user_agent_extra="cloudtrain")
        return self.session.client(service, region_name=self.region, config=config)

    def __repr__(self) -> str:
        return f"AwsClients(region={self.region!r}, attempts={self.attempts})"


def require_boto3() -> None:
    """Raise MissingDependencyError, with the pip command, unless boto3 and botocore import.

    Raises:
        MissingDependencyError: boto3 or botocore is not installed.
    """
    for module in ("boto3", "botocore"):
        require(module, "sagemaker")


def retry_settings(profile: str | None, attempts: int) -> dict[str, Any]:
    """botocore's ``retries`` settings: only what the user left unset.

    A value in ``Config(retries=...)`` overrides the user's environment and config file,
    so the mode is ``standard`` and the attempts ``attempts`` only where they set neither.

    Args:
        profile: the AWS profile whose config file section counts.
        attempts: tries per call, the first included.
    """
    import botocore.session

    # boto3 names a session without a profile "default", a profile that need not exist.
    user = botocore.session.Session(profile=None if profile == "default" else profile)
    retries: dict[str, Any] = {}
    if not (os.environ.get("AWS_RETRY_MODE") or user.get_scoped_config().get("retry_mode")):
        retries["mode"] = "standard"
    if user.get_config_variable("max_attempts") is None:
        retries["total_max_attempts"] = attempts
    return retries


def translate(exc: Exception, operation: str) -> Exception:
    """The cloudtrain error for a failed boto3/botocore call, or ``exc`` itself if it is not one.

    Raises:
        MissingDependencyError: botocore is not installed, so ``exc`` cannot be its error.
    """
    if isinstance(exc, CloudtrainError):
        return exc
    require_boto3()
    from botocore.exceptions import (
        ClientError,
        ConnectionError,
        HTTPClientError,
        NoCredentialsError,
        PartialCredentialsError,
    )

    if isinstance(exc, NoCredentialsError | PartialCredentialsError):
        return CredentialsError(CREDENTIALS_FIX)
    if isinstance(exc, ClientError):
        return _client_error(exc, operation)
    if isinstance(exc, ConnectionError | HTTPClientError):
        return AwsCallError(f"AWS {operation} failed: {exc}. Check the network.", "Connection")
    return _other_error(exc, operation)


def _client_error(exc: Any, operation: str) -> Exception:
    error = exc.response.get("Error", {})
    code = str(error.get("Code", "Unknown"))
    message = " ".join(str(error.get("Message") or code).split()).rstrip(".")
    if code in CREDENTIAL_CODES:
        return CredentialsError(f"AWS rejected the credentials ({code}: {message}). {CREDENTIALS_FIX}")
    hint = HINTS.get(code, "")
    return AwsCallError(f"AWS {operation} failed: {code}: {message}. {hint}".rstrip(), code, said=message)


def _other_error(exc: Exception, operation: str) -> Exception:
    from boto3.exceptions import S3UploadFailedError
    from botocore.exceptions import BotoCoreError

    if isinstance(exc, S3UploadFailedError | BotoCoreError):
        return AwsCallError(f"AWS {operation} failed: {exc}", type(exc).__name__)
    return exc
