"""Recognise credentials: by file name, by the first bytes of a file, and in a text value.

The code bundle refuses files that match the first two, whatever the ignore files say
(``cloudtrain.bundle``); the job spec refuses values that match the third (``JobSpec``).
Values and packed files are also scanned by detect-secrets (``cloudtrain.scanning``), a
maintained scanner; the shapes here are only those it lacks, each with a test. Each check
answers with what it found, in words, and never with the secret itself, so a caller can
say why without echoing the value.

Example:
>>> file_name_kind("deploy/id_ed25519")
'an SSH private key'
>>> value_kind("postgres://admin:hunter2@db:5432/app")
'a URL with a password'
>>> value_kind("postgres://db:5432/app") is None
True
"""

from __future__ import annotations

import functools
import re

import pathspec

from cloudtrain import scanning

# File names that hold credentials, as gitignore patterns matched against the lower-cased
# path inside the source folder; each with what it is.
CREDENTIAL_FILES: tuple[tuple[str, str], ...] = (
    ("*-" + "[0-9a-f]" * 12 + ".json", "a service-account key, named as the Cloud console names it"),
    ("key.json", "a service-account key"),
    ("*-key.json", "a service-account key"),
    ("service-account*.json", "a service-account key"),
    ("application_default_credentials.json", "Application Default Credentials"),
    ("credentials.json", "a credentials file"),
    ("*-credentials.json", "a credentials file"),
    ("id_rsa*", "an SSH private key"),
    ("id_ed25519*", "an SSH private key"),
    ("id_ecdsa*", "an SSH private key"),
    ("id_dsa*", "an SSH private key"),
    (".ssh/", "an SSH folder"),
    ("**/.docker/config.json", "Docker registry credentials"),
    ("**/.kube/config", "a Kubernetes config with cluster credentials"),
    (".git-credentials", "stored Git credentials"),
    (".npmrc", "an npm config with auth tokens"),
    (".boto", "a boto config with keys"),
    (".s3cfg", "an s3cmd config with keys"),
    (".envrc", "a direnv file"),
    (".env", "a dotenv file"),
    (".env.*", "a dotenv file"),
    ("terraform.tfstate*", "Terraform state, which holds secrets in plain text"),
    ("*.jks", "a Java keystore"),
    ("*.pfx", "a PKCS #12 keystore"),
    ("*.p12", "a PKCS #12 keystore"),
    ("*.pem", "a PEM key or certificate"),
    ("*.key", "a private key"),
    (".bash_history", "shell history"),
    (".zsh_history", "shell history"),
    (".netrc", "a netrc file with passwords"),
    (".pypirc", "a PyPI config with tokens"),
    ("secrets.y*ml", "a secrets file"),
    ("secrets.json", "a secrets file"),
    ("*.keystore", "a Java or Android keystore"),
    (".pgpass", "a PostgreSQL password file"),
    (".htpasswd", "an Apache password file"),
    ("*.kdbx", "a KeePass password database"),
    (".dockercfg", "Docker registry credentials"),
    (".aws/", "the AWS credentials folder"),
    ("**/.config/gcloud/", "the gcloud credentials folder"),
)


@functools.cache
def _names() -> pathspec.GitIgnoreSpec:
    """The patterns, compiled when a file is first judged: a spec's values never need them."""
    return pathspec.GitIgnoreSpec.from_lines(pattern for pattern, _ in CREDENTIAL_FILES)


# How much of a file ``file_content_kind`` needs: a PEM key or a service-account key
# starts within its first few hundred bytes.
HEAD_BYTES = 4096

_PEM_PRIVATE_KEY = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
# Quotes may be escaped when the JSON sits inside a string (a notebook cell, a YAML value).
_SA_TYPE = re.compile(r'\\?"type\\?"\s*:\s*\\?"service_account\\?"')
_SA_KEY = re.compile(r'\\?"private_key\\?"\s*:')
# What gcloud auth application-default login writes: a refresh token for the user.
_USER_TYPE = re.compile(r'\\?"type\\?"\s*:\s*\\?"authorized_user\\?"')
_USER_TOKEN = re.compile(r'\\?"refresh_token\\?"\s*:')
_AWS_KEY_ID = re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9])")
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
_AWS_SECRET_SETTING = re.compile(r"aws_secret_access_key\s*[=:]\s*[\"']?[A-Za-z0-9/+]{40}", re.IGNORECASE)
# A password with no user (redis://:password@host), which detect-secrets' URL detector needs.
_URL_PASSWORD_ONLY = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://:[^\s/@]+@")

# Token shapes detect-secrets lacks, as their issuers document them; each with what it is.
TOKEN_SHAPES: tuple[tuple[re.Pattern[str], str], ...] = (
    # Fine-grained personal access tokens (github.blog/2022-10-18, "github_pat_" prefix).
    (re.compile(r"(?<![A-Za-z0-9])github_pat_[A-Za-z0-9_]{22,}"), "a GitHub token"),
    # API keys: AIza + 35 (cloud.google.com/docs/authentication/api-keys).
    (re.compile(r"(?<![A-Za-z0-9])AIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])"), "a Google API key"),
    # sk-... keys (OpenAI project keys, Anthropic, ...) are long and random; a digit keeps
    # names like sk-learn-... out.
    (re.compile(r"(?<![A-Za-z0-9-])sk-(?=[A-Za-z0-9_-]*[0-9])[A-Za-z0-9_-]{32,}"), "a secret API key"),
    # User access tokens: hf_ + 34 letters and digits (huggingface.co/docs/hub/security-tokens).
    (re.compile(r"(?<![A-Za-z0-9])hf_[A-Za-z0-9]{30,}"), "a Hugging Face token"),
    (_URL_PASSWORD_ONLY, "a URL with a password"),
)


def file_name_kind(path: str) -> str | None:
    """What credential the file at ``path`` (relative, ``/``-separated) is, by its name, or None.

    Example:
    >>> file_name_kind("keys/my-project-1a2b3c4d5e6f.json")
    'a service-account key, named as the Cloud console names it'
    >>> file_name_kind("trainer/task.py") is None
    True
    """
    found = _names().check_file(path.lower())
    if not found.include or found.index is None:
        return None
    return CREDENTIAL_FILES[found.index][1]


def file_content_kind(head: bytes) -> str | None:
    """What credential a file holds, judged by its first ``HEAD_BYTES`` bytes, or None.

    Example:
    >>> file_content_kind(b"-----BEGIN OPENSSH PRIVATE KEY-----\\nb3BlbnNzaC1r...")
    'a private key (PEM)'
    """
    text = head[:HEAD_BYTES].decode("latin-1")
    if found := _google_key_kind(text):  # before PEM: a service-account key holds one
        return found
    if _PEM_PRIVATE_KEY.search(text):
        return "a private key (PEM)"
    if _AWS_SECRET_SETTING.search(text) or (_AWS_KEY_ID.search(text) and _AWS_SECRET.search(text)):
        return "an AWS secret access key"
    return None


def value_kind(value: str) -> str | None:
    """What credential a text value (an environment variable) holds, or None.

    The shapes here first, then detect-secrets (``cloudtrain.scanning``).

    Example:
    >>> value_kind("hf_" + "a1B2" * 9)
    'a Hugging Face token'
    >>> value_kind("https://example.com:8443/path") is None
    True
    """
    if found := _google_key_kind(value):
        return found
    own = next((what for shape, what in TOKEN_SHAPES if shape.search(value)), None)
    return own or scanning.value_kind(value)


def _google_key_kind(text: str) -> str | None:
    if _SA_TYPE.search(text) and _SA_KEY.search(text):
        return "a service-account key (JSON)"
    if _USER_TYPE.search(text) and _USER_TOKEN.search(text):
        return "a user's refresh token (JSON)"
    return None
