"""A compiled KFP pipeline's task, started here the way the pipeline backend starts its container.

``container_command`` builds the task's executor input (its arguments, and the
component's defaults) with kfp's own local runner (``kfp.local.executor_input_utils``) and
resolves the placeholders of the container's command and args with it
(``kfp.local.placeholder_utils``), with two differences that make it what the backend
does:

- Numbers: the backend writes an integral number as ``1``
  (kubeflow/pipelines ``backend/src/v2/metadata/converter.go``, ``PbValueToText``:
  ``strconv.FormatFloat(v, 'f', -1, 64)``, and ``encoding/json`` of lists and structs),
  where Python's ``json_format`` gives ``1.0``, which an integer proto field refuses.
- Pipeline placeholders: Google Cloud Pipeline Components' own (``_placeholders.py``:
  ``{{$.pipeline_persistent_resource_id}}``, ...) are set by Vertex AI Pipelines from the
  PipelineJob, which kfp.local does not know; the caller gives their values.

``run_module_command`` runs the resolved ``python3 -u -m MODULE ARGS`` in this process, as
``python -m`` runs it, so a test can point the module's clients at loopback fakes.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path
from typing import Any

import pytest


def container_command(
    compiled: dict[str, Any], task_prefix: str, pipeline_values: dict[str, str], task_root: Path
) -> list[str]:
    """The command line of the container of the task whose name starts with ``task_prefix``.

    ``pipeline_values`` maps a pipeline placeholder (``{{$.pipeline_...}}``) that an
    argument defaults to onto the value the PipelineJob gives it; output files go under
    ``task_root``.
    """
    from google.protobuf import json_format
    from kfp.local import executor_input_utils, placeholder_utils
    from kfp.pipeline_spec import pipeline_spec_pb2

    pipeline = json_format.ParseDict(compiled, pipeline_spec_pb2.PipelineSpec())
    [(name, task)] = [
        (name, task) for name, task in pipeline.root.dag.tasks.items() if name.startswith(task_prefix)
    ]
    component = pipeline.components[task.component_ref.name]
    container = compiled["deploymentSpec"]["executors"][component.executor_label]["container"]
    arguments = {key: _value(value.runtime_value.constant) for key, value in task.inputs.parameters.items()}
    executor_input = executor_input_utils.construct_executor_input(
        component, arguments, str(task_root), block_input_artifact=True
    )
    resolved = _integral(json_format.MessageToDict(executor_input))
    parameters = resolved["inputs"]["parameterValues"]
    for key, value in parameters.items():
        if isinstance(value, str) and value in pipeline_values:
            parameters[key] = pipeline_values[value]
    command: list[str] = placeholder_utils.replace_placeholders(
        [*container["command"], *container["args"]],
        resolved,
        pipeline_resource_name=compiled["pipelineInfo"]["name"],
        task_resource_name=name,
        pipeline_root=str(task_root),
        unique_pipeline_id="1",
    )
    return command


def run_module_command(command: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Run ``python3 -u -m MODULE ARGS...`` in this process, as ``python -m MODULE`` runs it."""
    python, _unbuffered, flag, module, *args = command
    assert (python, flag) == ("python3", "-m"), f"not a `python3 -m` command: {command}"
    monkeypatch.setattr(sys, "argv", [module, *args])
    runpy.run_module(module, run_name="__main__", alter_sys=True)


def _value(value: Any) -> Any:
    """A ``google.protobuf.Value`` as the Python value kfp's executor input takes."""
    from google.protobuf import json_format

    return _integral(json_format.MessageToDict(value))


def _integral(value: Any) -> Any:
    """``value`` with every integral float an int, as the backend prints it."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [_integral(item) for item in value]
    if isinstance(value, dict):
        return {key: _integral(item) for key, item in value.items()}
    return value
