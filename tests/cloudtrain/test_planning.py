"""plan(): machines, replicas, batch, learning rate, strategy, precision and paths."""

from __future__ import annotations

from typing import Any

import pytest

from cloudtrain import catalog
from cloudtrain.errors import SpecError
from cloudtrain.planning import (
    choose_strategy,
    mixed_precision,
    plan,
    scale_learning_rate,
    storage_paths,
    strategy_problem,
)
from cloudtrain.spec import JobSpec

GCS = {"root": "gs://bucket-a/job"}
S3 = {"root": "s3://bucket-a/job"}
ROLE = {"role": "arn:aws:iam::123456789012:role/Training"}


def spec(**fields: Any) -> JobSpec:
    fields.setdefault("code", {"module": "trainer.task"})
    fields.setdefault("vertex", {"project": "my-project"})
    fields.setdefault("sagemaker", ROLE)
    return JobSpec(name="demo", **fields)


@pytest.mark.parametrize(
    ("provider", "storage", "accelerator", "per_host", "machine"),
    [
        ("vertex", GCS, "a100-40gb", 8, "a2-highgpu-8g"),  # 8 × A100 40 GB per host
        ("vertex", GCS, "a100-40gb", 16, "a2-megagpu-16g"),  # the only 16-GPU shape
        ("vertex", GCS, "h100-80gb", 8, "a3-highgpu-8g"),  # first H100 row is preferred
        ("vertex", GCS, "l4", 1, "g2-standard-8"),  # g2-standard-8 preferred over -4
        ("vertex", GCS, "t4", 4, "n1-standard-32"),  # N1 host sized for 4 T4
        ("vertex", GCS, "tpu-v5e", 4, "ct5lp-hightpu-4t"),  # 2x2 slice
        ("vertex", GCS, "cpu", 1, "n1-standard-8"),  # CPU-only
        ("sagemaker", S3, "a100-40gb", 8, "ml.p4d.24xlarge"),  # 8 × A100 40 GB
        ("sagemaker", S3, "h100-80gb", 8, "ml.p5.48xlarge"),  # 8 × H100
        ("sagemaker", S3, "a10g", 1, "ml.g5.xlarge"),  # smallest A10G
        ("sagemaker", S3, "t4", 4, "ml.g4dn.12xlarge"),  # 4 × T4
    ],
)
def test_machine_from_catalog(
    provider: str, storage: dict, accelerator: str, per_host: int, machine: str
) -> None:
    resources = {"accelerator": accelerator, "per_host": per_host}
    planned = plan(spec(storage=storage, resources=resources, image="registry.example/train:1"), provider)
    assert planned.machine is not None
    assert planned.machine.machine_type == machine
    assert planned.devices_per_host == per_host


@pytest.mark.parametrize(
    ("resources", "training", "replicas", "global_batch", "lr"),
    [
        ({"accelerator": "a100-40gb", "per_host": 8, "hosts": 2}, {"per_replica_batch": 64}, 16, 1024, 0.016),
        ({"accelerator": "t4", "per_host": 1, "hosts": 1}, {}, 1, 32, 0.001),  # defaults
        ({"accelerator": "l4", "per_host": 4, "hosts": 3}, {"global_batch": 384}, 12, 384, 0.012),
    ],
)
def test_replicas_batch_and_linear_lr(
    resources: dict, training: dict, replicas: int, global_batch: int, lr: float
) -> None:
    planned = plan(spec(storage=GCS, resources=resources, training=training), "vertex")
    assert planned.replicas == replicas
    assert planned.global_batch == global_batch
    assert planned.per_replica_batch * planned.replicas == planned.global_batch
    assert planned.learning_rate == pytest.approx(lr)
    assert planned.runtime.learning_rate == planned.learning_rate


@pytest.mark.parametrize(
    ("scaling", "replicas", "expected"),
    [
        ("linear", 8, 0.008),  # base × replicas
        ("sqrt", 16, 0.004),  # base × √replicas
        ("none", 64, 0.001),  # unchanged
    ],
)
def test_scale_learning_rate(scaling: str, replicas: int, expected: float) -> None:
    assert scale_learning_rate(0.001, replicas, scaling) == pytest.approx(expected)


def test_warmup_steps_from_examples_per_epoch() -> None:
    training = {"examples_per_epoch": 10_000, "per_replica_batch": 50, "learning_rate": {"warmup_epochs": 2}}
    planned = plan(
        spec(storage=GCS, resources={"accelerator": "t4", "per_host": 2}, training=training), "vertex"
    )
    assert planned.steps_per_epoch == 100  # 10,000 / (50 × 2)
    assert planned.warmup_steps == 200


@pytest.mark.parametrize(
    ("resources", "training", "strategy"),
    [
        ({"accelerator": "t4", "per_host": 1, "hosts": 1}, {}, "one-device"),  # one device
        ({"accelerator": "t4", "per_host": 4, "hosts": 1}, {}, "mirrored"),  # one host, 4 GPUs
        ({"accelerator": "t4", "per_host": 1, "hosts": 3}, {}, "multi-worker"),  # several hosts
        ({"accelerator": "tpu-v5e", "per_host": 8, "hosts": 1}, {}, "tpu"),  # TPU slice
        ({"accelerator": "t4", "per_host": 4}, {"keras_backend": "jax"}, "keras-data-parallel"),  # JAX
        (
            {"accelerator": "t4", "per_host": 4},
            {"keras_backend": "jax", "layout_map": {".*kernel": [None, "model"]}},
            "keras-model-parallel",
        ),  # JAX with a layout map
        (
            {"accelerator": "t4", "per_host": 4, "hosts": 1},
            {"strategy": "multi-worker"},
            "multi-worker",
        ),  # explicit wins
    ],
)
def test_strategy_choice(resources: dict, training: dict, strategy: str) -> None:
    chosen, reason = choose_strategy(
        spec(storage=GCS, resources=resources, training=training), resources["per_host"]
    )
    assert chosen == strategy
    assert reason


@pytest.mark.parametrize(
    ("resources", "training", "reason"),
    [
        ({"accelerator": "t4", "hosts": 3}, {}, "3 hosts: MultiWorkerMirroredStrategy"),  # several hosts
        ({"accelerator": "t4", "per_host": 4}, {}, "1 host with 4 devices: MirroredStrategy"),  # one host
        ({"accelerator": "t4"}, {}, "1 device: the default strategy"),  # one device
        ({"accelerator": "tpu-v5e", "per_host": 8}, {}, "TPU accelerator: TPUStrategy"),  # TPU slice
        (
            {"accelerator": "t4", "per_host": 4},
            {"keras_backend": "jax"},
            "Keras on JAX: keras.distribution.DataParallel over all devices",
        ),  # JAX
        (
            {"accelerator": "t4", "per_host": 4},
            {"strategy": "multi-worker"},
            "training.strategy: multi-worker set in the spec",
        ),  # explicit
    ],
)
def test_strategy_reason(resources: dict, training: dict, reason: str) -> None:
    planned = spec(storage=GCS, resources=resources, training=training)
    assert choose_strategy(planned, resources.get("per_host", 1))[1] == reason


@pytest.mark.parametrize(
    ("strategy", "accelerator", "per_host", "hosts", "problem"),
    [
        (
            "tpu",
            "a100-40gb",
            8,
            1,
            "training.strategy: 'tpu' needs a TPU accelerator, but resources.accelerator is a gpu. "
            "Set resources.accelerator: tpu-v5e, or use strategy auto.",
        ),  # no TPU
        (
            "mirrored",
            "tpu-v5e",
            8,
            1,
            "training.strategy: 'mirrored' cannot drive a TPU. Use strategy 'tpu' or auto.",
        ),  # a GPU strategy on a TPU
        (
            "one-device",
            "a100-40gb",
            8,
            1,
            "training.strategy: 'one-device' would use 1 of 8 devices. "
            "Set resources.per_host: 1 and resources.hosts: 1, or use strategy auto.",
        ),  # 7 GPUs idle
        ("auto", "tpu-v5e", 8, 2, "TPU jobs run on one host, and no single slice has 16 chips"),  # 2 slices
        (
            "mirrored",
            "t4",
            4,
            2,
            "training.strategy: 'mirrored' runs on one host, but resources.hosts=2. "
            "Use strategy 'multi-worker' (or auto), or set resources.hosts: 1.",
        ),  # a layout the spec itself would not pass
        ("auto", "a100-40gb", 8, 2, None),  # multi-worker fits
    ],
)
def test_strategy_problem_on_a_layout(
    strategy: str, accelerator: str, per_host: int, hosts: int, problem: str | None
) -> None:
    asked = spec(training={"strategy": strategy})
    assert strategy_problem(asked, accelerator, devices_per_host=per_host, hosts=hosts) == problem
    if problem and hosts == 1:  # the plan says the same for the spec's own hardware
        resources = {"accelerator": accelerator, "per_host": per_host}
        with pytest.raises(SpecError) as info:
            plan(
                spec(storage=GCS, resources=resources, training={"strategy": strategy}, image="r/i:1"),
                "vertex",
            )
        assert info.value.problems == [problem]


@pytest.mark.parametrize(
    ("requested", "accelerator", "resolved"),
    [
        ("auto", "a100-40gb", "bf16"),  # Ampere
        ("auto", "h100-80gb", "bf16"),  # Hopper
        ("auto", "tpu-v5e", "bf16"),  # TPU
        ("auto", "t4", "fp16"),  # Turing: no bfloat16
        ("auto", "v100", "fp16"),  # Volta: no bfloat16
        ("auto", "cpu", "off"),  # CPU
        ("off", "a100-40gb", "off"),  # explicit wins
    ],
)
def test_mixed_precision(requested: str, accelerator: str, resolved: str) -> None:
    assert mixed_precision(requested, accelerator) == resolved


def test_local_provider_runs_on_cpu_without_a_catalog_machine() -> None:
    planned = plan(spec(resources={"accelerator": "a100-40gb", "per_host": 2, "hosts": 2}), "local")
    assert planned.machine is None
    assert planned.replicas == 4
    assert planned.mixed_precision == "off"
    assert planned.image == "local"


def test_a_runs_paths_live_under_its_own_prefix_and_the_code_is_shared() -> None:
    paths = storage_paths("gs://bucket-a/job/", "r7")
    assert paths.run == "gs://bucket-a/job/runs/r7"
    assert paths.backup == "gs://bucket-a/job/runs/r7/checkpoints"
    assert paths.export == "gs://bucket-a/job/runs/r7/model"
    assert paths.tensorboard == "gs://bucket-a/job/runs/r7/logs"
    assert paths.code == "gs://bucket-a/job/code"
    assert paths.latest == "gs://bucket-a/job/latest.json"


def test_without_a_run_id_the_paths_say_run_and_with_run_moves_them() -> None:
    planned = plan(spec(storage={"root": "gs://bucket-b/j"}, vertex={"project": "my-project"}), "vertex")
    assert planned.storage.export == "gs://bucket-b/j/runs/{run}/model"
    assert planned.with_run("2026-12-03").storage.export == "gs://bucket-b/j/runs/2026-12-03/model"
    assert planned.with_run("2026-12-03").runtime.run_id == "2026-12-03"
    with pytest.raises(SpecError, match=r"run_id: 'A/B' is not a run id"):
        planned.with_run("A/B")


def test_image_auto_comes_from_the_catalog() -> None:
    gpu = plan(
        spec(storage=S3, resources={"accelerator": "a10g"}, sagemaker={**ROLE, "region": "eu-west-1"}),
        "sagemaker",
    )
    assert gpu.image.startswith("763104351884.dkr.ecr.eu-west-1.amazonaws.com/tensorflow-training:")
    assert "gpu" in gpu.image
    own = plan(spec(storage=GCS, image="europe-docker.pkg.dev/p/r/train:1"), "vertex")
    assert own.image == "europe-docker.pkg.dev/p/r/train:1"


def test_image_auto_without_a_maintained_image_says_how_to_build_one() -> None:
    with pytest.raises(SpecError) as info:
        plan(spec(storage=GCS, resources={"accelerator": "tpu-v5e", "per_host": 4}), "vertex")
    assert info.value.problems == [
        "image: auto has no maintained TensorFlow TPU image on Vertex AI. "
        "Build containers/tpu.Dockerfile, push it, and set image: to its URI."
    ]


def test_all_provider_problems_are_reported_together() -> None:
    bad = JobSpec(
        name="demo",
        code={"module": "t"},
        storage={"root": "gs://bucket-a/job"},
        resources={"accelerator": "h100-80gb", "per_host": 3},
    )
    with pytest.raises(SpecError) as info:
        plan(bad, "sagemaker")
    assert len(info.value.problems) == 3  # storage scheme, GPU count, missing role


def test_plan_to_dict_is_json_ready(example_job) -> None:
    import json

    from cloudtrain.specfile import load_spec

    data = plan(load_spec(example_job), "vertex").to_dict()
    assert json.loads(json.dumps(data)) == data
    assert data["machine"]["machine_type"] == "n1-standard-8"
    assert data["global_batch"] == 32


# The providers' own names for accelerators and machines stand for the neutral ones.
ALIASES = [
    ("vertex", {"accelerator": "NVIDIA_TESLA_T4"}, "n1-standard-8"),  # Vertex's enum name
    ("vertex", {"accelerator": "nvidia_l4"}, "g2-standard-8"),  # any case
    ("sagemaker", {"accelerator": "ml.g4dn.12xlarge"}, "ml.g4dn.12xlarge"),  # an instance type: 4 × T4
    ("sagemaker", {"accelerator": "ml.g5.2xlarge"}, "ml.g5.2xlarge"),  # not the catalog's first A10G host
    ("vertex", {"accelerator": "a2-highgpu-2g"}, "a2-highgpu-2g"),  # a machine type: 2 × A100
]
# A machine type chosen among the catalog's shapes for the same hardware.
CHOSEN = [
    ("vertex", {"accelerator": "l4", "machine_type": "g2-standard-16"}, "g2-standard-16"),  # 16 vCPU, 1 L4
    ("vertex", {"machine_type": "n1-standard-16"}, "n1-standard-16"),  # a larger CPU host
    ("sagemaker", {"machine_type": "ml.m5.4xlarge"}, "ml.m5.4xlarge"),
    ("sagemaker", {"accelerator": "a10g", "machine_type": "ml.g5.2xlarge"}, "ml.g5.2xlarge"),
]


@pytest.mark.parametrize(("provider", "resources", "machine"), ALIASES + CHOSEN)
def test_provider_names_and_chosen_machine_types_plan_that_machine(
    provider: str, resources: dict[str, object], machine: str
) -> None:
    spec = JobSpec(
        name="demo",
        code={"module": "trainer.task"},
        resources=resources,
        storage={"root": "gs://bucket-a/x" if provider == "vertex" else "s3://bucket-a/x"},
        vertex={"project": "my-project"},
        sagemaker={"role": "arn:aws:iam::123456789012:role/Training"},
    )
    planned = plan(spec, provider)
    assert planned.machine is not None and planned.machine.machine_type == machine
    assert spec.resources.accelerator in catalog.accelerator_names()


def test_a_value_the_runtime_refuses_is_a_spec_error_not_its_config_error() -> None:
    # regression: a NUL in code.args raised the runtime's ConfigError from render, uncaught
    spec = JobSpec(name="demo", code={"module": "trainer.task"})
    unchecked = spec.model_copy(update={"code": spec.code.model_copy(update={"args": ["a\x00b"]})})
    with pytest.raises(SpecError, match="runtime configuration key 'args' must be free of NUL characters"):
        _ = plan(unchecked, "local").runtime
