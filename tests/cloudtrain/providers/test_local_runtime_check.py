"""The local provider checks this Python can train before it starts any process."""

from __future__ import annotations

from pathlib import Path

import pytest

from cloudtrain import api
from cloudtrain.errors import MissingDependencyError
from cloudtrain.providers import local


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CLOUDTRAIN_LOCAL_HOME", str(tmp_path / "local"))
    return tmp_path / "local"


@pytest.mark.parametrize(
    ("backend", "extra"),
    [
        ("tensorflow", "runtime"),  # tf.distribute
        ("jax", "runtime,jax"),  # keras.distribution, fed by tf.data
    ],
)
def test_a_missing_runtime_stops_submit_before_any_process(
    example_job: Path, home: Path, monkeypatch: pytest.MonkeyPatch, backend: str, extra: str
) -> None:
    modules, _ = local.RUNTIME_STACK[backend]
    monkeypatch.setitem(local.RUNTIME_STACK, backend, (("no_such_module_here", *modules), extra))
    submission = api.prepare(api.as_spec(example_job, (f"training.keras_backend={backend}",)), "local")
    with pytest.raises(MissingDependencyError) as error:
        submission.submit()
    assert str(error.value) == (
        f"no_such_module_here is not installed (needed for training on this machine with keras_backend "
        f"{backend}). Run: pip install 'cloudtrain[{extra}]'"
    )
    assert not home.exists() or not any(home.rglob("request.json"))


def test_the_stack_is_what_the_runtime_imports() -> None:
    import cloudtrain_runtime

    text = (Path(cloudtrain_runtime.__file__).parent / "session.py").read_text()
    for modules, _ in local.RUNTIME_STACK.values():
        for module in set(modules) - {"numpy"}:  # numpy comes with TensorFlow; the runtime uses it throughout
            assert f"import {module}" in text
