"""The strategy rules, shared by the spec, the plan and the runtime: one table of cases."""

from __future__ import annotations

import pytest

from cloudtrain_runtime.rules import PROBLEMS, REASONS, Setup, Verdict, decide

TF, JAX = "tensorflow", "jax"


@pytest.mark.parametrize(
    ("requested", "backend", "hosts", "devices", "kind", "layout_map", "strategy", "rule"),
    [
        ("auto", TF, 1, 1, "cpu", False, "one-device", "one-device"),  # one device
        ("auto", TF, 1, 8, "gpu", False, "mirrored", "devices"),  # one host, 8 GPUs
        ("auto", TF, 4, 8, "gpu", False, "multi-worker", "hosts"),  # 4 hosts
        ("auto", TF, 1, 8, "tpu", False, "tpu", "tpu"),  # a TPU slice
        ("auto", JAX, 2, None, None, False, "keras-data-parallel", "keras"),  # JAX needs no machine facts
        (
            "auto",
            JAX,
            1,
            None,
            None,
            True,
            "keras-model-parallel",
            "keras-layout-map",
        ),  # JAX with a layout map
        ("auto", TF, 2, None, None, False, None, "undecided"),  # the spec alone: no machine yet
        ("multi-worker", TF, 1, 2, "cpu", False, "multi-worker", "requested"),  # explicit wins
        (
            "keras-data-parallel",
            TF,
            1,
            None,
            None,
            False,
            None,
            "keras-needs-jax",
        ),  # keras.distribution on TF
        ("mirrored", JAX, 1, None, None, False, None, "tf-needs-tensorflow"),  # tf.distribute on JAX
        ("keras-model-parallel", JAX, 1, None, None, False, None, "layout-map-required"),  # nothing to shard
        ("auto", TF, 2, 8, "tpu", False, None, "tpu-one-host"),  # a TPU job over 2 hosts
        ("mirrored", TF, 1, 8, "tpu", False, None, "tf-on-tpu"),  # a GPU strategy on a TPU
        ("tpu", TF, 1, 8, "gpu", False, None, "tpu-needs-tpu"),  # no TPU attached
        ("mirrored", TF, 2, None, None, False, None, "mirrored-one-host"),  # known from the spec alone
        ("one-device", TF, 1, 4, "gpu", False, None, "one-device-of-many"),  # 3 devices idle
        (
            "one-device",
            TF,
            2,
            None,
            None,
            False,
            "one-device",
            "requested",
        ),  # devices unknown: the plan checks
        ("tpu", TF, 1, None, None, False, "tpu", "requested"),  # kind unknown: the plan checks
    ],
)
def test_decide(
    requested: str,
    backend: str,
    hosts: int,
    devices: int | None,
    kind: str | None,
    layout_map: bool,
    strategy: str | None,
    rule: str,
) -> None:
    setup = Setup(
        requested,
        keras_backend=backend,
        hosts=hosts,
        devices_per_host=devices,
        kind=kind,
        layout_map=layout_map,
    )
    verdict = decide(setup)
    assert (verdict.strategy, verdict.rule, verdict.broken) == (strategy, rule, rule in PROBLEMS)


def test_every_rule_has_words_for_both_audiences() -> None:
    setup = Setup("mirrored", keras_backend=TF, hosts=2, devices_per_host=4, kind="gpu")
    for rule in [*REASONS, *PROBLEMS]:
        texts = [Verdict("mirrored", rule, setup).text(audience) for audience in ("spec", "cluster")]
        assert all(texts) and "{" not in "".join(texts)  # every field filled in


def test_one_broken_rule_speaks_to_each_side() -> None:
    verdict = decide(Setup("one-device", keras_backend=TF, hosts=2, devices_per_host=4, kind="gpu"))
    assert verdict.text("spec") == (
        "training.strategy: 'one-device' would use 1 of 8 devices. "
        "Set resources.per_host: 1 and resources.hosts: 1, or use strategy auto."
    )
    assert verdict.text("cluster") == (
        "training.strategy 'one-device' is impossible here: it would use 1 of 8 devices. "
        "Set training.strategy: auto, or change resources."
    )
