"""``cloudtrain check --provider vertex``: what the first submit needs, checked before it.

The lines, in the order a submit meets them:

- ``credentials``: Application Default Credentials, found as every Google library finds
  them (``google.auth.default``: ``$GOOGLE_APPLICATION_CREDENTIALS``, gcloud's
  application-default file, the metadata server), and whose they are;
- ``project`` and ``region``: the job's settings, and where each came from;
- ``bucket`` and ``write``: the storage root's bucket exists, and an empty probe object
  can be written under the root and deleted (``objects.insert``, ``objects.delete``);
- ``vertex-api``: Vertex AI answers ``ListCustomJobs`` (page size 1) in the region,
  which needs the API enabled and the caller allowed to use it.

Every call goes through the backend's own ``with_retries``, so a failure reads as
submit's would: Google's words as the detail, and the backend's advice for that call and
status (``clients.ADVICE``) as the fix. Without credentials the network lines are not
run, and show as skipped with why: each would fail for the same reason. Building the
JobService client for a test endpoint (``CLOUDTRAIN_VERTEX_ENDPOINT``) needs no
credentials, but this check still looks for them, as a real submit needs them.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cloudtrain.errors import CloudtrainError, CredentialsError, MissingDependencyError
from cloudtrain.providers.vertex.clients import (
    ADC_FIX,
    STORAGE_API,
    ApiCall,
    GoogleCallError,
    VertexClients,
    advice,
    require_google,
    summary,
    with_retries,
)
from cloudtrain.providers.vertex.discover import config_dir
from cloudtrain.providers.vertex.settings import VertexSettings
from cloudtrain_runtime.diagnosis import FAIL, OK, Check, skipped

if TYPE_CHECKING:
    from cloudtrain.sources import Sources
    from cloudtrain.spec import JobSpec

# The scope every Google Cloud API accepts (google-auth: "cloud-platform" for ADC).
CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
# Where `gcloud auth application-default login` writes the user's credentials (gcloud topic
# configurations; google.auth._cloud_sdk.get_application_default_credentials_path).
ADC_FILE = "application_default_credentials.json"
PROBE_NAME = ".cloudtrain-check-{token}"
TIMEOUT_S = 30.0
# A check's fix is one line of the report.
LOGIN_FIX = " ".join(ADC_FIX.split())


@dataclass(frozen=True)
class Found:
    """What ``google.auth.default`` found: the line to print, and the project the credentials name."""

    check: Check
    project: str | None = None


def check_setup(
    spec: JobSpec,
    sources: Sources,
    *,
    clients: VertexClients | None = None,
    environ: Mapping[str, str] | None = None,
) -> list[Check]:
    """The Vertex AI lines for ``spec``; ``clients`` and ``environ`` are injectable for tests."""
    try:
        require_google()
    except MissingDependencyError as missing:
        return [Check("libraries", FAIL, "the Google Cloud libraries are not installed", str(missing))]
    clients = clients or VertexClients()
    found = credentials_check(os.environ if environ is None else environ)
    settings = [project_check(spec, sources, found.project), region_check(spec, sources)]
    if found.check.status == FAIL:
        return [found.check, *settings, *skipped(("bucket", "write", "vertex-api"), "no credentials")]
    project, region = VertexSettings.of(spec).project, VertexSettings.of(spec).region
    root = VertexSettings.of(spec).storage_root or spec.storage.root
    return [
        found.check,
        *settings,
        *storage_checks(root, project, clients, region=region),
        api_check(project, region, clients),
    ]


def credentials_check(environ: Mapping[str, str]) -> Found:
    """Application Default Credentials: whose, and from where; the fix when there are none."""
    import google.auth
    from google.auth import exceptions as auth_exceptions

    try:
        credentials, project = google.auth.default(scopes=[CLOUD_PLATFORM_SCOPE])
    except auth_exceptions.DefaultCredentialsError as exc:
        return Found(
            Check("credentials", FAIL, f"no Application Default Credentials: {summary(exc)}", LOGIN_FIX)
        )
    detail = f"{whose(credentials)}, from {adc_source(environ)}"
    return Found(Check("credentials", OK, detail), project)


def whose(credentials: Any) -> str:
    """The identity the credentials act as, as far as they say without a network call."""
    email = getattr(credentials, "service_account_email", None)
    if email and email != "default":  # the metadata server's "default" until it is asked
        return f"service account {email}"
    account = getattr(credentials, "account", "")
    return f"user {account}" if account else f"{type(credentials).__module__}.{type(credentials).__name__}"


def adc_source(environ: Mapping[str, str]) -> str:
    """Where google.auth found them, in its order: the variable, gcloud's file, the metadata server."""
    if environ.get("GOOGLE_APPLICATION_CREDENTIALS"):
        return f"GOOGLE_APPLICATION_CREDENTIALS ({environ['GOOGLE_APPLICATION_CREDENTIALS']})"
    gcloud_file = config_dir(environ) / ADC_FILE
    return str(gcloud_file) if Path(gcloud_file).is_file() else "the metadata server"


def project_check(spec: JobSpec, sources: Sources, adc_project: str | None) -> Check:
    """The project jobs are created in, and where it came from."""
    project = VertexSettings.of(spec).project
    if project is not None:
        return Check("project", OK, f"{project} (from {sources.label('vertex.project')})")
    named = f" (the credentials name {adc_project})" if adc_project else ""
    return Check(
        "project",
        FAIL,
        f"no Google Cloud project is set{named}",
        "Set vertex.project in the spec or your profile, or run: gcloud config set project PROJECT",
    )


def region_check(spec: JobSpec, sources: Sources) -> Check:
    return Check("region", OK, f"{VertexSettings.of(spec).region} (from {sources.label('vertex.region')})")


def storage_checks(root: str, project: str | None, clients: VertexClients, *, region: str) -> list[Check]:
    """The bucket of ``root`` exists in the job's ``region``, and a probe object under ``root`` can be written and deleted."""
    if not root.startswith("gs://"):
        return [
            Check(
                "bucket",
                FAIL,
                f"the storage root {root!r} is not a gs:// URI",
                "Set vertex.storage_root (or storage.root) to gs://BUCKET/PATH, in the spec or your profile.",
            ),
            *skipped(["write"], "no gs:// bucket to write to"),
        ]
    name, _, prefix = root.removeprefix("gs://").partition("/")
    bucket_call = ApiCall(
        f"get gs://{name}", "buckets.get", STORAGE_API, project or "", resource=f"gs://{name}"
    )
    try:
        client = clients.storage_client(project)
        # retry=None: with_retries retries, waiting through ``sleep``, not google-cloud-storage.
        bucket = with_retries(
            lambda: client.get_bucket(name, retry=None, timeout=TIMEOUT_S), bucket_call, sleep=clients.sleep
        )
    except CloudtrainError as error:
        return [failed("bucket", error, bucket_call), *skipped(["write"], "the bucket check failed")]
    return [location_check(name, bucket.location or "", region), write_check(bucket, prefix, clients.sleep)]


def location_check(name: str, location: str, region: str) -> Check:
    """The bucket is in the job's region, as Vertex AI requires: a multi-region or another region is refused.

    Vertex AI answers a job whose bucket is elsewhere with FAILED_PRECONDITION "The Cloud
    Storage bucket of gs://... is in location `us`. It must be in the same regional location
    as the service location" (github.com/googleapis/python-aiplatform/issues/885).
    """
    if not location or location.lower() == region.lower():
        where = f" in {location}" if location else ""
        return Check("bucket", OK, f"gs://{name} exists{where}")
    return Check(
        "bucket",
        FAIL,
        f"gs://{name} is in {location}, the job runs in {region}: Vertex AI needs the bucket in the job's region",
        f"Use a bucket in {region} for vertex.storage_root (or the placement candidate's storage_root): "
        f"gcloud storage buckets create gs://BUCKET --location {region}",
    )


def write_check(bucket: Any, prefix: str, sleep: Callable[[float], None]) -> Check:
    """Write an empty probe object under the root and delete it: what a job's outputs need."""
    key = "/".join(
        part for part in (prefix.strip("/"), PROBE_NAME.format(token=secrets.token_hex(4))) if part
    )
    uri = f"gs://{bucket.name}/{key}"
    blob = bucket.blob(key)
    write = ApiCall(f"write {uri}", "objects.insert", STORAGE_API, resource=f"gs://{bucket.name}")
    delete = ApiCall(f"delete {uri}", "objects.delete", STORAGE_API, resource=f"gs://{bucket.name}")
    try:
        with_retries(lambda: blob.upload_from_string(b"", retry=None, timeout=TIMEOUT_S), write, sleep=sleep)
    except CloudtrainError as error:
        return failed("write", error, write)
    try:
        with_retries(lambda: blob.delete(retry=None, timeout=TIMEOUT_S), delete, sleep=sleep)
    except CloudtrainError as error:
        return failed("write", error, delete)
    return Check("write", OK, f"wrote and deleted {uri}")


def api_check(project: str | None, region: str, clients: VertexClients) -> Check:
    """Vertex AI answers in the region: one custom job listed."""
    if project is None:
        return Check("vertex-api", FAIL, "not checked: no project", "Set vertex.project first.")
    parent = f"projects/{project}/locations/{region}"
    call = ApiCall(f"list custom jobs in {parent}", "ListCustomJobs", project=project, region=region)
    try:
        service = clients.job_service(region)
        with_retries(
            lambda: service.list_custom_jobs(request={"parent": parent, "page_size": 1}, timeout=TIMEOUT_S),
            call,
            sleep=clients.sleep,
        )
    except CloudtrainError as error:
        return failed("vertex-api", error, call)
    return Check("vertex-api", OK, f"Vertex AI answers in {region} (ListCustomJobs)")


def failed(name: str, error: CloudtrainError, call: ApiCall) -> Check:
    """A fail line for a call: Google's words as the detail, the backend's advice for them as the fix."""
    raw = error.__cause__
    if isinstance(error, GoogleCallError) and isinstance(raw, Exception):
        fix = advice(call, error.code, error.cause, raw) or None
        return Check(name, FAIL, f"could not {call.action}: {summary(raw)} ({error.code})", fix)
    if isinstance(error, CredentialsError):
        return Check(name, FAIL, f"could not {call.action}: the credentials were refused", LOGIN_FIX)
    return Check(name, FAIL, str(error))
