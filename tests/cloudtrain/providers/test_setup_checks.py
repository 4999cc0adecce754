"""``cloudtrain check`` against the loopback clouds, with each set-up problem caused for real.

Vertex: the real google-auth, google-cloud-storage and aiplatform clients against
gcp-storage-emulator and the fake JobService. SageMaker: real boto3 against moto (S3,
IAM, STS) and the fake SageMaker; a denied write is moto enforcing a real IAM policy.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from cloudtrain.providers.sagemaker import setup_checks as aws_checks
from cloudtrain.providers.vertex import setup_checks as google_checks
from cloudtrain.providers.vertex.clients import VertexClients
from cloudtrain.specfile import load_settings
from cloudtrain_runtime.diagnosis import Check
from tests.cloudtrain.providers.fakes.cloud_quotas import FakeCloudQuotas
from tests.cloudtrain.providers.fakes.sagemaker_aws import LoopbackAws
from tests.cloudtrain.providers.fakes.vertex_jobservice import FakeJobService

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "binary_classifier" / "job.yaml"
ROLE_NAME = "SageMakerTraining"  # the example job's sagemaker.role
SERVICE_ACCOUNT = "trainer@my-project.iam.gserviceaccount.com"
UNREACHABLE = "127.0.0.1:9"  # the discard port: nothing listens there


def statuses(checks: list[Check]) -> dict[str, str]:
    return {check.check: check.status for check in checks}


def line(checks: list[Check], name: str) -> Check:
    return next(check for check in checks if check.check == name)


def trust(service: str) -> str:
    statement = {"Effect": "Allow", "Principal": {"Service": service}, "Action": "sts:AssumeRole"}
    return json.dumps({"Version": "2012-10-17", "Statement": [statement]})


# ---- Vertex AI ---------------------------------------------------------------------------


@pytest.fixture
def service_account_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A service account key file (a fresh RSA key) as Application Default Credentials."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    info = {
        "type": "service_account",
        "project_id": "my-project",
        "private_key_id": "0" * 40,
        "private_key": pem,
        "client_email": SERVICE_ACCOUNT,
        "client_id": "1",
        "token_uri": "https://oauth2.googleapis.com/token",
    }
    path = tmp_path / "key.json"
    path.write_text(json.dumps(info))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(path))
    return path


@pytest.fixture
def vertex_check(
    fake_vertex: FakeJobService, fake_gcs: str, service_account_key: Path
) -> Callable[..., list[Check]]:
    """The Vertex checks of the example job (``--set`` overrides allowed), waits recorded, not slept."""

    def run(*overrides: str) -> list[Check]:
        from cloudtrain.specfile import load_spec_sources

        spec, sources = load_spec_sources(EXAMPLE, overrides)
        return google_checks.check_setup(spec, sources, clients=VertexClients(sleep=lambda _: None))

    return run


def test_vertex_all_ok_names_the_service_account_and_where_settings_came_from(
    vertex_check: Callable[..., list[Check]], fake_vertex: FakeJobService, service_account_key: Path
) -> None:
    checks = vertex_check()
    assert statuses(checks) == dict.fromkeys(
        ["credentials", "project", "region", "bucket", "write", "vertex-api"], "ok"
    )
    assert line(checks, "credentials").detail == (
        f"service account {SERVICE_ACCOUNT}, from GOOGLE_APPLICATION_CREDENTIALS ({service_account_key})"
    )
    assert line(checks, "project").detail == "my-project (from spec)"
    [listed] = fake_vertex.calls("ListCustomJobs")
    assert (listed.parent, listed.page_size) == ("projects/my-project/locations/us-central1", 1)


def test_vertex_probe_object_is_deleted(vertex_check: Callable[..., list[Check]], fake_gcs: str) -> None:
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import storage  # type: ignore[attr-defined]

    checks = vertex_check()
    assert line(checks, "write").detail.startswith(
        "wrote and deleted gs://my-bucket/binary-classifier/.cloudtrain-check-"
    )
    client = storage.Client(project="my-project", credentials=AnonymousCredentials())
    assert list(client.list_blobs("my-bucket")) == []


def test_vertex_without_credentials_says_how_to_log_in(no_google_credentials: None) -> None:
    from cloudtrain.specfile import load_spec_sources

    checks = google_checks.check_setup(*load_spec_sources(EXAMPLE))
    # regression: the checks left out were not listed
    assert statuses(checks) == {
        "credentials": "fail",
        "project": "ok",
        "region": "ok",
        **dict.fromkeys(["bucket", "write", "vertex-api"], "skip"),
    }
    assert line(checks, "vertex-api").detail == "not checked: no credentials"
    assert "gcloud auth application-default login" in (line(checks, "credentials").fix or "")


def test_vertex_missing_bucket_gives_the_create_command(vertex_check: Callable[..., list[Check]]) -> None:
    checks = vertex_check("vertex.storage_root=gs://no-such-bucket/x")
    bucket = line(checks, "bucket")
    assert (bucket.status, bucket.fix) == (
        "fail",
        "Create the bucket first: gcloud storage buckets create gs://no-such-bucket",
    )
    assert (statuses(checks)["write"], line(checks, "write").detail) == (
        "skip",
        "not checked: the bucket check failed",
    )


def test_vertex_root_that_is_not_gs_is_refused(vertex_check: Callable[..., list[Check]]) -> None:
    checks = vertex_check("storage.root=s3://my-bucket/x", "vertex.storage_root=null")
    assert line(checks, "bucket").detail == "the storage root 's3://my-bucket/x' is not a gs:// URI"


def test_vertex_api_disabled_gives_the_enable_command(
    vertex_check: Callable[..., list[Check]], fake_vertex: FakeJobService
) -> None:
    fake_vertex.fail(
        "ListCustomJobs",
        grpc.StatusCode.PERMISSION_DENIED,
        message="Vertex AI API has not been used in project my-project before or it is disabled.",
        reason="SERVICE_DISABLED",
    )
    api = line(vertex_check(), "vertex-api")
    assert api.status == "fail"
    assert api.fix == (
        "Enable the API (it takes a few minutes): gcloud services enable aiplatform.googleapis.com --project my-project"
    )


def test_vertex_unreachable_service_fails_its_line(
    vertex_check: Callable[..., list[Check]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLOUDTRAIN_VERTEX_ENDPOINT", UNREACHABLE)
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", f"http://{UNREACHABLE}")
    checks = vertex_check()
    assert statuses(checks)["bucket"] == statuses(checks)["vertex-api"] == "fail"
    assert "check the network" in (line(checks, "bucket").fix or "")


def test_vertex_without_project_names_where_to_set_it(vertex_check: Callable[..., list[Check]]) -> None:
    spec, sources = load_settings(None)
    checks = google_checks.check_setup(spec, sources, clients=VertexClients(sleep=lambda _: None))
    project = line(checks, "project")
    assert (project.status, project.detail) == (
        "fail",
        "no Google Cloud project is set (the credentials name my-project)",
    )
    assert line(checks, "vertex-api").status == "fail"


def test_cli_check_vertex_exits_1_and_prints_the_fix(
    vertex_check: Callable[..., list[Check]], run_cli: Callable[..., Any], fake_quotas: FakeCloudQuotas
) -> None:
    fake_quotas.set_quota(
        "my-project", "aiplatform.googleapis.com/custom_model_training_nvidia_t4_gpus", {"us-central1": 8}
    )
    code, out, _ = run_cli(
        "check", str(EXAMPLE), "--provider", "vertex", "--set", "vertex.storage_root=gs://gone/x"
    )
    assert code == 1
    assert "fix: Create the bucket first: gcloud storage buckets create gs://gone" in out
    assert "ok    quota" in out  # the job's 2 T4 GPUs fit the region's 8
    assert (
        out.splitlines()[-1] == "1 failed, 0 warnings, 5 ok, 1 skipped"
    )  # the write, after the bucket failed


def test_vertex_refuses_a_bucket_outside_the_jobs_region(vertex_check: Callable[..., list[Check]]) -> None:
    bucket = line(vertex_check("vertex.region=europe-west4"), "bucket")
    assert (bucket.status, bucket.detail) == (
        "fail",
        "gs://my-bucket is in US-CENTRAL1, the job runs in europe-west4: Vertex AI needs the bucket in the job's region",
    )
    assert "gcloud storage buckets create gs://BUCKET --location europe-west4" in (bucket.fix or "")


# ---- SageMaker ---------------------------------------------------------------------------


@pytest.fixture
def iam_aws(aws: LoopbackAws, monkeypatch: pytest.MonkeyPatch) -> LoopbackAws:
    """Loopback AWS with IAM and STS on moto too, and the example job's role trusting SageMaker."""
    moto_url = aws.env["AWS_ENDPOINT_URL_S3"]
    for service in ("IAM", "STS"):
        monkeypatch.setenv(f"AWS_ENDPOINT_URL_{service}", moto_url)
    aws.client("iam", moto_url).create_role(
        RoleName=ROLE_NAME, AssumeRolePolicyDocument=trust("sagemaker.amazonaws.com")
    )
    return aws


def sagemaker_check(*overrides: str) -> list[Check]:
    from cloudtrain.specfile import load_spec_sources

    spec, sources = load_spec_sources(EXAMPLE, overrides)
    return aws_checks.check_setup(spec, sources)


def test_sagemaker_all_ok_names_the_caller(iam_aws: LoopbackAws) -> None:
    checks = sagemaker_check()
    assert statuses(checks) == dict.fromkeys(
        ["credentials", "region", "bucket", "write", "role", "sagemaker-api"], "ok"
    )
    assert line(checks, "credentials").detail.startswith("arn:aws:")
    assert "AKIDLOOPBACK" not in json.dumps([check.to_dict() for check in checks])  # never the key
    assert iam_aws.client("s3").list_objects_v2(Bucket="my-bucket").get("KeyCount") == 0  # probe deleted


def test_sagemaker_without_credentials_says_how_to_configure(
    iam_aws: LoopbackAws, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name)
    checks = sagemaker_check()
    assert statuses(checks) == {
        "credentials": "fail",
        "region": "ok",
        **dict.fromkeys(["bucket", "write", "role", "sagemaker-api"], "skip"),
    }
    assert "aws configure" in (line(checks, "credentials").fix or "")


def test_sagemaker_missing_bucket_gives_the_create_command(iam_aws: LoopbackAws) -> None:
    bucket = line(sagemaker_check("sagemaker.storage_root=s3://no-such-bucket/x"), "bucket")
    assert (bucket.status, bucket.fix) == (
        "fail",
        "Create it: aws s3 mb s3://no-such-bucket --region us-east-1, or check the storage root.",
    )


def test_sagemaker_missing_role_fails(iam_aws: LoopbackAws) -> None:
    role = line(sagemaker_check("sagemaker.role=arn:aws:iam::123456789012:role/Nobody"), "role")
    assert role.status == "fail"
    assert role.detail.startswith("AWS GetRole failed: NoSuchEntity")


def test_sagemaker_role_that_does_not_trust_sagemaker_gets_the_trust_command(iam_aws: LoopbackAws) -> None:
    iam_aws.client("iam", iam_aws.env["AWS_ENDPOINT_URL_S3"]).create_role(
        RoleName="Ec2Only", AssumeRolePolicyDocument=trust("ec2.amazonaws.com")
    )
    role = line(sagemaker_check("sagemaker.role=arn:aws:iam::123456789012:role/Ec2Only"), "role")
    assert role.status == "fail"
    assert (role.fix or "").startswith(
        "aws iam update-assume-role-policy --role-name Ec2Only --policy-document"
    )
    assert json.loads((role.fix or "").split("'")[1]) == json.loads(aws_checks.TRUST_POLICY)


def test_sagemaker_unreachable_service_fails_its_line(
    iam_aws: LoopbackAws, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_SAGEMAKER", f"http://{UNREACHABLE}")
    api = line(sagemaker_check(), "sagemaker-api")
    assert (api.status, api.detail.split(":")[0]) == ("fail", "AWS ListTrainingJobs failed")


@pytest.fixture
def read_only_caller(iam_aws: LoopbackAws, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The caller is an IAM user that may read the bucket but not write it, and moto enforces it."""
    iam = iam_aws.client("iam", iam_aws.env["AWS_ENDPOINT_URL_S3"])
    iam.create_user(UserName="reader")
    # AWS authorises HeadBucket as s3:ListBucket (S3 API reference, HeadBucket); moto asks for
    # s3:HeadBucket, so both are allowed.
    allowed = [
        "sts:GetCallerIdentity",
        "s3:ListBucket",
        "s3:HeadBucket",
        "s3:GetObject",
        "iam:GetRole",
        "sagemaker:*",
    ]
    policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": allowed, "Resource": "*"}]}
    iam.put_user_policy(UserName="reader", PolicyName="read", PolicyDocument=json.dumps(policy))
    key = iam.create_access_key(UserName="reader")["AccessKey"]
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", key["AccessKeyId"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", key["SecretAccessKey"])
    _moto_auth(iam_aws, "0")  # from now on every request is authorised against IAM
    yield
    _moto_auth(iam_aws, "inf")


def _moto_auth(aws: LoopbackAws, count: str) -> None:
    """moto's switch for IAM enforcement: after ``count`` more requests (docs.getmoto.org, IAM-like Access Control)."""
    url = f"{aws.env['AWS_ENDPOINT_URL_S3']}/moto-api/reset-auth"
    # A text body: werkzeug reads a form-encoded one (urllib's default) as a form, not as data.
    request = urllib.request.Request(
        url, data=count.encode(), method="POST", headers={"Content-Type": "text/plain"}
    )
    urllib.request.urlopen(request).close()


def test_sagemaker_denied_write_fails_with_the_grant(read_only_caller: None) -> None:
    checks = sagemaker_check()
    assert statuses(checks)["credentials"] == statuses(checks)["bucket"] == "ok"
    write = line(checks, "write")
    assert write.status == "fail"
    assert write.detail.startswith("AWS PutObject failed: AccessDenied")
    assert (
        write.fix
        == "Grant the caller s3:PutObject and s3:DeleteObject on arn:aws:s3:::my-bucket/binary-classifier*"
    )


def test_cli_check_sagemaker_json(iam_aws: LoopbackAws, run_cli: Callable[..., Any]) -> None:
    code, out, _ = run_cli("check", str(EXAMPLE), "-p", "sagemaker", "--json")
    rows = json.loads(out)
    assert code == 0
    assert [row["check"] for row in rows] == [
        "credentials",
        "region",
        "bucket",
        "write",
        "role",
        "sagemaker-api",
        "quota",  # with a job: its instance type's training quota
    ]
    assert {row["status"] for row in rows if row["check"] != "quota"} == {"ok"}
    # no Service Quotas value for it on the fake: not checked, a warning, never a failure
    assert [row["status"] for row in rows if row["check"] == "quota"] == ["warn"]
