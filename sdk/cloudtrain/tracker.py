"""The ``tracking:`` section of a job spec: the experiment tracker every run is logged to.

Off by default. ``tracking: mlflow`` (or a mapping with ``kind: mlflow``) logs each run,
all of its attempts together, as one MLflow run (``cloudtrain.tracking``, and the runtime's
``cloudtrain_runtime.tracking``). The tracking URI is any MLflow store: a server URL, a
SQLite file, ``databricks``, a managed MLflow ARN. When the spec names none it comes from
``submit --tracking URI``, else ``MLFLOW_TRACKING_URI`` (``cloudtrain.defaults``).

The URI travels into every replica, so it must hold no credential: a server's user name
and password, or a token, come from the replica's own environment or identity
(``MLFLOW_TRACKING_USERNAME``/``MLFLOW_TRACKING_PASSWORD`` set by the provider's secret
manager, a Databricks profile, the job's AWS role for an ARN).

Example:
>>> Tracking(uri="http://127.0.0.1:5000").experiment_for("churn-model")
'churn-model'
>>> tracking_shorthand("mlflow")
{'kind': 'mlflow'}
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar, Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator
from pydantic_core import PydanticCustomError

from cloudtrain.messages import quote
from cloudtrain.sections import Section, Text

KINDS = ("mlflow",)
# MLflow's own variable for the tracking URI (mlflow/environment_variables.py).
URI_ENV = "MLFLOW_TRACKING_URI"
# The stores MLflow's tracking client opens (mlflow/tracking/_tracking_service/utils.py,
# mlflow-skinny 3.18: _register_tracking_stores), and ``arn`` for a managed
# tracking server (the sagemaker-mlflow plugin's entry point).
URI_SCHEMES = (
    "http",
    "https",
    "file",
    "sqlite",
    "postgresql",
    "mysql",
    "mssql",
    "databricks",
    "databricks-uc",
    "arn",
)
# What MLflow takes as a tag key (mlflow/utils/validation.py: _validate_tag_name, 250 characters).
_TAG_KEY = re.compile(r"[\w./ -]{1,250}")
# The tag names cloudtrain sets itself; a spec's tag may not take them.
RESERVED_TAG_PREFIX = "cloudtrain."


class Tracking(Section):
    """Where a run's parameters, per-epoch metrics, cost and model location are logged (MLflow)."""

    scanned_fields: ClassVar[frozenset[str]] = frozenset({"tags", "uri"})

    kind: Literal["mlflow"] = Field("mlflow", description="The tracker: mlflow.", examples=["mlflow"])
    uri: Text | None = Field(
        None,
        description="The MLflow tracking URI: a server (http://host:5000), a SQLite file (sqlite:///mlflow.db), "
        "databricks, or a SageMaker managed MLflow ARN. Never credentials: a replica reads them from its own "
        "environment or identity. Default: submit --tracking URI, else MLFLOW_TRACKING_URI.",
        examples=["http://127.0.0.1:5000", "sqlite:////srv/mlflow.db", "databricks"],
    )
    experiment: Text | None = Field(
        None,
        description="The MLflow experiment the run goes to, created when missing. Default: the spec's name.",
        examples=["churn"],
    )
    tags: dict[str, str] = Field(
        default_factory=dict,
        description="Tags set on the MLflow run (never secrets); cloudtrain.* names are cloudtrain's own.",
        examples=[{"team": "growth"}],
    )
    log_model: bool = Field(
        False,
        description="Also log the exported SavedModel as an MLflow model (copies it to the artifact store). "
        "Default: only its URI is logged.",
        examples=[True],
    )

    @field_validator("uri")
    @classmethod
    def _store_uri(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = urlsplit(value)
        # ``databricks`` alone is a URI to MLflow: the default Databricks profile.
        scheme = (parts.scheme or value).split("+")[0]
        if scheme not in URI_SCHEMES:
            raise PydanticCustomError(
                "tracking_uri",
                "{value} is not an MLflow tracking URI; use a server URL (http://host:5000), "
                "sqlite:///path/mlflow.db, databricks or a managed MLflow ARN",
                {"value": quote(value)},
            )
        if parts.username or parts.password:
            raise PydanticCustomError(
                "tracking_credentials",
                "holds a user name or password (the value is not shown); remove them: replicas read "
                "MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD from their own environment",
            )
        return value

    @field_validator("tags")
    @classmethod
    def _tag_names(cls, value: dict[str, str]) -> dict[str, str]:
        for key in value:
            if not _TAG_KEY.fullmatch(key):
                raise PydanticCustomError(
                    "tag_key",
                    "{key} is not an MLflow tag name; use letters, digits, '_', '-', '.', ' ' and '/'",
                    {"key": quote(key)},
                )
            if key.startswith(RESERVED_TAG_PREFIX):
                raise PydanticCustomError(
                    "tag_reserved",
                    "{key} is a name cloudtrain sets (cloudtrain.*); choose another",
                    {"key": quote(key)},
                )
        return value

    def experiment_for(self, name: str) -> str:
        """The experiment of a spec named ``name``: the one written, else the spec's name."""
        return self.experiment or name


def expanded(data: Mapping[str, Any]) -> Mapping[str, Any]:
    """Spec data whose ``tracking: mlflow`` is written out as a mapping, so ``--set tracking.uri=...``,
    ``--tracking`` and ``MLFLOW_TRACKING_URI`` can fill its fields; other data as it is.

    Example:
    >>> expanded({"name": "demo", "tracking": "mlflow"})
    {'name': 'demo', 'tracking': {'kind': 'mlflow'}}
    """
    written = data.get("tracking")
    if isinstance(written, str) and written in KINDS:
        return {**data, "tracking": tracking_shorthand(written)}
    return data


def uri_default(data: Mapping[str, Any], environ: Mapping[str, str]) -> dict[str, str]:
    """``tracking.uri`` from ``MLFLOW_TRACKING_URI``, for spec data that turns tracking on and names
    no URI; else nothing.

    The variable alone never turns tracking on: a shell that exports it for other tools
    logs nothing of cloudtrain's runs until the spec or ``--tracking`` asks.

    Example:
    >>> uri_default({"tracking": {"kind": "mlflow"}}, {URI_ENV: "http://127.0.0.1:5000"})
    {'tracking.uri': 'http://127.0.0.1:5000'}
    """
    written = data.get("tracking")
    if isinstance(written, Mapping) and "uri" not in written and environ.get(URI_ENV):
        return {"tracking.uri": environ[URI_ENV]}
    return {}


def overrides(uri: str | None) -> tuple[str, ...]:
    """``submit --tracking URI`` as the spec fields it sets (``--set`` overrides); none without it.

    Example:
    >>> overrides("http://127.0.0.1:5000")
    ('tracking.kind=mlflow', 'tracking.uri=http://127.0.0.1:5000')
    """
    return () if uri is None else ("tracking.kind=mlflow", f"tracking.uri={uri}")


def tracking_shorthand(value: Any) -> Any:
    """``tracking: mlflow`` as the mapping it stands for; any other word is refused with the forms allowed.

    Example:
    >>> tracking_shorthand({"uri": "databricks"})
    {'uri': 'databricks'}
    """
    if not isinstance(value, str):
        return value
    if value in KINDS:
        return {"kind": value}
    raise PydanticCustomError(
        "tracking",
        "{value} is not a tracker; write tracking: mlflow, or a mapping with kind: mlflow "
        "and uri: http://host:5000",
        {"value": quote(value)},
    )
