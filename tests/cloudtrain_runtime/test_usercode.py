"""User code: contract violations named by the user's file (the bundle: test_bundle.py)."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import pytest

from cloudtrain_runtime import main, managed, script, usercode
from cloudtrain_runtime.errors import UserCodeError
from tests.cloudtrain_runtime.harness import launch, runtime_config


@pytest.fixture
def user_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in usercode.WHOLE_TRACE_ENV:  # the user's frames only, unless a test asks
        monkeypatch.delenv(name, raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    return tmp_path


def test_missing_functions_name_the_users_file(user_dir: Path) -> None:
    (user_dir / "half_done.py").write_text("def build_model(config):\n    return None\n")
    module = usercode.import_module("half_done", user_dir)
    with pytest.raises(UserCodeError, match=r"^half_done\.py must define make_dataset\(\)"):
        managed._User(module, user_dir)


def test_unknown_module_points_at_the_spec(user_dir: Path) -> None:
    with pytest.raises(UserCodeError, match=r"code\.module 'trainer\.nope' was not found"):
        usercode.import_module("trainer.nope", user_dir)


def test_import_error_inside_user_module_names_file_and_line(user_dir: Path) -> None:
    (user_dir / "broken.py").write_text("X = 1\nimport not_installed_anywhere\n")
    with pytest.raises(UserCodeError, match=r"^broken\.py:2: importing broken raised ModuleNotFoundError"):
        usercode.import_module("broken", user_dir)


def test_exception_in_a_user_function_names_its_line(user_dir: Path) -> None:
    (user_dir / "faulty.py").write_text("def make_dataset(context):\n    return 1 / 0\n")
    module = usercode.import_module("faulty", user_dir)
    with pytest.raises(UserCodeError, match=r"^faulty\.py:2: make_dataset\(\) raised ZeroDivisionError"):
        usercode.call(module.make_dataset, None, directory=user_dir)


def test_multi_line_errors_keep_the_message_to_one_line(user_dir: Path) -> None:
    (user_dir / "chatty.py").write_text(
        "def fit():\n    raise RuntimeError('peer died\\n  details\\n  more')\n"
    )
    module = usercode.import_module("chatty", user_dir)
    with pytest.raises(UserCodeError) as err:
        usercode.call(module.fit, directory=user_dir)
    assert str(err.value) == "chatty.py:2: fit() raised RuntimeError: peer died"


DEEP = """\
def scale(features, factors):
    return features * factors["b"]


def rows():
    return scale(2, {"a": 1})


def make_dataset(context):
    return rows()
"""


# regression: a KeyError two calls deep showed only "task.py:N: make_dataset() raised KeyError: 'b'"
def test_a_users_error_keeps_every_frame_of_theirs_and_no_other(user_dir: Path) -> None:
    (user_dir / "deep.py").write_text(DEEP)
    module = usercode.import_module("deep", user_dir)
    with pytest.raises(UserCodeError) as err:
        usercode.call(module.make_dataset, None, directory=user_dir)
    assert str(err.value) == "deep.py:2: make_dataset() raised KeyError: 'b'"
    trace = err.value.trace.splitlines()
    assert trace[0] == "Traceback (your code's frames; CLOUDTRAIN_DEBUG=1 shows every frame):"
    assert [line for line in trace if line.startswith("  File")] == [
        '  File "deep.py", line 10, in make_dataset',
        '  File "deep.py", line 6, in rows',
        '  File "deep.py", line 2, in scale',
    ]
    assert trace[-1] == "KeyError: 'b'"
    assert '    return features * factors["b"]' in trace


@pytest.mark.parametrize(
    ("env", "whole"),
    [
        ({}, False),
        ({"CLOUDTRAIN_DEBUG": "1"}, True),
        ({"CLOUDTRAIN_VERBOSE": "1"}, True),
    ],  # verbose: submit -v
)
def test_debug_or_verbose_keeps_the_whole_traceback(
    user_dir: Path, monkeypatch: pytest.MonkeyPatch, env: dict[str, str], whole: bool
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    (user_dir / "deep2.py").write_text(DEEP)
    module = usercode.import_module("deep2", user_dir)
    with pytest.raises(UserCodeError) as err:
        usercode.call(module.make_dataset, None, directory=user_dir)
    trace = err.value.trace
    assert ("cloudtrain_runtime/usercode.py" in trace) is whole  # the runtime's own frame
    assert 'deep2.py", line 2, in scale' in trace and trace.endswith("KeyError: 'b'\n")


# regression: a Keras error raised with no frame of the user's named keras/src/... as its place
def test_an_error_with_no_frame_of_the_users_names_the_library_after_the_message(
    user_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    library = tmp_path / "site"
    (library / "kerasish").mkdir(parents=True)
    (library / "kerasish" / "__init__.py").write_text(
        "def fit():\n    raise ValueError('expected shape=(None, 5)')\n"
    )
    monkeypatch.syspath_prepend(str(library))  # an installed package: on sys.path
    kerasish = importlib.import_module("kerasish")
    with pytest.raises(ValueError) as raised:
        kerasish.fit()
    error = usercode.user_error(raised.value, "model.fit()", user_dir / "code", whole=False)
    assert str(error) == (
        "model.fit() raised ValueError: expected shape=(None, 5) [raised in kerasish/__init__.py:2, not in your code]"
    )
    assert error.trace.splitlines()[:2] == [
        "Traceback (no frame is in your code; the last one; CLOUDTRAIN_DEBUG=1 shows every frame):",
        '  File "kerasish/__init__.py", line 2, in fit',
    ]


def test_a_real_keras_shape_error_in_fit_names_keras_after_the_message(user_dir: Path) -> None:
    keras = pytest.importorskip("keras")
    model = keras.Sequential([keras.Input((5,)), keras.layers.Dense(1)])
    model.compile(loss="mse")
    with pytest.raises(ValueError) as raised:
        model.fit([[0.0] * 4] * 4, [[0.0]] * 4, verbose=0)  # 4 features for a model of 5
    error = usercode.user_error(raised.value, "model.fit()", user_dir / "code", whole=False)
    assert str(error).startswith("model.fit() raised ValueError: ")
    assert re.search(r" \[raised in keras/src/\S+\.py:\d+, not in your code\]$", str(error)), str(error)


def test_the_entrypoint_prints_the_users_traceback_then_the_error_line(
    user_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (user_dir / "deep3.py").write_text(DEEP)
    module = usercode.import_module("deep3", user_dir)

    def run(config_file: str | None, env: object, trial_args: object = ()) -> None:
        usercode.call(module.make_dataset, None, directory=user_dir)

    monkeypatch.setattr(main, "run", run)
    with pytest.raises(SystemExit) as exited:
        main.main([])
    err = capsys.readouterr().err.splitlines()
    assert exited.value.code == 1
    assert err[0].startswith("Traceback (your code's frames") and err[-2] == "KeyError: 'b'"
    assert err[-1] == "cloudtrain-runtime: error: deep3.py:2: make_dataset() raised KeyError: 'b'"


def test_compile_args_must_not_choose_the_optimizer(user_dir: Path) -> None:
    (user_dir / "opt.py").write_text(
        "def build_model(c): pass\ndef make_dataset(c): pass\ndef compile_args(c): return {'optimizer': 'sgd'}\n"
    )
    user = managed._User(usercode.import_module("opt", user_dir), user_dir)
    with pytest.raises(UserCodeError, match=r"opt\.py: compile_args\(\) .* without 'optimizer'"):
        user.compile_args(session=type("S", (), {"config": None})())


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("import sys\nsys.exit(3)\n", "train.py exited with status 3"),  # non-zero exit
        ("x = 1\nraise RuntimeError('bad data')\n", "train.py:2: train.py raised RuntimeError: bad data"),
    ],
)
def test_script_failures_name_the_script(tmp_path: Path, source: str, message: str) -> None:
    (tmp_path / "train.py").write_text(source)
    argv = list(sys.argv)
    try:
        with pytest.raises(UserCodeError, match=message):
            script.run("train.py", ("--flag",), tmp_path)
    finally:
        sys.argv[:] = argv


def test_missing_script_is_named(tmp_path: Path) -> None:
    with pytest.raises(UserCodeError, match=r"code\.script 'train\.py' was not found"):
        script.run("train.py", (), tmp_path)


@pytest.mark.multiprocess
def test_model_built_outside_the_scope_is_refused_naming_the_file(tmp_path: Path) -> None:
    code = tmp_path / "code"
    code.mkdir()
    (code / "eager.py").write_text(
        "import keras\nMODEL = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])\n"
        "def build_model(config):\n    return MODEL\n"
        "def make_dataset(context):\n    import tensorflow as tf\n"
        "    return tf.data.Dataset.from_tensor_slices(([[0.0, 1.0]] * 8, [[1.0]] * 8))\n"
    )
    config = runtime_config(tmp_path, module="eager", hosts=1)
    run = launch(1, config, tmp_path, code_dir=code, env={"CLOUDTRAIN_CPU_DEVICES": "2"})
    assert run.returncodes == [1]
    errors = [line for line in run.outputs[0].splitlines() if line.startswith("cloudtrain-runtime: error:")]
    assert errors == [
        "cloudtrain-runtime: error: eager.py: build_model() returned a model built outside the strategy "
        "scope (e.g. 'sequential/dense/kernel'). Create the model inside build_model(); do not build it at import time."
    ]


def test_an_import_error_shows_the_users_frames_not_importlibs(
    user_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # regression: "your code's frames" began with six <frozen importlib._bootstrap> frames, since the
    # runtime works in the code folder, where such a name made absolute seemed to be the user's file
    monkeypatch.chdir(user_dir)
    (user_dir / "broken.py").write_text("X = 1\nimport not_installed_anywhere\n")
    with pytest.raises(UserCodeError) as raised:
        usercode.import_module("broken", user_dir)
    trace = raised.value.trace
    assert "<frozen" not in trace
    assert trace.startswith(usercode.USER_FRAMES + '  File "broken.py", line 2, in <module>')


def test_a_graph_error_is_summed_up_by_its_cause(user_dir: Path) -> None:
    # regression: "Graph execution error: [raised in ..., not in your code]", the cause 60 lines up
    keras = pytest.importorskip("keras")
    np = pytest.importorskip("numpy")
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(3)])
    model.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    with pytest.raises(Exception) as raised:  # a label outside the 3 classes
        model.fit(np.zeros((4, 2), "float32"), np.array([0, 1, -6, 2]), verbose=0)
    error = usercode.user_error(raised.value, "model.fit()", user_dir / "code", whole=False)
    assert str(error).startswith(
        "model.fit() raised InvalidArgumentError: Graph execution error: Received a label value of -6 "
        "which is outside the valid range of [0, 3)."
    )
    assert "\n" not in str(error)
