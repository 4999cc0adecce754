"""What a job costs before it runs: every billed provider and shape, priced from the catalog.

The modules, each one idea:

- ``compare``: ``estimate`` and ``report`` (the ranked options, with notes), ``select``;
- ``inputs``: prices, relative speeds, scaling efficiencies and assumptions (catalog rows);
- ``throughput``: the measured speed every estimate starts from;
- ``shapes``: every layout of the plan's replica count on every provider;
- ``option``: one shape priced in one region, on-demand or spot;
- ``ranking``: cheapest, fastest and the Pareto front;
- ``units``: the seconds-and-dollars arithmetic and how figures are written;
- ``notes``: the words under the table, generated from the catalog;
- ``budget``: submit's guard against ``limits.max_cost_usd``;
- ``plot``: hours against dollars as a PNG (matplotlib, optional);
- ``refresh``: rebuild price rows from the providers' price APIs.

Example:
>>> from cloudtrain.spec import JobSpec
>>> job = JobSpec(name="demo", code={"module": "trainer.task"}, training={"examples_per_epoch": 36_000})
>>> found = report(job, throughput="10@t4")
>>> found.work_examples, found.options[0].label, found.options[0].marks
(360000, '1 × ct5lp-hightpu-1t', ('cheapest', 'pareto'))
"""

from __future__ import annotations

from cloudtrain.cost.compare import Estimate, estimate, report, select
from cloudtrain.cost.inputs import CostSettings, Price, PriceCatalog
from cloudtrain.cost.option import CostOption
from cloudtrain.cost.throughput import Throughput, parse_throughput
from cloudtrain.cost.units import dollars, duration

__all__ = [
    "CostOption",
    "CostSettings",
    "Estimate",
    "Price",
    "PriceCatalog",
    "Throughput",
    "dollars",
    "duration",
    "estimate",
    "parse_throughput",
    "report",
    "select",
]
