"""Every image: auto image carries a TensorFlow/Keras pair that some test environment runs.

The main environment (pyproject.toml's runtime extra) is one pair; each file in
tests/lanes/ pins another, which ``make test-lanes`` installs and tests. An image whose
pair is in neither would run a runtime nothing has tested.
"""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

import pytest

from cloudtrain import catalog

LANES = Path(__file__).resolve().parents[1] / "lanes"
PIN = re.compile(r"^(tensorflow|tensorflow-cpu|keras)==([\d.]+)\b", re.MULTILINE)


def _installed_tensorflow() -> str:
    for name in ("tensorflow-cpu", "tensorflow"):  # the runtime extra installs one or the other
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    pytest.skip("TensorFlow is not installed: pip install -e '.[runtime]'")


def lane_pairs() -> dict[str, tuple[str, str]]:
    """The (tensorflow, keras) pins of each lane that pins both, by file name (others test other things)."""
    pairs = {}
    for lane in sorted(LANES.glob("*.txt")):
        pins = {name.removesuffix("-cpu"): version for name, version in PIN.findall(lane.read_text())}
        if {"tensorflow", "keras"} <= pins.keys():
            pairs[lane.name] = (pins["tensorflow"], pins["keras"])
    return pairs


def pairs_under_test() -> set[tuple[str, str]]:
    return {(_installed_tensorflow(), metadata.version("keras")), *lane_pairs().values()}


@pytest.mark.parametrize("row", catalog.read(catalog.HERE / "images.csv"), ids=lambda row: row["uri"])
def test_each_image_carries_a_tested_tensorflow_and_keras(row: dict[str, str]) -> None:
    pair = (row["tensorflow"], row["keras"])
    assert pair in pairs_under_test(), (
        f"{row['uri']} carries TensorFlow {pair[0]} with Keras {pair[1]}, which no test environment runs. "
        f"Add tests/lanes/tf{pair[0].rsplit('.', 1)[0]}-keras{pair[1].rsplit('.', 1)[0]}.txt pinning them."
    )


def test_each_lane_tests_the_pair_of_some_image() -> None:
    images = {(row["tensorflow"], row["keras"]) for row in catalog.read(catalog.HERE / "images.csv")}
    assert lane_pairs()  # at least the Vertex images' pair
    for lane, pair in lane_pairs().items():
        assert pair in images, f"tests/lanes/{lane} pins {pair}, which no image in images.csv carries"
