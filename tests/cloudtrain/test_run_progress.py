"""A job's progress as status shows it: the steps left, the ETA and the cost to finish."""

from __future__ import annotations

from typing import Any

import pytest

from cloudtrain import run_progress

RECORD = {
    "format": 1,
    "epoch": 3,
    "epochs": 30,
    "step": 120,
    "steps_per_epoch": 400,
    "steps_per_s": 1.42,
    "examples_per_s": 4200.0,
    "loss": 0.41,
    "wall_s": 1800.0,
    "attempt": 1,
    "updated_at": 1000.0,
}


def test_the_eta_is_the_steps_left_at_the_recent_rate_less_the_time_since_the_record() -> None:
    fresh = run_progress.parse(RECORD, now=1000.0, hourly_usd=38.4)
    later = run_progress.parse(RECORD, now=1060.0, hourly_usd=38.4)
    assert fresh is not None and later is not None
    assert fresh.steps_left == 27 * 400 + 280
    assert fresh.eta_s == pytest.approx(11080 / 1.42)
    assert later.eta_s == pytest.approx(11080 / 1.42 - 60)
    assert fresh.to_finish_usd == pytest.approx(11080 / 1.42 / 3600 * 38.4, abs=1e-3)
    assert run_progress.describe(fresh) == (
        "epoch 3/30, step 120/400, 4,200 examples/s, loss 0.41, ETA 2 h 10 min, ~$83.23 to finish"
    )
    assert run_progress.short(fresh) == "3/30 ETA 2h10m ~$83.23"
    assert fresh.to_dict()["to_finish_usd"] == fresh.to_finish_usd and fresh.to_dict()["billed"] is True


def test_a_job_that_is_not_billed_says_so_and_costs_nothing_to_finish() -> None:
    """A local run: never a price, whatever hourly figure reaches it."""
    found = run_progress.parse(RECORD, now=1000.0, hourly_usd=38.4, billed=False)
    assert found is not None and found.to_finish_usd is None and found.to_dict()["billed"] is False
    assert run_progress.describe(found).endswith(", ETA 2 h 10 min, not billed")
    assert run_progress.short(found) == "3/30 ETA 2h10m"


def test_without_a_rate_steps_or_price_the_eta_and_cost_are_unknown() -> None:
    early = run_progress.parse({**RECORD, "steps_per_s": None, "examples_per_s": None}, now=1000.0)
    unknown = run_progress.parse({**RECORD, "steps_per_epoch": None}, now=1000.0)
    assert early is not None and unknown is not None
    assert (early.eta_s, early.to_finish_usd, unknown.steps_left, unknown.eta_s) == (None, None, None, None)
    assert run_progress.describe(early) == "epoch 3/30, step 120/400, loss 0.41, ETA ?"
    assert run_progress.describe(unknown).startswith("epoch 3/30, step 120/?, ")
    assert run_progress.short(None) == "-"


@pytest.mark.parametrize(
    "raw",
    [
        None,
        [],
        "epoch 3",
        {**RECORD, "epoch": "3"},
        {**RECORD, "epoch": 0},
        {**RECORD, "step": -1},
        {**RECORD, "steps_per_epoch": 0},
        {**RECORD, "steps_per_s": float("nan")},
        {**RECORD, "loss": "0.4"},
        {**RECORD, "attempt": True},
        {key: value for key, value in RECORD.items() if key != "updated_at"},
    ],
)
def test_a_record_the_runtime_did_not_write_reads_as_none(raw: Any) -> None:
    assert run_progress.parse(raw, now=1000.0) is None
