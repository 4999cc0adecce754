"""Credentials are recognised by shape, and an ``env`` value holding one is refused without being shown.

Token-shaped values are built by concatenation so this file holds no literal that
secret scanners would flag.
"""

from __future__ import annotations

import doctest
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from cloudtrain import scanning, secrets
from cloudtrain.errors import SpecError
from cloudtrain.spec import JobSpec
from cloudtrain.specfile import parse_spec
from tests.conftest import Result

RunCli = Callable[..., Result]
PEM_KEY = "-----BEGIN " + "PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n"
SA_KEY = json.dumps(
    {"type": "service_account", "project_id": "p", "private_key": PEM_KEY, "client_email": "t@p.iam"}
)
FIX = (
    "Never put secrets in a job spec: keep it in the provider's secret manager, or grant the job's "
    "identity (vertex.service_account or sagemaker.role) access instead."
)

CREDENTIAL_VALUES = [
    ("ghp_" + "a1B2c3D4e5" * 4, "a GitHub token"),  # classic personal access token: ghp_ + 36
    ("gho_" + "Z9y8X7w6V5" * 4, "a GitHub token"),  # OAuth app token
    ("github_pat_" + "11AB2CD3E0" + "_" + "x1Y2z3W4v5" * 6, "a GitHub token"),  # fine-grained token
    ("Bearer ghp_" + "a1B2c3D4e5" * 4, "a GitHub token"),  # inside a longer value
    ("xoxb-" + "123456789012-1234567890123-" + "AbCdEfGh" * 3, "a Slack token"),  # bot token
    ("xoxp-" + "123456789012-1234567890123-" + "AbCdEfGh" * 4, "a Slack token"),  # user token
    ("AKIA" + "IOSFODNN7EXAMPLE", "an AWS access key"),  # long-term key ID: AKIA + 16
    ("ASIA" + "IOSFODNN7EXAMPLE", "an AWS access key"),  # temporary (STS) key ID
    # regression: a secret access key (the AWS documentation's example) passed under AWS_SAK
    ("wJalrXUtnFEMI/" + "K7MDENG/bPxRfiCYEXAMPLEKEY", scanning.RANDOM_TOKEN),
    ("hf_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567", "a Hugging Face token"),  # regression: hf_ + 34 passed
    ("eyJhbGciOiJIUzI1NiJ9." + "eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlLXZhbHVl", "a JSON Web Token"),
    ("sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc", "a secret detect-secrets calls 'Stripe Access Key'"),
    ("AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q", "a Google API key"),  # AIza + 35
    ("sk-" + "A1b2C3d4E5" * 4 + "f6G7h8I9", "a secret API key"),  # sk- + 48
    ("sk-proj-" + "Ab1_Cd2-" * 12, "a secret API key"),  # project-scoped sk- key
    ("glpat-" + "A1b2C3d4E5f6G7h8I9j0", "a GitLab token"),  # GitLab personal access token
    ("postgres://admin:" + "hunter2@db.internal:5432/app", "a URL with a password"),  # user and password
    ("redis://:" + "hunter2@cache:6379/0", "a URL with a password"),  # password without a user
    ("https://deploy:" + "t0ken@git.example.com/repo.git", "a URL with a password"),  # HTTPS basic auth
    (PEM_KEY, "a private key (PEM)"),  # a private key
    ("-----BEGIN " + "OPENSSH PRIVATE KEY-----\nb3Blbg==", "a private key (PEM)"),  # an SSH key
    (SA_KEY, "a service-account key (JSON)"),  # a service-account key file's content
]
NEAR_MISSES = [
    "postgres://db.internal:5432/app",  # no user, no password
    "postgres://admin@db.internal/app",  # a user, no password
    "https://example.com:8443/path?next=a:b@c",  # a port; '@' only after the path
    "s3://bucket/key:with@sign",  # ':' and '@' inside the key
    "gs://my-bucket/data/train",  # a bucket
    "sk-learn",  # too short for a key
    "sk-learn-gradient-boosting-classifier",  # long, but words without a digit
    "task-" + "abcdefghij1" * 4,  # "sk-" inside a word
    "ghp_short",  # too short for a token
    "AKIA1234",  # too short for a key ID
    "0123456789abcdef0123456789abcdef01234567",  # a commit hash
    '{"type": "service_account", "client_email": "t@p.iam"}',  # no private key
    "offline",  # an ordinary setting
    "123e4567-e89b-12d3-a456-426614174000",  # a UUID (detect-secrets' own filter)
    "EleutherAI/gpt-neo-125M",  # a model name
    "us-docker.pkg.dev/my-project/train/cloudtrain-gpu@sha256:" + "9f86d081884c7d65" * 4,  # a digest
    "-----BEGIN " + "CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",  # a certificate is public
    "",  # empty
]


@pytest.mark.parametrize(("value", "kind"), CREDENTIAL_VALUES)
def test_credential_shapes_are_recognised(value: str, kind: str) -> None:
    assert secrets.value_kind(value) == kind


@pytest.mark.parametrize("value", NEAR_MISSES)
def test_near_misses_are_not_credentials(value: str) -> None:
    assert secrets.value_kind(value) is None
    assert parse_spec(_spec({"SETTING": value})).env == {"SETTING": value}


@pytest.mark.parametrize(("value", "kind"), CREDENTIAL_VALUES)
def test_an_env_credential_is_refused_and_never_shown(value: str, kind: str) -> None:
    with pytest.raises(SpecError) as raised:
        parse_spec(_spec({"SETTING": value}))
    assert raised.value.problems == [f"env: 'SETTING' holds {kind} (the value is not shown). {FIX}"]
    assert value not in str(raised.value)
    assert value not in repr(raised.value)


def test_building_the_spec_in_python_never_shows_the_value() -> None:
    value = "postgres://admin:" + "hunter2@db/app"
    with pytest.raises(ValueError, match=r"holds a URL with a password \(the value is not shown\)") as raised:
        JobSpec(name="demo", code={"module": "trainer.task"}, env={"DATABASE_URL": value})
    assert "hunter2" not in str(raised.value)
    assert "hunter2" not in repr(raised.value)


@pytest.mark.parametrize("command", [["validate"], ["submit", "--dry-run"], ["render"]])
def test_the_cli_refuses_the_value_without_printing_it(
    command: list[str], run_cli: RunCli, example_job: Path
) -> None:
    value = "postgres://admin:" + "hunter2@db/app"
    result = run_cli(*command, str(example_job), "--set", f"env.DATABASE_URL={value}")
    assert result.code == 2
    assert result.errors == [
        f"env: 'DATABASE_URL' holds a URL with a password (the value is not shown). {FIX}"
    ]
    assert "hunter2" not in result.out + result.err


def test_a_key_in_a_spec_file_is_refused_without_printing_it(tmp_path: Path, run_cli: RunCli) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(
        json.dumps({"name": "demo", "code": {"module": "trainer.task"}, "env": {"GCP_KEY": SA_KEY}})
    )
    result = run_cli("submit", str(job), "--dry-run")
    assert result.code == 2
    assert result.errors == [
        f"env: 'GCP_KEY' holds a service-account key (JSON) (the value is not shown). {FIX}"
    ]
    assert "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" not in result.out + result.err


def test_docstring_examples_run() -> None:
    assert doctest.testmod(secrets).failed == 0
    assert doctest.testmod(scanning).failed == 0


def _spec(env: dict[str, str]) -> dict[str, object]:
    return {"name": "demo", "code": {"module": "trainer.task"}, "env": env}


OWN_SHAPES = {
    "a GitHub token": "github_pat_" + "11AB2CD3E0" + "_" + "x1Y2z3W4v5" * 6,
    "a Google API key": "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
    "a secret API key": "sk-proj-" + "Ab1_Cd2-" * 12,
    "a Hugging Face token": "hf_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567",
    "a URL with a password": "redis://:" + "hunter2@cache:6379/0",
}


@pytest.mark.parametrize(
    ("shape", "what"), secrets.TOKEN_SHAPES, ids=[what for _, what in secrets.TOKEN_SHAPES]
)
def test_each_own_shape_is_one_the_scanner_lacks(shape: object, what: str) -> None:
    value = OWN_SHAPES[what]
    assert secrets.value_kind(value) == what
    assert scanning.detected(value) is None, "detect-secrets finds it: drop the shape"


@pytest.mark.parametrize(
    ("code", "imported"),
    [
        ("load_spec(EXAMPLE)", False),  # an ordinary spec pays nothing for the scanner
        ("load_spec(EXAMPLE, ['env.MODE=offline', 'code.args=[\"--hidden\", \"32\"]'])", False),
        ("load_spec(EXAMPLE, ['env.K=' + 'a1B2c3D4e5' * 3])", True),  # a token-like value is scanned
    ],
)
def test_the_scanner_is_imported_only_for_values_that_could_be_credentials(
    code: str, imported: bool, example_job: Path
) -> None:
    program = (
        "import sys\nfrom cloudtrain.specfile import load_spec\n"
        f"EXAMPLE = {str(example_job)!r}\ntry:\n    {code}\nexcept Exception:\n    pass\n"
        "print('detect_secrets' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == str(imported)
