"""Bucket URIs are held to their store's own naming rule (catalog/bucket_rules.csv)."""

from __future__ import annotations

import doctest

import pytest

from cloudtrain import buckets

VALID = [
    "gs://my-bucket/path",  # the usual
    "gs://my_bucket",  # Cloud Storage takes underscores
    "gs://a.b.c/x",  # dotted
    "gs://" + "a" * 63 + "/x",  # the longest without dots
    "gs://" + ".".join(["a" * 63] * 3) + "/x",  # dotted, 191 characters
    "s3://my-bucket/path",
    "s3://my.bucket.2024",  # dots are allowed on S3
]
INVALID = [
    ("gs://192.168.5.4/x", "Cloud Storage"),  # an IP address
    ("gs://ab/x", "Cloud Storage"),  # too short
    ("gs://My-Bucket", "Cloud Storage"),  # upper case
    ("gs://googbucket", "Cloud Storage"),  # reserved prefix
    ("gs://my-google-data", "Cloud Storage"),  # 'google' inside
    ("gs://-bucket", "Cloud Storage"),  # starts with '-'
    ("gs://" + "a" * 64, "Cloud Storage"),  # too long without dots
    ("gs://" + "a" * 64 + ".b", "Cloud Storage"),  # a part over 63
    ("s3://my_bucket", "Amazon S3"),  # S3 takes no underscore
    ("s3://10.0.0.1", "Amazon S3"),  # an IP address
    ("s3://a..b", "Amazon S3"),  # two dots
    ("s3://xn--bucket", "Amazon S3"),  # reserved prefix
    ("s3://bucket-s3alias", "Amazon S3"),  # reserved suffix
    ("s3://bucket--x-s3", "Amazon S3"),  # a directory bucket's suffix
]


@pytest.mark.parametrize("uri", VALID)
def test_names_the_store_allows_pass(uri: str) -> None:
    assert buckets.uri_problem(uri) is None


@pytest.mark.parametrize(("uri", "service"), INVALID)
def test_names_the_store_refuses_give_its_rule(uri: str, service: str) -> None:
    problem = buckets.uri_problem(uri)
    assert problem is not None
    assert f"not a valid {service} bucket name; use 3-63 lowercase letters" in problem
    assert "not an IP address" in problem


def test_a_scheme_without_a_rule_gets_the_shape_every_store_shares() -> None:
    assert buckets.uri_problem("toy://ok-bucket/x") is None
    assert "use 3-63 lowercase letters" in (buckets.uri_problem("toy://A") or "")


def test_every_rule_is_sourced() -> None:
    assert set(buckets.rules()) == {"gs://", "s3://"}
    assert all(rule.source.startswith("https://") for rule in buckets.rules().values())


def test_doctests() -> None:
    assert doctest.testmod(buckets).failed == 0
