"""boto3 clients for the SageMaker backend, with one retry policy and one way to report errors.

Every AWS call of the backend goes through ``AwsClients.call``, so the rules are written
once: transient failures (throttling, 5xx, dropped connections) are retried with bounded
exponential backoff and jitter; permanent ones become one clear ``ProviderError`` or
``CredentialsError`` line. botocore's own retries are switched off on the clients built
here (``total_max_attempts=1``): two retry layers would multiply into minutes of silent
waiting, and this one is observable and tested (its ``sleep`` is injectable).

boto3 is imported only when a client is first needed. Endpoints follow botocore's own
configuration, so ``AWS_ENDPOINT_URL`` / ``AWS_ENDPOINT_URL_SAGEMAKER`` / ``_S3`` /
``_LOGS`` point the backend at other endpoints (tests use loopback services).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cloudtrain.errors import CredentialsError, ProviderError, require

# Error codes worth another attempt (botocore's retry handlers treat the same as transient).
TRANSIENT_CODES = frozenset(
    {
        "ThrottlingException",
        "Throttling",
        "ThrottledException",
        "TooManyRequestsException",
        "RequestThrottled",
        "RequestLimitExceeded",
        "SlowDown",
        "InternalFailure",
        "InternalServerError",
        "InternalError",
        "ServiceUnavailable",
        "RequestTimeout",
    }
)

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


class AwsCallError(ProviderError):
    """A permanent AWS error; ``code`` is the service's error code (e.g. ``ResourceInUse``)."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class AwsClients:
    """The boto3 clients one job uses, built on first use unless injected.

    Args:
        region: AWS region of the job (``sagemaker.region``, or the region in the job's ARN).
        sagemaker, s3, logs: ready boto3 clients to use instead of building them.
        sleep: how to wait between attempts and log polls (tests pass a recorder).
        attempts: calls per operation before a transient error is reported.
        log_poll_s: seconds between log reads with ``logs(follow=True)``.
    """

    region: str
    sagemaker: Any = None
    s3: Any = None
    logs: Any = None
    sleep: Callable[[float], None] = time.sleep
    attempts: int = 6
    base_delay_s: float = 1.0
    max_delay_s: float = 20.0
    log_poll_s: float = 5.0
    _built: dict[str, Any] = field(default_factory=dict, repr=False)

    def client(self, service: str) -> Any:
        """The injected client for ``service`` ("sagemaker", "s3", "logs"), else a new one."""
        injected = getattr(self, service)
        if injected is not None:
            return injected
        if service not in self._built:
            self._built[service] = _new_client(service, self.region)
        return self._built[service]

    def call(self, service: str, operation: str, **kwargs: Any) -> Any:
        """Call ``operation`` on ``service``, retrying transient failures with backoff.

        Raises:
            AwsCallError: a permanent error, or a transient one that outlived every attempt.
            CredentialsError: no credentials, or credentials AWS rejects.
        """
        for attempt in range(1, self.attempts):
            try:
                return self._attempt(service, operation, kwargs)
            except _Transient:
                self.sleep(self.delay(attempt))
        try:
            return self._attempt(service, operation, kwargs)
        except _Transient as exc:
            raise exc.error from exc.__cause__

    def _attempt(self, service: str, operation: str, kwargs: dict[str, Any]) -> Any:
        try:
            return getattr(self.client(service), operation)(**kwargs)
        except Exception as exc:
            error = translate(exc, operation)
            if error is exc:
                raise
            raise error from exc  # the cause shows with CLOUDTRAIN_DEBUG=1

    def delay(self, attempt: int) -> float:
        """Backoff before attempt ``attempt + 1``: doubling from base, capped, half of it jittered."""
        cap = min(self.max_delay_s, self.base_delay_s * 2 ** (attempt - 1))
        return cap / 2 + random.uniform(0, cap / 2)

    def __repr__(self) -> str:
        return f"AwsClients(region={self.region!r}, attempts={self.attempts})"


class _Transient(Exception):
    """An error worth another attempt; ``error`` is what to raise when attempts run out."""

    def __init__(self, error: AwsCallError) -> None:
        super().__init__(str(error))
        self.error = error


def _new_client(service: str, region: str) -> Any:
    require("boto3", "sagemaker")
    import boto3
    from botocore.config import Config

    config = Config(retries={"mode": "standard", "total_max_attempts": 1}, user_agent_extra="cloudtrain")
    return boto3.session.Session(region_name=region).client(service, config=config)


def translate(exc: Exception, operation: str) -> Exception:
    """Turn a boto3/botocore exception into the error cloudtrain raises (or a ``_Transient``)."""
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
        return _Transient(AwsCallError(f"AWS {operation} failed: {exc}. Check the network.", "Connection"))
    return _other_error(exc, operation)


def _client_error(exc: Any, operation: str) -> Exception:
    error = exc.response.get("Error", {})
    code = str(error.get("Code", "Unknown"))
    message = " ".join(str(error.get("Message") or code).split()).rstrip(".")
    status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
    if code in CREDENTIAL_CODES:
        return CredentialsError(f"AWS rejected the credentials ({code}: {message}). {CREDENTIALS_FIX}")
    hint = HINTS.get(code, "")
    failure = AwsCallError(f"AWS {operation} failed: {code}: {message}. {hint}".rstrip(), code)
    if code in TRANSIENT_CODES or status >= 500:
        return _Transient(failure)
    return failure


def _other_error(exc: Exception, operation: str) -> Exception:
    from boto3.exceptions import S3UploadFailedError
    from botocore.exceptions import BotoCoreError

    if isinstance(exc, S3UploadFailedError | BotoCoreError):
        return AwsCallError(f"AWS {operation} failed: {exc}", type(exc).__name__)
    return exc
