"""``cloudtrain check --provider sagemaker``: what the first submit needs, checked before it.

The lines, in the order a submit meets them:

- ``credentials``: boto3 finds credentials and AWS accepts them: STS
  ``GetCallerIdentity`` names the caller (an ARN; never a key);
- ``region``: the job's region, and where it came from;
- ``bucket`` and ``write``: ``HeadBucket`` on the storage root's bucket, then an empty
  probe object under the root, put and deleted (``PutObject``, ``DeleteObject``);
- ``role``: IAM ``GetRole`` finds ``sagemaker.role``, and its trust policy lets
  ``sagemaker.amazonaws.com`` assume it (``sts:AssumeRole``), as SageMaker Roles
  (docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-roles.html) requires;
- ``sagemaker-api``: SageMaker answers ``ListTrainingJobs`` (``MaxResults=1``) in the region.

Not checked: whether the caller may pass the role to SageMaker (``iam:PassRole``, which
CreateTrainingJob needs: "the caller of this API must have the iam:PassRole
permission", CreateTrainingJob API reference, RoleArn). Only IAM's policy simulator
(``SimulatePrincipalPolicy``) could tell without creating a job, and it needs a
permission of its own and cannot be exercised on the loopback services these checks
are tested against; a missing PassRole still fails at submit with AccessDenied naming it.
Nor what the role itself may do (read the bucket, write logs): only the job, running as
the role, can find out.

The clients are built here, not with ``AwsClients``: a check wants an answer in seconds,
so each call is tried twice at most, with short timeouts. Errors read through the
backend's own ``clients.translate``: a missing or refused credential is a credentials
line, anything else AWS's code and message with the fix for that check.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from cloudtrain.errors import CredentialsError, MissingDependencyError
from cloudtrain.providers.sagemaker.clients import CREDENTIALS_FIX, require_boto3, translate
from cloudtrain_runtime.diagnosis import FAIL, OK, Check, skipped

if TYPE_CHECKING:
    from cloudtrain.defaults import Sources
    from cloudtrain.spec import JobSpec

SAGEMAKER_PRINCIPAL = "sagemaker.amazonaws.com"
ASSUME_ACTIONS = ("sts:AssumeRole", "sts:*", "*")
TRUST_POLICY = json.dumps(
    {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": {"Service": SAGEMAKER_PRINCIPAL}, "Action": "sts:AssumeRole"}
        ],
    },
    separators=(",", ":"),
)
PROBE_NAME = ".cloudtrain-check-{token}"
ATTEMPTS = 2
CONNECT_TIMEOUT_S = 5
READ_TIMEOUT_S = 20
# HeadBucket answers with the HTTP status alone (no error body): S3 API reference, HeadBucket.
BUCKET_FIXES = {
    "404": "Create it: aws s3 mb s3://{bucket} --region {region}, or check the storage root.",
    "403": "Grant the caller s3:ListBucket on arn:aws:s3:::{bucket}, or check the storage root.",
}

# A check's fix is one line of the report.
CONFIGURE_FIX = " ".join(CREDENTIALS_FIX.split())

Clients = Callable[[str], Any]


def check_setup(spec: JobSpec, sources: Sources, *, clients: Clients | None = None) -> list[Check]:
    """The SageMaker lines for ``spec``; ``clients`` (service name -> boto3 client) is injectable."""
    try:
        require_boto3()
    except MissingDependencyError as missing:
        return [Check("libraries", FAIL, "boto3 is not installed", str(missing))]
    region = spec.sagemaker.region
    client = clients or client_factory(region)
    region_line = Check("region", OK, f"{region} (from {sources.label('sagemaker.region')})")
    credentials = credentials_check(client)
    if credentials.status == FAIL:  # every other call would be refused the same way
        return [
            credentials,
            region_line,
            *skipped(("bucket", "write", "role", "sagemaker-api"), "no credentials"),
        ]
    root = spec.sagemaker.storage_root or spec.storage.root
    return [
        credentials,
        region_line,
        *storage_checks(root, region, client),
        role_check(spec.sagemaker.role, client),
        api_check(region, client),
    ]


def client_factory(region: str) -> Clients:
    """boto3 clients of one session, for ``region``, with few attempts and short timeouts."""
    import boto3
    from botocore.config import Config

    session = boto3.session.Session(region_name=region)
    config = Config(
        retries={"mode": "standard", "total_max_attempts": ATTEMPTS},
        connect_timeout=CONNECT_TIMEOUT_S,
        read_timeout=READ_TIMEOUT_S,
        user_agent_extra="cloudtrain",
    )
    built: dict[str, Any] = {}

    def client(service: str) -> Any:
        if service not in built:
            built[service] = session.client(service, region_name=region, config=config)
        return built[service]

    return client


def credentials_check(client: Clients) -> Check:
    """Who AWS says the caller is: the credentials exist and are accepted."""
    try:
        identity = client("sts").get_caller_identity()
    except Exception as exc:
        return failed("credentials", exc, "GetCallerIdentity", CONFIGURE_FIX)
    return Check("credentials", OK, f"{identity['Arn']} (account {identity['Account']})")


def storage_checks(root: str, region: str, client: Clients) -> list[Check]:
    """The bucket of ``root`` exists and answers, and a probe object under ``root`` can be put and deleted."""
    if not root.startswith("s3://"):
        return [
            Check(
                "bucket",
                FAIL,
                f"the storage root {root!r} is not an s3:// URI",
                "Set sagemaker.storage_root (or storage.root) to s3://BUCKET/PATH, in the spec or your profile.",
            ),
            *skipped(["write"], "no s3:// bucket to write to"),
        ]
    bucket, _, prefix = root.removeprefix("s3://").partition("/")
    try:
        client("s3").head_bucket(Bucket=bucket)
    except Exception as exc:
        code = str(getattr(exc, "response", {}).get("Error", {}).get("Code", ""))
        fix = BUCKET_FIXES.get(code, "Check the storage root, and that the bucket is in {region}.")
        return [
            failed("bucket", exc, "HeadBucket", fix.format(bucket=bucket, region=region)),
            *skipped(["write"], "the bucket check failed"),
        ]
    return [Check("bucket", OK, f"s3://{bucket} exists"), write_check(bucket, prefix, client)]


def write_check(bucket: str, prefix: str, client: Clients) -> Check:
    """Put an empty probe object under the root and delete it: what a job's outputs need."""
    key = "/".join(
        part for part in (prefix.strip("/"), PROBE_NAME.format(token=secrets.token_hex(4))) if part
    )
    fix = f"Grant the caller s3:PutObject and s3:DeleteObject on arn:aws:s3:::{bucket}/{prefix.strip('/')}*"
    s3 = client("s3")
    for operation, send in (
        ("PutObject", lambda: s3.put_object(Bucket=bucket, Key=key, Body=b"")),
        ("DeleteObject", lambda: s3.delete_object(Bucket=bucket, Key=key)),
    ):
        try:
            send()
        except Exception as exc:
            return failed("write", exc, operation, fix)
    return Check("write", OK, f"put and deleted s3://{bucket}/{key}")


def role_check(role: str | None, client: Clients) -> Check:
    """The execution role exists and trusts SageMaker to assume it."""
    if role is None:
        return Check(
            "role",
            FAIL,
            "no execution role is set (sagemaker.role)",
            "Set sagemaker.role to arn:aws:iam::ACCOUNT:role/NAME in the spec or your profile.",
        )
    name = role.rsplit("/", 1)[-1]
    try:
        found = client("iam").get_role(RoleName=name)["Role"]
    except Exception as exc:
        fix = (
            f"Create the role, or set sagemaker.role to an existing one: aws iam get-role --role-name {name}"
        )
        return failed("role", exc, "GetRole", fix)
    if not trusts_sagemaker(found.get("AssumeRolePolicyDocument")):
        return Check(
            "role",
            FAIL,
            f"{role} does not let {SAGEMAKER_PRINCIPAL} assume it (its trust policy)",
            f"aws iam update-assume-role-policy --role-name {name} --policy-document '{TRUST_POLICY}'",
        )
    return Check("role", OK, f"{role} exists and trusts {SAGEMAKER_PRINCIPAL} (iam:PassRole is not checked)")


def trusts_sagemaker(document: Any) -> bool:
    """Whether a trust policy allows ``sagemaker.amazonaws.com`` to ``sts:AssumeRole``.

    IAM returns the document URL-encoded (IAM API reference, GetRole); botocore decodes
    it into a dict, a raw response is decoded here.

    Example:
    >>> trusts_sagemaker(TRUST_POLICY)
    True
    >>> trusts_sagemaker({"Statement": [{"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"},
    ...                                  "Action": "sts:AssumeRole"}]})
    False
    """
    policy = json.loads(unquote(document)) if isinstance(document, str) else document or {}
    statements = policy.get("Statement", [])
    return any(_allows_sagemaker(statement) for statement in _listed(statements))


def _allows_sagemaker(statement: dict[str, Any]) -> bool:
    principal = statement.get("Principal", {})
    services = _listed(principal.get("Service", [])) if isinstance(principal, dict) else []
    return (
        statement.get("Effect") == "Allow"
        and SAGEMAKER_PRINCIPAL in services
        and any(action in ASSUME_ACTIONS for action in _listed(statement.get("Action", [])))
    )


def _listed(value: Any) -> list[Any]:
    """A policy field that may be one value or a list of them, as a list."""
    return value if isinstance(value, list) else [value]


def api_check(region: str, client: Clients) -> Check:
    """SageMaker answers in the region: one training job listed."""
    try:
        client("sagemaker").list_training_jobs(MaxResults=1)
    except Exception as exc:
        fix = f"Grant the caller sagemaker:ListTrainingJobs, and check sagemaker.region ({region}) and the network."
        return failed("sagemaker-api", exc, "ListTrainingJobs", fix)
    return Check("sagemaker-api", OK, f"SageMaker answers in {region} (ListTrainingJobs)")


def failed(name: str, exc: Exception, operation: str, fix: str) -> Check:
    """A fail line: AWS's code and message as the detail; a credentials problem gets the credentials fix.

    Raises:
        Exception: ``exc`` itself when it is no AWS error (a bug, not a set-up problem).
    """
    error = translate(exc, operation)
    if error is exc:
        raise exc
    if isinstance(error, CredentialsError):
        return Check(name, FAIL, f"AWS {operation}: {_said(exc)}", CONFIGURE_FIX)
    return Check(name, FAIL, f"AWS {operation} failed: {_said(exc)}", fix)


def _said(exc: Exception) -> str:
    """AWS's error code and message, or botocore's own words for a failure before AWS answered."""
    error = getattr(exc, "response", {}).get("Error", {})
    if error:
        code = error.get("Code", "Unknown")
        return f"{code}: {' '.join(str(error.get('Message') or code).split())}"
    return " ".join(str(exc).split())
