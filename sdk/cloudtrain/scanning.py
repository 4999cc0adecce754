"""Credentials found by detect-secrets, Yelp's maintained secret scanner, loaded only when needed.

detect-secrets knows the shapes of AWS, GitHub, GitLab, Slack, Stripe, npm, PyPI, OpenAI,
Twilio, SendGrid, Mailchimp, Discord, Telegram and more, JSON Web Tokens, private keys
and passwords in URLs, and keeps them current; ``cloudtrain.secrets`` adds only the
shapes it lacks. Its vendor detectors run on a value or a file's first bytes; its
Base64 entropy measure (the plugin's own limit, 4.5 bits per character) judges a
value's whole tokens, so a random key under an innocent name (``AWS_SAK``) is found too.
Hex strings are not judged by entropy (commit hashes and digests are hex, and no secret),
nor are ``key = value`` keywords (``JobSpec.env`` judges the names itself).

Importing detect-secrets takes about 0.15 s (its plugins import ``requests`` for
verification, which cloudtrain never asks for), so it is imported only for text that
could hold a credential (``worth_scanning``): a run of 20 or more letters, digits, '_'
and '-' mixing two of lower case, upper case and digits; a ``user:password@`` URL; or a
PEM header (every vendor detector's shape has one of them); or, for entropy, a whole
token of 20 or more Base64 characters that mixes so. Ordinary settings (``offline``,
``INFO``, ``gs://bucket/data``, ``role/SageMakerTraining``) have none.

Example:
>>> worth_scanning("offline"), worth_scanning("ghp_" + "a1B2c3D4e5" * 4)
(False, True)
>>> value_kind("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
'a random-looking token (by its entropy, as keys are)'
"""

from __future__ import annotations

import functools
import re
from typing import Any

# A run of letters, digits, '_' and '-' as long as the shortest vendor token detect-secrets knows.
_RUN = re.compile(r"[A-Za-z0-9_-]{20,}")
# A token in Base64 or URL-safe Base64, the alphabets random keys are written in.
_TOKEN = re.compile(r"[A-Za-z0-9+/=_-]{20,}")
_URL_PASSWORD = re.compile(r"://[^\s/:@]*:[^\s/@]+@")
_CLASSES = (re.compile(r"[a-z]"), re.compile(r"[A-Z]"), re.compile(r"[0-9]"))
# Detectors left out: entropy is judged here, hex entropy would refuse every commit hash,
# keywords are judged by the spec's own key rule, and an IP address is no credential.
SKIPPED = ("Base64 High Entropy String", "Hex High Entropy String", "Secret Keyword", "Public IP (ipv4)")
# detect-secrets' names for what it found, in cloudtrain's words where they differ.
WORDS = {
    "AWS Access Key": "an AWS access key",
    "Basic Auth Credentials": "a URL with a password",
    "GitHub Token": "a GitHub token",
    "GitLab Token": "a GitLab token",
    "JSON Web Token": "a JSON Web Token",
    "Private Key": "a private key (PEM)",
    "Slack Token": "a Slack token",
}
RANDOM_TOKEN = "a random-looking token (by its entropy, as keys are)"


def worth_scanning(text: str) -> bool:
    """Whether ``text`` could hold a credential a vendor detector knows (see the module docstring)."""
    if "PRIVATE KEY" in text or _URL_PASSWORD.search(text):
        return True
    return any(map(_mixed, _RUN.findall(text)))


def value_kind(value: str) -> str | None:
    """What credential detect-secrets finds in a text value, in words; None when nothing."""
    tokens = [token for token in value.split() if _TOKEN.fullmatch(token) and _mixed(token)]
    if not (tokens or worth_scanning(value)):
        return None
    return detected(value) or (RANDOM_TOKEN if _random_token(tokens) else None)


def _mixed(token: str) -> bool:
    """Whether ``token`` mixes two of lower case, upper case and digits, as generated keys do."""
    return sum(bool(letters.search(token)) for letters in _CLASSES) >= 2


def detected(text: str) -> str | None:
    """What a vendor detector of detect-secrets finds in ``text``, in words; None when nothing."""
    if not worth_scanning(text):
        return None
    for detector in _detectors():
        if next(iter(detector.analyze_string(text)), None) is not None:
            return WORDS.get(detector.secret_type, f"a secret detect-secrets calls {detector.secret_type!r}")
    return None


def _random_token(tokens: list[str]) -> bool:
    """Whether one of ``tokens`` is as random as a key: above the entropy plugin's limit.

    UUIDs and runs like ``ABCDEF...`` are not keys (detect-secrets' own heuristic filters).
    """
    from detect_secrets.filters.heuristic import is_potential_uuid, is_sequential_string

    entropy = _base64_entropy()
    return any(
        entropy.calculate_shannon_entropy(token) > entropy.entropy_limit
        and not is_potential_uuid(token)
        and not is_sequential_string(token)
        for token in tokens
    )


@functools.cache
def _detectors() -> tuple[Any, ...]:
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    found: dict[str, Any] = get_mapping_from_secret_type_to_class()
    return tuple(plugin() for kind, plugin in sorted(found.items()) if kind not in SKIPPED)


@functools.cache
def _base64_entropy() -> Any:
    from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString

    return Base64HighEntropyString()
