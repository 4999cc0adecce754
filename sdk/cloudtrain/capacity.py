"""How a job gets its machines: one capacity mode, whatever the provider.

When on-demand accelerators are gone, each cloud sells a way to wait for them or to hold
them, each spelt its own way. ``resources.capacity`` names the way once, and each
provider renders it natively or refuses it with what it offers instead
(``catalog/capacity.csv``, the provider's ``check``):

===========  ======================================================================
on_demand    the default: machines now, at the on-demand rate
spot         spare capacity at the spot rate; the provider may take it back
flex         queue until every machine is free at once, then run (a flex-start
             scheduler); ``max_wait`` bounds the wait
reservation  capacity reserved and paid for ahead; ``name`` it, or ``any``
plan         capacity bought ahead for a time window (a training plan); its ``arn``
queue        a team queue that holds the job until its turn; ``name`` it
===========  ======================================================================

``shapes`` lists fallback machine types, tried in order, where the provider takes such a
list natively.

How long a submitted job may wait to start is ``limits.max_pending``: one setting for
every mode, read through ``max_pending_s`` (``cloudtrain.provider.pending`` enforces it).

Example:
>>> Capacity.of("flex").mode, Capacity.of({"mode": "reservation", "name": "any"}).name
('flex', 'any')
>>> max_pending_s(None, Capacity(mode="queue")), max_pending_s(None, Capacity()), max_pending_s(30, Capacity())
(0, 600, 30)
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, JsonValue, model_validator
from pydantic_core import PydanticCustomError

from cloudtrain.messages import quote
from cloudtrain.sections import Section, Text, Wait

Mode = Literal["on_demand", "spot", "flex", "reservation", "plan", "queue"]
MODES: tuple[str, ...] = Mode.__args__  # type: ignore[attr-defined]
# The modes made to wait: a job in one is expected to sit queued, for as long as it takes.
WAITING_MODES = ("flex", "plan", "queue")
# limits.max_pending when the spec gives none and the mode is not made to wait.
DEFAULT_MAX_PENDING_S = 600
# Which options each mode takes: an option given to another mode would silently do nothing.
OPTIONS = {
    "max_wait": ("flex",),
    "name": ("reservation", "queue"),
    "arn": ("plan",),
    "reserved_machine": ("reservation",),
    "shapes": ("on_demand",),
}
REQUIRED = {"reservation": "name", "plan": "arn"}


class Capacity(Section):
    """How the job gets its machines: the mode and its options.

    Written as the mode alone (``capacity: flex``) or as a mapping with its options
    (``capacity: {mode: flex, max_wait: 6h}``).
    """

    mode: Mode = Field(
        "on_demand",
        description="on_demand, spot, flex (wait for every machine at once), reservation, plan (a "
        "training plan) or queue (a team queue).",
        examples=["flex"],
    )
    max_wait: Wait | None = Field(
        None,
        description="flex: how long the provider waits for the machines before giving up, e.g. 6h; 0 waits "
        "for ever. Default: the provider's (Vertex AI: 24h).",
        examples=["6h"],
        json_schema_extra={"default": None},
    )
    name: Text | None = Field(
        None,
        description="reservation: the reservation (Vertex AI: projects/P/zones/Z/reservations/NAME), or any; "
        "queue: the queue (a Kueue LocalQueue, an AWS Batch job queue). Default queue: the provider "
        "section's queue.",
        examples=["team-a", "any"],
    )
    arn: Text | None = Field(
        None,
        description="plan: the SageMaker training plan's ARN "
        "(arn:aws:sagemaker:REGION:ACCOUNT:training-plan/NAME).",
        json_schema_extra=lambda schema: schema.update(examples=list[JsonValue](examples("plan"))),
    )
    reserved_machine: Text | None = Field(
        None,
        description="reservation: the machine type the reservation holds, when known; validate refuses a "
        "job whose machine differs, which the reservation would not serve.",
        examples=["a2-highgpu-8g"],
    )
    shapes: list[Text] = Field(
        default_factory=list,
        max_length=4,
        description="Fallback machine types, tried in order after the planned one where the provider "
        "takes such a list (SageMaker InstancePreferences): same devices per host.",
        examples=[["ml.g6.12xlarge"]],
    )

    @classmethod
    def of(cls, value: Any) -> Capacity:
        """The capacity ``value`` says: a mode alone, a mapping, or a ``Capacity``."""
        if isinstance(value, Capacity):
            return value
        return cls(**mode_alone(value))

    @property
    def waits(self) -> bool:
        """Whether the mode is made to wait (flex, plan, queue)."""
        return self.mode in WAITING_MODES

    @model_validator(mode="after")
    def _options_of_the_mode(self) -> Capacity:
        for option, modes in OPTIONS.items():
            if self.mode not in modes and getattr(self, option):
                raise PydanticCustomError(
                    "capacity_option",
                    "{option} applies to capacity mode {modes}, not {mode}. Remove {option}, or set mode: {first}",
                    {
                        "option": option,
                        "modes": " or ".join(modes),
                        "mode": quote(self.mode),
                        "first": modes[0],
                    },
                )
        needed = REQUIRED.get(self.mode)
        if needed and not getattr(self, needed):
            raise PydanticCustomError(
                "capacity_option",
                "capacity mode {mode} needs {option}, e.g. capacity: {example}",
                {"mode": self.mode, "option": needed, "example": _EXAMPLES[needed]},
            )
        return self


_EXAMPLES = {"name": "{mode: reservation, name: any}", "arn": "{mode: plan, arn: <the plan's ARN>}"}


def examples(mode: str) -> list[str]:
    """The providers' examples of ``mode``'s option, from ``catalog/capacity.csv``.

    >>> examples("plan")[0].rsplit("/", 1)[-1]
    'p5-week'
    """
    from cloudtrain import catalog

    return list(
        dict.fromkeys(
            row["example"] for row in catalog.rows("capacity.csv") if row["mode"] == mode and row["example"]
        )
    )


def mode_alone(value: Any) -> Any:
    """``capacity: flex`` as the mapping ``{mode: flex}``; anything else as written.

    >>> mode_alone("flex"), mode_alone({"mode": "spot"})
    ({'mode': 'flex'}, {'mode': 'spot'})
    """
    return {"mode": value} if isinstance(value, str) else value


def with_spot(data: dict[str, Any], spot: bool) -> dict[str, Any]:
    """Resources ``data`` whose ``spot`` and ``capacity`` agree; ``spot: true`` is ``capacity: spot``.

    ``spot`` is the value ``data["spot"]`` reads as. A pair that disagrees (``spot: true``
    with ``capacity: flex``, ``spot: false`` with ``capacity: spot``) is an error naming both.

    >>> with_spot({"spot": True}, True)
    {'spot': True, 'capacity': {'mode': 'spot'}}
    >>> with_spot({"capacity": "spot"}, False)["spot"]
    True
    """
    if "capacity" not in data:
        return {**data, "capacity": {"mode": "spot"}} if spot else data
    mode = _mode_of(data["capacity"])
    if "spot" in data and mode is not None and spot != (mode == "spot"):
        raise PydanticCustomError(
            "capacity_spot",
            "spot: {spot} and capacity: {mode} ask for two capacity modes. Keep one: spot: true is "
            "the same as capacity: spot",
            {"spot": str(spot).lower(), "mode": mode},
        )
    return {**data, "spot": mode == "spot"} if mode is not None else data


# What pydantic's lax bool reads as true or false (pydantic-core, src/input/shared.rs, str_as_bool).
_TRUE = {"1", "on", "t", "true", "y", "yes"}
_FALSE = {"0", "off", "f", "false", "n", "no"}


def read_bool(value: Any) -> bool | None:
    """``value`` as a bool field reads it; None when it is no bool (the field's own check says so).

    No pydantic adapter is built for it: building one looks for pydantic plugins in every
    installed package, which the command line keeps off its start-up.

    >>> read_bool(True), read_bool("yes"), read_bool(0), read_bool("maybe")
    (True, True, False, None)
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        text = value.lower()
        return True if text in _TRUE else False if text in _FALSE else None
    return None


def _mode_of(capacity: Any) -> str | None:
    """The mode ``capacity`` asks for as written, or None when it cannot be read (its own check reports it)."""
    if isinstance(capacity, Capacity):
        return capacity.mode
    written = mode_alone(capacity)
    mode = written.get("mode", "on_demand") if isinstance(written, dict) else None
    return mode if mode in MODES else None


def max_pending_s(max_pending: int | None, capacity: Capacity) -> int:
    """How long a submitted job may wait to start, in seconds; 0: for ever.

    ``limits.max_pending`` when given; else the wait the mode is made for (flex: its
    ``max_wait``, after which the provider itself gives up; plan and queue: for ever),
    and ``DEFAULT_MAX_PENDING_S`` for the rest.
    """
    if max_pending is not None:
        return max_pending
    if capacity.mode == "flex":
        return capacity.max_wait or 0
    return 0 if capacity.waits else DEFAULT_MAX_PENDING_S


def capacity_schema(field_schema: dict[str, Any]) -> None:
    """The JSON Schema of ``resources.capacity``: the mode alone, or the mapping.

    pydantic writes the model's reference; editors must also accept ``capacity: flex``.
    """
    field_schema["anyOf"] = [{"type": "string", "enum": list(MODES)}, {"$ref": field_schema.pop("$ref")}]
