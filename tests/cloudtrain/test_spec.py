"""The job spec: defaults, durations, Python construction, and that no input crashes it."""

from __future__ import annotations

import string
import typing

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cloudtrain.errors import SpecError
from cloudtrain.planning import plan
from cloudtrain.spec import JobSpec, Strategy, parse_duration
from cloudtrain.specfile import apply_overrides, load_spec, parse_spec
from cloudtrain_runtime import rules


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90m", 5400),  # minutes
        ("24h", 86400),  # hours
        ("2d", 172800),  # days
        ("3600s", 3600),  # explicit seconds
        ("45", 45),  # bare number = seconds
        ("1.5h", 5400),  # fractions
        (7200, 7200),  # an int from Python
    ],
)
def test_parse_duration(text: str | int, seconds: int) -> None:
    assert parse_duration(text) == seconds


def test_defaults_are_what_a_newcomer_would_pick() -> None:
    spec = JobSpec(name="demo", code={"module": "trainer.task"})
    assert spec.provider == "local"
    assert (spec.resources.accelerator, spec.resources.per_host, spec.resources.hosts) == ("cpu", 1, 1)
    assert spec.training.strategy == "auto"
    assert spec.training.mixed_precision == "auto"
    assert spec.limits.max_runtime == 86400
    assert spec.image == "auto"


def test_provider_storage_root_overrides_the_default() -> None:
    spec = JobSpec(
        name="demo",
        code={"module": "t"},
        storage={"root": "./out"},
        vertex={"storage_root": "gs://bucket-a/x/"},
    )
    assert spec.storage_root("vertex") == "gs://bucket-a/x"
    assert spec.storage_root("sagemaker") == "./out"
    assert spec.storage_root("local") == "./out"


def test_load_spec_resolves_paths_next_to_the_file(example_job) -> None:
    spec = load_spec(example_job)
    assert spec.code.source_dir == str(example_job.parent)
    assert spec.storage.root == str(example_job.parent / "outputs")


def test_overrides_parse_yaml_scalars() -> None:
    data = apply_overrides({}, ["training.epochs=5", "resources.spot=true", "vertex.labels.team=ml"])
    assert data == {
        "training": {"epochs": 5},
        "resources": {"spot": True},
        "vertex": {"labels": {"team": "ml"}},
    }


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            "training.epochs",
            "--set expects KEY=VALUE, e.g. --set training.epochs=5. Received: 'training.epochs'.",
        ),
        ("name.first=x", "--set name.first: name is not a section, so it has no field 'first'."),
    ],
)
def test_bad_overrides(override: str, message: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_spec({"name": "demo", "code": {"module": "t"}}, [override])
    assert info.value.problems == [message]


def test_the_strategy_names_are_the_runtimes() -> None:
    assert set(typing.get_args(Strategy)) == {"auto", *rules.CLASSES}


@pytest.mark.parametrize(
    ("training", "hosts", "message"),
    [
        (
            {"strategy": "mirrored"},
            2,
            "training.strategy: 'mirrored' runs on one host, but resources.hosts=2. "
            "Use strategy 'multi-worker' (or auto), or set resources.hosts: 1.",
        ),  # MirroredStrategy is one host's
        (
            {"strategy": "keras-data-parallel"},
            1,
            "training.strategy: 'keras-data-parallel' uses keras.distribution, which needs "
            "training.keras_backend: jax.",
        ),  # keras.distribution on TensorFlow
        (
            {"strategy": "multi-worker", "keras_backend": "jax"},
            2,
            "training.strategy: 'multi-worker' uses tf.distribute, which needs training.keras_backend: "
            "tensorflow. Use strategy auto (keras.distribution on JAX), or set training.keras_backend: tensorflow.",
        ),  # tf.distribute on JAX
        (
            {"strategy": "keras-model-parallel", "keras_backend": "jax"},
            1,
            "training.layout_map is required by strategy 'keras-model-parallel': map weight regexes to "
            "sharding axes, e.g. '.*dense/kernel': [null, model].",
        ),  # nothing to shard
    ],
)
def test_strategy_rules_the_spec_alone_can_check(training: dict, hosts: int, message: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_spec(
            {"name": "demo", "code": {"module": "t"}, "resources": {"hosts": hosts}, "training": training}
        )
    assert info.value.problems == [message]


@pytest.mark.parametrize(
    ("resources", "allowed"),
    [
        ({"accelerator": "t4"}, False),  # off unless asked: a GPU plan without GPUs stops
        ({"accelerator": "t4", "allow_cpu_fallback": True}, True),
        ({"accelerator": "cpu", "allow_cpu_fallback": True}, True),  # a CPU plan runs on the CPU anyway
    ],
)
def test_the_cpu_fallback_switch(resources: dict, allowed: bool) -> None:
    spec = parse_spec({"name": "demo", "code": {"module": "t"}, "resources": resources})
    assert spec.resources.allow_cpu_fallback is allowed
    assert plan(spec, "local").runtime.allow_cpu_fallback is allowed  # it travels to the runtime


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "yes",  # YAML 1.1's boolean is a string here: say so rather than guess
            "resources.allow_cpu_fallback must be true or false. Received: resources.allow_cpu_fallback='yes'.",
        ),
        (1, "resources.allow_cpu_fallback must be true or false. Received: resources.allow_cpu_fallback=1."),
    ],
)
def test_the_cpu_fallback_switch_takes_only_true_or_false(value: object, message: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_spec({"name": "demo", "code": {"module": "t"}, "resources": {"allow_cpu_fallback": value}})
    assert info.value.problems == [message]


def test_a_tpu_plan_cannot_fall_back_to_the_cpu() -> None:
    with pytest.raises(SpecError) as info:
        parse_spec(
            {"name": "demo", "code": {"module": "t"}},
            ["resources.accelerator=tpu-v5e", "resources.per_host=4", "resources.allow_cpu_fallback=true"],
        )
    assert info.value.problems == [
        "resources.allow_cpu_fallback: true falls back from GPUs to the CPU; a TPU plan "
        "(resources.accelerator 'tpu-v5e') cannot, TPUStrategy needs its TPU. Remove it, or plan GPUs. "
        "Received: resources.allow_cpu_fallback=True."
    ]


def test_rules_on_the_machine_wait_for_the_plan() -> None:
    # 'tpu' on a CPU is refused by plan(), after the provider's own problems (test_planning):
    # refusing it here would hide those, since validation stops at the first spec error.
    spec = JobSpec(name="demo", code={"module": "t"}, training={"strategy": "tpu"})
    assert spec.training.strategy == "tpu"


# Keys a real spec uses, mixed with noise, so random documents reach deep validation paths.
_KEYS = st.sampled_from(
    [
        "name", "code", "module", "script", "resources", "accelerator", "per_host", "hosts", "spot",
        "training", "epochs", "strategy", "learning_rate", "base", "storage", "root", "limits",
        "max_runtime", "env", "data", "vertex", "sagemaker", "role", "region", "zz", "global_batch",
    ]
)  # fmt: skip
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.sampled_from(["demo", "trainer.task", "a100-40gb", "gs://bucket/x", "mirrored", "24h", "t4"]),
)
_DOCUMENTS = st.recursive(
    _SCALARS,
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(_KEYS, children, max_size=6)),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=_DOCUMENTS)
def test_random_documents_give_a_spec_or_a_clean_error(document: object) -> None:
    try:
        spec = parse_spec(document)
    except SpecError as err:
        assert err.problems and all(isinstance(p, str) and p for p in err.problems)
    else:
        assert isinstance(spec, JobSpec)


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet=string.printable, max_size=200))
def test_random_yaml_text_gives_a_spec_or_a_clean_error(text: str, tmp_path_factory) -> None:
    path = tmp_path_factory.mktemp("spec") / "job.yaml"
    path.write_text(text)
    try:
        load_spec(path)
    except SpecError as err:
        assert err.problems


def test_round_trip_through_yaml_keeps_the_spec(tmp_path) -> None:
    spec = JobSpec(name="demo", code={"module": "t"}, resources={"accelerator": "l4", "per_host": 2})
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(spec.model_dump(mode="json")))
    (tmp_path / "t.py").write_text("def build_model(config): ...\ndef make_dataset(context): ...\n")
    loaded = load_spec(path)
    assert loaded.resources == spec.resources
    assert loaded.training == spec.training
