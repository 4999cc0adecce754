"""What the quota preflight saves: time to the first running job, with and without it, in one run.

The spec has three candidates, the first two without quota for it, the way new accounts
and busy projects meet them:

- Vertex AI us-central1: within its limit (16 T4 GPUs), but another job holds all 16:
  Vertex queues the job (JOB_STATE_QUEUED) until the quota frees, so without a preflight
  it waits out ``limits.max_pending`` and is cancelled;
- SageMaker us-east-1: a limit of 0 instances: ``CreateTrainingJob`` is refused with
  ResourceLimitExceeded, after the code bundle was uploaded for it;
- Vertex AI europe-west4: room, so it starts.

Every call is a real client's (the JobServiceClient, the CloudQuotasClient, boto3's
SageMaker, S3 and Service Quotas clients) to the loopback fakes the tests use; the
placement is ``cloudtrain.api.place``. The preflight's own cost is timed per provider (the
quota reads of each candidate). Prints a table; asserts nothing.

    python benchmarks/placement_preflight.py [--max-pending 5] [--rounds 3]
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # the loopback fakes live with the tests

from tests.cloudtrain.providers.fakes.cloud_quotas import FakeCloudQuotas  # noqa: E402
from tests.cloudtrain.providers.fakes.sagemaker_aws import LoopbackAws  # noqa: E402
from tests.cloudtrain.providers.fakes.vertex_jobservice import FakeJobService  # noqa: E402
from tests.cloudtrain.providers.fakes.vertex_storage import FakeStorage  # noqa: E402

from cloudtrain import api  # noqa: E402
from cloudtrain.placement import preflight  # noqa: E402
from cloudtrain.placement.resolve import resolve  # noqa: E402
from cloudtrain.providers import vertex  # noqa: E402

EXAMPLE = REPO / "examples" / "binary_classifier" / "job.yaml"
T4 = "aiplatform.googleapis.com/custom_model_training_nvidia_t4_gpus"
CANDIDATES = (
    "placement=[{provider: vertex, region: us-central1}, {provider: sagemaker, region: us-east-1},"
    " {provider: vertex, region: europe-west4}]"
)


@contextlib.contextmanager
def loopback() -> Iterator[tuple[FakeJobService, FakeCloudQuotas, LoopbackAws]]:
    """The fakes, serving, and this process's environment pointing every client at them."""
    jobs, quotas, storage = FakeJobService(), FakeCloudQuotas(), FakeStorage()
    with (
        jobs.serve() as jobs_at,
        quotas.serve() as quotas_at,
        storage.serve() as storage_at,
        LoopbackAws() as aws,
    ):
        os.environ.update(
            {
                **aws.env,
                "CLOUDTRAIN_VERTEX_ENDPOINT": jobs_at,
                "CLOUDTRAIN_VERTEX_QUOTAS_ENDPOINT": quotas_at,
                "STORAGE_EMULATOR_HOST": storage_at,
                "AWS_CONFIG_FILE": "/nonexistent",
                "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent",
            }
        )
        yield jobs, quotas, aws


def scenario(jobs: FakeJobService, quotas: FakeCloudQuotas, aws: LoopbackAws) -> None:
    """Reset the fakes to the three candidates' state: us-central1 busy, us-east-1 at 0, europe-west4 free."""
    jobs.reset()
    quotas.reset()
    aws.reset()
    quotas.set_quota("my-project", T4, {"us-central1": 16, "europe-west4": 16})
    aws.quotas.set_quota("ml.g4dn.xlarge for training job usage", 0, code="L-G4DNX")
    holder = api.submit(
        api.as_spec(EXAMPLE, ("resources.hosts=16", "limits.max_cost_usd=10000")),
        "vertex",
        clients=vertex.VertexClients(sleep=lambda s: None),
        run_id="the-other-job",
    )
    jobs.set_state(holder.id, "JOB_STATE_RUNNING")
    jobs.states = ("JOB_STATE_QUEUED",)
    jobs.on_create = lambda job: (
        jobs.set_state(job.name, "JOB_STATE_RUNNING") if "europe-west4" in job.name else None
    )


def first_running(spec_overrides: tuple[str, ...], *, check_quotas: bool, run: str) -> float:
    """Seconds from the placement's start until a candidate's job runs."""
    started = time.perf_counter()
    job = api.place(api.as_spec(EXAMPLE, spec_overrides), run_id=run, check_quotas=check_quotas)
    took = time.perf_counter() - started
    assert "europe-west4" in job.id, job.id
    return took


def preflight_seconds(spec_overrides: tuple[str, ...]) -> dict[str, float]:
    """Each provider's quota reads, timed: the preflight's own cost."""
    spent: dict[str, float] = {}
    for candidate in resolve(api.as_spec(EXAMPLE, spec_overrides)):
        started = time.perf_counter()
        preflight.check(candidate)
        spent[candidate.plan.provider] = (
            spent.get(candidate.plan.provider, 0.0) + time.perf_counter() - started
        )
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-pending", type=int, default=5, help="limits.max_pending, seconds (default 5)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's request lines
    overrides = (CANDIDATES, f"limits.max_pending={args.max_pending}s", "limits.max_cost_usd=1000")
    with tempfile.TemporaryDirectory() as cache:
        os.environ["XDG_CACHE_HOME"] = cache
        with loopback() as (jobs, quotas, aws):
            timings: dict[str, list[float]] = {"without preflight": [], "with preflight": []}
            reads: list[dict[str, float]] = []
            for number in range(args.rounds):
                for label, check in (("without preflight", False), ("with preflight", True)):
                    scenario(jobs, quotas, aws)
                    timings[label].append(
                        first_running(overrides, check_quotas=check, run=f"{label[:4]}-{number}")
                    )
                scenario(jobs, quotas, aws)
                reads.append(preflight_seconds(overrides))
    without = statistics.median(timings["without preflight"])
    with_ = statistics.median(timings["with preflight"])
    print(f"Time to the first running job, median of {args.rounds} (limits.max_pending={args.max_pending}s)")
    print(f"{'placement':<20}{'seconds':>10}")
    print(f"{'without preflight':<20}{without:>10.2f}")
    print(f"{'with preflight':<20}{with_:>10.2f}")
    print(f"{'ratio':<20}{without / with_:>10.1f}x")
    print("\nThe preflight's own cost, median per provider (all its candidates' quota reads)")
    for provider in reads[0]:
        print(f"{provider:<20}{statistics.median(r[provider] for r in reads):>10.3f} s")


if __name__ == "__main__":
    main()
