"""A sweep on Vertex AI: the HyperparameterTuningJob render, checked against the proto and the SDK,
and its life through the real JobServiceClient against the fake JobService on loopback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.cloud import aiplatform, aiplatform_v1
from google.cloud.aiplatform import hyperparameter_tuning as hpt
from google.protobuf import json_format

import cloudtrain
from cloudtrain import api
from cloudtrain.provider.sweeps import HasTrials
from cloudtrain.providers import vertex
from cloudtrain.providers.vertex import sweep
from cloudtrain_runtime import hparams
from cloudtrain_runtime.providers.vertex import ENVIRONMENT
from tests.cloudtrain.providers.fakes.vertex_jobservice import FakeJobService
from tests.cloudtrain.providers.vertex.racing import race

REPO = Path(__file__).resolve().parents[4]
EXAMPLE = REPO / "examples" / "tuning" / "job.yaml"
PARENT = "projects/my-project/locations/us-central1"
EVERY_KIND = (
    "tuning.parameters.units={type: int, min: 8, max: 64}",
    "tuning.parameters.optimizer={type: categorical, values: [adam, sgd]}",
    "tuning.early_stopping=true",
    "tuning.algorithm=random",
    "tuning.max_failed_trials=2",
    "resources.hosts=2",
)


RUN = "r1"  # one run id for every render compared, so the run's prefix is the same


def rendered(*overrides: str) -> dict[str, Any]:
    return api.prepare(api.as_spec(EXAMPLE, overrides), "vertex", run_id=RUN).request


def parse(body: dict[str, Any]) -> aiplatform_v1.HyperparameterTuningJob:
    message = aiplatform_v1.HyperparameterTuningJob.pb(aiplatform_v1.HyperparameterTuningJob())
    json_format.ParseDict(body, message, ignore_unknown_fields=False)
    return aiplatform_v1.HyperparameterTuningJob.wrap(message)


def without_config(job_spec: dict[str, Any]) -> dict[str, Any]:
    copy = json.loads(json.dumps(job_spec))
    for pool in copy["workerPoolSpecs"]:
        pool["containerSpec"]["env"] = [
            e for e in pool["containerSpec"]["env"] if e["name"] != "CLOUDTRAIN_CONFIG"
        ]
    return copy


def test_the_render_parses_strictly_and_its_trials_run_the_jobs_own_custom_job() -> None:
    body = rendered(*EVERY_KIND)
    job = parse(body)
    plain = api.prepare(api.as_spec(EXAMPLE, (*EVERY_KIND, "tuning=null")), "vertex", run_id=RUN).request
    # pools, scheduling, base output directory: all as the job's; only the config adds the sweep's keys
    assert without_config(body["trialJobSpec"]) == without_config(plain["jobSpec"])
    assert (job.max_trial_count, job.parallel_trial_count, job.max_failed_trial_count) == (3, 2, 2)
    study = job.study_spec
    assert [(m.metric_id, m.goal.name) for m in study.metrics] == [("val_binary_accuracy", "MAXIMIZE")]
    assert study.algorithm.name == "RANDOM_SEARCH"
    assert "median_automated_stopping_spec" in study
    kinds = {
        p.parameter_id: (
            aiplatform_v1.StudySpec.ParameterSpec.pb(p).WhichOneof("parameter_value_spec"),
            p.scale_type.name,
        )
        for p in study.parameters
    }
    assert kinds == {
        "learning_rate": ("double_value_spec", "UNIT_LOG_SCALE"),
        "width": ("discrete_value_spec", "UNIT_LINEAR_SCALE"),
        "units": ("integer_value_spec", "UNIT_LINEAR_SCALE"),
        "optimizer": ("categorical_value_spec", "SCALE_TYPE_UNSPECIFIED"),  # "Leave unset for CATEGORICAL"
    }
    config = json.loads(
        next(
            e["value"]
            for e in body["trialJobSpec"]["workerPoolSpecs"][0]["containerSpec"]["env"]
            if e["name"] == "CLOUDTRAIN_CONFIG"
        )
    )
    assert config["tuned"] == {"learning_rate": "float", "width": "int", "units": "int", "optimizer": "str"}
    assert config["objective"] == "val_binary_accuracy" and "hparams" not in config  # values come per trial


def test_the_render_equals_what_the_vertex_sdk_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    """aiplatform.HyperparameterTuningJob(...).run() for the same sweep, captured before the network."""
    body = rendered(*EVERY_KIND)
    captured: list[Any] = []

    class Captured(Exception):
        pass

    def capture(self: Any, *, parent: str, hyperparameter_tuning_job: Any, timeout: Any = None) -> Any:
        captured.append(hyperparameter_tuning_job)
        raise Captured

    monkeypatch.setattr(aiplatform_v1.JobServiceClient, "create_hyperparameter_tuning_job", capture)
    from google.auth.credentials import AnonymousCredentials

    aiplatform.init(
        project="my-project",
        location="us-central1",
        credentials=AnonymousCredentials(),
        staging_bucket="gs://my-bucket",
    )
    trial = body["trialJobSpec"]
    pools = [
        json_format.MessageToDict(
            aiplatform_v1.WorkerPoolSpec.pb(
                aiplatform_v1.WorkerPoolSpec(
                    json_format.ParseDict(p, aiplatform_v1.WorkerPoolSpec.pb(aiplatform_v1.WorkerPoolSpec()))
                )
            ),
            preserving_proto_field_name=True,
        )
        for p in trial["workerPoolSpecs"]
    ]
    custom = aiplatform.CustomJob(
        display_name=body["displayName"],
        worker_pool_specs=pools,
        base_output_dir=trial["baseOutputDirectory"]["outputUriPrefix"],
    )
    tuning = aiplatform.HyperparameterTuningJob(
        display_name=body["displayName"],
        custom_job=custom,
        metric_spec={"val_binary_accuracy": "maximize"},
        parameter_spec={
            "learning_rate": hpt.DoubleParameterSpec(min=0.001, max=0.1, scale="log"),
            "width": hpt.DiscreteParameterSpec(values=[4, 16, 64], scale="linear"),
            "units": hpt.IntegerParameterSpec(min=8, max=64, scale="linear"),
            "optimizer": hpt.CategoricalParameterSpec(values=["adam", "sgd"]),
        },
        max_trial_count=3,
        parallel_trial_count=2,
        max_failed_trial_count=2,
        search_algorithm="random",
        measurement_selection="last",
        labels=body["labels"],
    )
    # The SDK has no argument for automated stopping: it is set on the resource it builds.
    tuning._gca_resource.study_spec.median_automated_stopping_spec = {}
    with pytest.raises(Captured):
        tuning.run(
            timeout=int(trial["scheduling"]["timeout"].rstrip("s")), restart_job_on_worker_restart=True
        )
    theirs = json_format.MessageToDict(aiplatform_v1.HyperparameterTuningJob.pb(captured[0]))
    ours = json_format.MessageToDict(aiplatform_v1.HyperparameterTuningJob.pb(parse(body)))
    assert theirs == ours


def test_a_trial_writes_under_its_id_as_vertex_sets_its_aip_dirs() -> None:
    spec = api.as_spec(EXAMPLE)
    body = rendered()
    planned = api.plan(spec, "vertex").with_run(RUN)
    outputs = sweep.outputs(planned, body)
    # Vertex inserts the trial's id after the base output directory, the run's prefix.
    assert outputs.model == "gs://my-bucket/tuning-example/runs/r1/{trial}/model"
    assert planned.outputs == outputs  # what `cloudtrain plan` shows
    assert (
        sweep.outputs_of(body, project="my-project", trial="3").backup
        == "gs://my-bucket/tuning-example/runs/r1/3/checkpoints"
    )


def play_trial(tmp_path: Path) -> Any:
    """The trial's container, as far as reporting goes: the runtime's objective callback on Vertex."""

    def play(job: aiplatform_v1.HyperparameterTuningJob, trial: aiplatform_v1.Trial) -> Path:
        root = tmp_path / f"trial-{trial.id}"
        report = ENVIRONMENT.objective_reporter({"CLOUD_ML_TRIAL_ID": trial.id}, str(root))
        metric = job.study_spec.metrics[0].metric_id
        callback = hparams.ObjectiveReport(metric, lambda epoch, value: report(metric, epoch, value))
        for epoch in range(2):
            callback.on_epoch_end(epoch, {metric: 0.5 + 0.1 * epoch + 0.01 * int(trial.id)})
        return root / "tmp/hypertune/output.metrics"

    return play


@pytest.mark.usefixtures("fake_gcs")
def test_submit_status_trials_best_and_list_against_the_fake(
    fake_vertex: FakeJobService, tmp_path: Path
) -> None:
    fake_vertex.on_trial = play_trial(tmp_path)
    clients = vertex.VertexClients(sleep=lambda _: None)
    handle = cloudtrain.submit(EXAMPLE, provider="vertex", clients=clients)
    assert isinstance(handle, HasTrials) and vertex.provider.owns(handle.id)
    (create,) = fake_vertex.calls("CreateHyperparameterTuningJob")
    assert create.parent == PARENT
    assert json_format.MessageToDict(
        aiplatform_v1.HyperparameterTuningJob.pb(create.hyperparameter_tuning_job)
    ) == json_format.MessageToDict(aiplatform_v1.HyperparameterTuningJob.pb(parse(handle.request)))

    final = handle.wait(poll_s=0)
    assert final.state == "succeeded"
    trials = handle.trials()
    assert [t.state for t in trials] == ["succeeded"] * 3
    # The objective the runtime wrote in cloudml-hypertune's format is the service's measurement.
    assert [t.objective for t in trials] == pytest.approx([0.61, 0.62, 0.63])
    assert [t.epochs for t in trials] == [2, 2, 2]
    assert trials[0].values == {"learning_rate": 0.001, "width": 4}
    best = handle.best()
    assert best is not None and best.number == 3
    base = handle.request["trialJobSpec"]["baseOutputDirectory"]["outputUriPrefix"]
    assert base.startswith("gs://my-bucket/tuning-example/runs/")  # the sweep's run prefix
    assert handle.outputs.model == f"{base}/3/model"

    again = cloudtrain.submit(EXAMPLE, provider="vertex", clients=clients)
    assert again.id == handle.id  # the same request attaches, it creates nothing
    assert len(fake_vertex.calls("CreateHyperparameterTuningJob")) == 1

    listed = vertex.provider.list_jobs(api.as_spec(EXAMPLE), limit=None, clients=clients)
    [summary] = [job for job in listed if job.id == handle.id]
    assert (summary.state, summary.name) == ("succeeded", "tuning-example")
    assert summary.estimate is not None and summary.usage is not None and summary.usage.seconds > 0


@pytest.mark.usefixtures("fake_gcs")
def test_cancel_moves_the_sweep_to_cancelled(fake_vertex: FakeJobService, tmp_path: Path) -> None:
    fake_vertex.on_trial = play_trial(tmp_path)
    clients = vertex.VertexClients(sleep=lambda _: None)
    handle = cloudtrain.submit(EXAMPLE, provider="vertex", clients=clients)
    handle.wait(poll_s=0, until=lambda s: s.state == "running")
    handle.cancel()
    assert handle.wait(poll_s=0).state == "cancelled"
    attached = cloudtrain.attach(handle.id, clients=clients)
    assert [t.state for t in attached.trials()] == ["stopped", "stopped"]


@pytest.mark.usefixtures("fake_gcs")
def test_two_identical_sweep_submits_at_the_same_moment_make_one_tuning_job(
    fake_vertex: FakeJobService,
) -> None:
    # regression: both looked, found nothing, and both created a HyperparameterTuningJob
    handles = race(fake_vertex, api.as_spec(EXAMPLE))
    assert len(fake_vertex.calls("CreateHyperparameterTuningJob")) == 2  # the race happened
    earliest = min(fake_vertex.tuning_jobs.values(), key=lambda job: (job.create_time, job.name))
    assert [handle.id for handle in handles] == [earliest.name] * 2
    (duplicate,) = [job for name, job in fake_vertex.tuning_jobs.items() if name != earliest.name]
    assert [call.name for call in fake_vertex.calls("CancelHyperparameterTuningJob")] == [duplicate.name]
    assert duplicate.state.name == "JOB_STATE_CANCELLING"


@pytest.mark.usefixtures("fake_gcs")
def test_a_sweep_create_whose_answer_was_lost_is_found_not_made_again(fake_vertex: FakeJobService) -> None:
    fake_vertex.lose_response("CreateHyperparameterTuningJob", grpc.StatusCode.UNAVAILABLE)
    handle = cloudtrain.submit(EXAMPLE, provider="vertex", clients=vertex.VertexClients(sleep=lambda _: None))
    assert len(fake_vertex.calls("CreateHyperparameterTuningJob")) == 1
    assert list(fake_vertex.tuning_jobs) == [handle.id]


def test_discrete_values_closer_than_vertex_takes_are_refused_at_validate() -> None:
    """DiscreteValueSpec: values "in increasing order and at least 1e-10 apart" (aiplatform_v1 study.py)."""
    from cloudtrain.errors import SpecError

    close = api.as_spec(
        EXAMPLE, ("tuning.parameters.width={type: discrete, values: [1.0, 1.00000000000001]}",)
    )
    with pytest.raises(SpecError) as caught:
        api.validate(close, "vertex")
    assert caught.value.problems == [
        "tuning.parameters.width: the values 1.0 and 1.00000000000001 are less than 1e-10 apart; Vertex AI "
        "takes discrete values at least that far apart. Drop one of them."
    ]
