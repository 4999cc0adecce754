"""Generate the Kubernetes provider's catalog rows (``catalog/``) from facts the catalog already holds.

A Kubernetes job runs on the cluster's nodes and costs what they cost: a GKE node is a
Compute Engine VM, an EKS node an EC2 instance, each billed by the second while it runs
(the cluster's own fee, $0.10 per hour on GKE Standard and on EKS, is per cluster, not
per job: https://cloud.google.com/kubernetes-engine/pricing, https://aws.amazon.com/eks/pricing/).
So the node types priced here are:

- **GCE machine types**, with the hardware of the Vertex AI rows of ``machines.csv`` and
  the Compute Engine prices their ``prices.csv`` formulas name: every priced Vertex row
  is an estimate of Compute Engine list × ``vertex_premium_over_compute_engine``
  (``cost_assumptions.csv``), so the node's price is the row's divided by that premium,
  and the row's own formula, quoted, shows the Compute Engine terms it came from.
- **EC2 instance types**, with the hardware of the SageMaker rows (``ml.<type>`` is the
  EC2 type ``<type>``) and the EC2 on-demand prices of ``ec2_prices.csv``
  (https://github.com/tsaol/aws-gpu data/all_gpu_instances.js @77fcd9f, from
  https://instances.vantage.sh). EC2 Spot prices move by zone and hour
  (https://aws.amazon.com/ec2/spot/pricing/): no spot price is written.

Run ``python -m cloudtrain.providers.kubernetes.generate_catalog`` after the catalog's
Vertex or SageMaker rows change; ``tests/cloudtrain/providers/kubernetes/test_catalog.py``
fails while the files and this generator's output differ.
"""

from __future__ import annotations

import csv
import io
import re
from decimal import Decimal
from pathlib import Path

from cloudtrain import catalog

HERE = Path(__file__).parent
FOLDER = HERE / "catalog"
EC2_PRICES = HERE / "ec2_prices.csv"
PROVIDER = "kubernetes"
PREMIUM = "vertex_premium_over_compute_engine"
# Compute Engine and EC2 bill by the second, with a one-minute minimum this model leaves out
# (https://cloud.google.com/compute/vm-instance-pricing, https://aws.amazon.com/ec2/pricing/on-demand/).
BILLING_INCREMENT_S = "1"
_GCE_TERMS = re.compile(r"on-demand = \((?P<on_demand>.*?)\) × [\d.]+; spot = \((?P<spot>.*?)\) × [\d.]+")
GKE = (
    "GKE Standard bills a node pool's nodes as Compute Engine VMs; the $0.10/h cluster fee is "
    "per cluster, not counted (https://cloud.google.com/kubernetes-engine/pricing)"
)
EKS = (
    "EKS nodes are EC2 instances billed at EC2 prices; the $0.10/h cluster fee is per cluster, not "
    "counted (https://aws.amazon.com/eks/pricing/). spot: EC2 Spot prices change by zone and hour "
    "(https://aws.amazon.com/ec2/spot/pricing/), none is assumed"
)
IMAGE_SOURCE = (
    "https://hub.docker.com/r/tensorflow/tensorflow/tags: the TensorFlow project's own images, which "
    "any cluster can pull; the same rows as the vertex ones (catalog/images.csv), the runtime shipped "
    "in the code bundle"
)


def machine_rows() -> list[dict[str, str]]:
    """The node types: the Vertex AI rows' GCE machines, then the SageMaker rows' EC2 instances."""
    rows = []
    for row in catalog.rows("machines.csv"):
        if row["provider"] == "vertex":
            rows.append({**row, "provider": PROVIDER})
        elif row["provider"] == "sagemaker":
            rows.append(
                {**row, "provider": PROVIDER, "machine_type": row["machine_type"].removeprefix("ml.")}
            )
    return rows


def price_rows() -> list[dict[str, str]]:
    """GCE prices from the Vertex rows' formulas, then EC2 prices from ``ec2_prices.csv``.

    Every node type has a row in each region its cloud's rows cover; where no price is
    known the row says so (``not found: ...``), as the shipped catalog's rows do.
    """
    premium = Decimal(catalog.rows("cost_assumptions.csv")[_assumption_index()]["value"])
    gce = [_gce(row, premium) for row in catalog.rows("prices.csv") if row["provider"] == "vertex"]
    return gce + _ec2_rows()


def image_rows() -> list[dict[str, str]]:
    """The maintained TensorFlow images the Vertex rows name, which every cluster can pull."""
    return [
        {**row, "provider": PROVIDER, "source": IMAGE_SOURCE}
        for row in catalog.rows("images.csv")
        if row["provider"] == "vertex"
    ]


def _assumption_index() -> int:
    names = [row["name"] for row in catalog.rows("cost_assumptions.csv")]
    return names.index(PREMIUM)


def _gce(row: dict[str, str], premium: Decimal) -> dict[str, str]:
    """The node's Compute Engine price, from a Vertex row that estimates it so; else unknown, saying why."""
    terms = _GCE_TERMS.search(row["formula"])
    if row["is_estimate"] != "true" or terms is None:
        why = row["source"] if row["source"].startswith("not found") else "not found: no Compute Engine price"
        return _unknown(row["region"], row["machine_type"], row["accelerator"], why)
    formula = f"on-demand = {terms['on_demand']}; spot = {terms['spot']} (Compute Engine, as the vertex row's formula quotes it). {GKE}"
    return {
        **row,
        "provider": PROVIDER,
        "on_demand_usd_per_hour": _divided(row["on_demand_usd_per_hour"], premium),
        "spot_usd_per_hour": _divided(row["spot_usd_per_hour"], premium),
        "billing_increment_s": BILLING_INCREMENT_S,
        "is_estimate": "false",
        "formula": formula,
    }


def _divided(price: str, premium: Decimal) -> str:
    return format((Decimal(price) / premium).quantize(Decimal("0.000001")).normalize(), "f")


def _ec2_rows() -> list[dict[str, str]]:
    """Every EC2 node type in each region ``ec2_prices.csv`` covers: priced where it has a row."""
    with EC2_PRICES.open(newline="") as handle:
        known = {(row["instance_type"], row["region"]): row for row in csv.DictReader(handle)}
    regions = list(dict.fromkeys(region for _, region in known))
    ec2 = [m for m in catalog.rows("machines.csv") if m["provider"] == "sagemaker"]
    rows = []
    for region in regions:
        for machine in ec2:
            name = machine["machine_type"].removeprefix("ml.")
            found = known.get((name, region))
            rows.append(
                _ec2(found, machine["accelerator"])
                if found
                else _unknown(
                    region,
                    name,
                    machine["accelerator"],
                    f"not found: {EC2_PRICES.name} has no EC2 price for it",
                )
            )
    return rows


def _unknown(region: str, machine_type: str, accelerator: str, source: str) -> dict[str, str]:
    """A row whose price is not known, and why (the catalog's own form for one)."""
    empty = dict.fromkeys(
        ("on_demand_usd_per_hour", "spot_usd_per_hour", "as_of", "is_estimate", "formula"), ""
    )
    return {
        "provider": PROVIDER,
        "region": region,
        "machine_type": machine_type,
        "accelerator": accelerator,
        **empty,
        "billing_increment_s": BILLING_INCREMENT_S,
        "source": source,
    }


def _ec2(row: dict[str, str], accelerator: str) -> dict[str, str]:
    return {
        "provider": PROVIDER,
        "region": row["region"],
        "machine_type": row["instance_type"],
        "accelerator": accelerator,
        "on_demand_usd_per_hour": row["on_demand_usd_per_hour"],
        "spot_usd_per_hour": "",
        "billing_increment_s": BILLING_INCREMENT_S,
        "as_of": row["as_of"],
        "is_estimate": "false",
        "formula": f"on-demand = EC2 {row['instance_type']} {row['on_demand_usd_per_hour']}. {EKS}",
        "source": row["source"],
    }


def render(rows: list[dict[str, str]], columns: list[str]) -> str:
    """``rows`` as CSV text with the shipped file's columns, as ``csv`` writes it."""
    out = io.StringIO()
    writer = csv.DictWriter(out, columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows({column: row[column] for column in columns} for row in rows)
    return out.getvalue()


def generated() -> dict[str, str]:
    """Each catalog file's text, by file name."""
    return {
        name: render(rows, list(catalog.read(catalog.HERE / name)[0]))
        for name, rows in (
            ("machines.csv", machine_rows()),
            ("prices.csv", price_rows()),
            ("images.csv", image_rows()),
        )
    }


def main() -> None:
    FOLDER.mkdir(exist_ok=True)
    for name, text in generated().items():
        (FOLDER / name).write_text(text)


if __name__ == "__main__":
    main()
