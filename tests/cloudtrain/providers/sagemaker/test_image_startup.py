"""image: auto on SageMaker keeps the Deep Learning Container's entrypoint, and the emulated start runs it.

The rendered request keeps the DLC's ``ENTRYPOINT`` (its telemetry hook and CUDA
forward-compatibility step run first, as on ``docker run IMAGE train``) and passes the
bootstrap as its arguments, behind a shell that sources the image's CUDA set-up so its
``LD_LIBRARY_PATH`` reaches the runtime. The start is run here in real processes, as
``--emulate sagemaker`` runs it: the emulated host's folder from the emulator and the
local provider's own host set-up, the DLC's real scripts (``dlc/``), and a bundle whose
stub runtime records what it was started with.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest

from cloudtrain import catalog, container
from cloudtrain.planning import plan
from cloudtrain.providers import sagemaker
from cloudtrain.providers.local import hosts
from cloudtrain.providers.local.launcher import resolve_ports, substitute
from cloudtrain.providers.sagemaker import emulate
from cloudtrain.providers.sagemaker.render import MAX_ARGUMENT
from cloudtrain.specfile import load_spec

ROOT = Path(__file__).resolve().parents[4]
EXAMPLE = ROOT / "examples" / "binary_classifier" / "job.yaml"
DLC_ENTRYPOINT = ["bash", "-m", "/usr/local/bin/entrypoint.sh"]
DLC_SETUP = "/usr/local/bin/start_cuda_compat.sh"
# The git blobs of the DLC's scripts at aws/deep-learning-containers e0ecede (dlc/README.md).
DLC_BLOBS = {
    "entrypoint.sh": "dfcdb6f7ca42a410e7fe92229230eb574f6f710b",
    "start_cuda_compat.sh": "791d355c5abed1c33a3dec71d1147c991b60e314",
}
# What the DLC's start_cuda_compat.sh prints where NVIDIA's compatibility libraries are absent.
NO_COMPAT = "Skipping CUDA compat setup as package not found"
# A stand-in for the CUDA set-up on a host whose driver is older than the image's CUDA.
EXPORTING_SETUP = 'echo "exporting compat"\nexport LD_LIBRARY_PATH=/usr/local/cuda/compat:$LD_LIBRARY_PATH\n'
RECORDED_ENV = ("LD_LIBRARY_PATH", "CLOUDTRAIN_ROOT")


def _request(*overrides: str, bundle: str = "0123456789abcdef.tar.gz") -> dict[str, Any]:
    p = plan(load_spec(EXAMPLE, ["resources.hosts=1", *overrides]), "sagemaker")
    return sagemaker.render(p.with_bundle(f"{p.storage.code}/{bundle}").with_run("r1"))


@pytest.mark.parametrize(
    ("overrides", "kind"),
    [
        ([], "gpu"),  # ml.g4dn.xlarge: the GPU DLC
        (["resources.accelerator=cpu"], "cpu"),  # the CPU DLC has the same entrypoint and scripts
    ],
)
def test_auto_image_keeps_the_dlc_entrypoint_and_sources_its_cuda_setup(
    overrides: list[str], kind: str
) -> None:
    algorithm = _request(*overrides)["AlgorithmSpecification"]
    assert catalog.image_startup("sagemaker", kind) is not None
    assert algorithm["ContainerEntrypoint"] == DLC_ENTRYPOINT
    shell, arguments = algorithm["ContainerArguments"][:4], algorithm["ContainerArguments"][4:]
    assert shell[:2] == ["bash", "-c"] and f'{DLC_SETUP}"; if [ -f "$setup" ]; then . "$setup"' in shell[2]
    assert shell[2].endswith('exec "$@"')
    assert arguments[:2] == ["python3", "-c"]  # the loader, then the bootstrap's lines
    assert "\n".join(arguments[3:]) == container.BOOTSTRAP.rstrip("\n")
    assert all(len(argument) <= MAX_ARGUMENT for argument in algorithm["ContainerArguments"])


def test_the_emulated_dlc_scripts_are_the_images_own() -> None:
    found = {script.name: _git_blob(script.read_bytes()) for script in emulate.STAND_INS.glob("*.sh")}
    assert found == DLC_BLOBS


def test_the_emulated_start_runs_the_images_start_up_then_the_runtime(tmp_path: Path) -> None:
    done, recorded = _start(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert recorded["argv"] == []  # the runtime's main got no arguments, as the bootstrap passes them
    # the image's entrypoint ran its CUDA step (a no-op without NVIDIA's compat libraries) first
    assert NO_COMPAT in done.stdout.splitlines()
    assert recorded["env"]["CLOUDTRAIN_ROOT"] == str(tmp_path / "run" / "hosts" / "algo-1")


def test_the_images_cuda_setup_reaches_the_runtime(tmp_path: Path) -> None:
    """Where the image's set-up exports LD_LIBRARY_PATH, the runtime's process has it."""
    done, recorded = _start(tmp_path, setup=EXPORTING_SETUP)
    assert done.returncode == 0, done.stdout + done.stderr
    assert recorded["env"]["LD_LIBRARY_PATH"].startswith("/usr/local/cuda/compat:")
    assert done.stdout.count("exporting compat") == 1  # the image's own run; the sourced one is quiet


def test_the_dlc_entrypoint_alone_would_lose_the_setup(tmp_path: Path) -> None:
    """Why the setup is sourced again: the DLC runs it in a child shell, whose export dies with it."""
    done, recorded = _start(tmp_path, setup=EXPORTING_SETUP, source_again=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "exporting compat" in done.stdout  # it ran ...
    assert "/usr/local/cuda/compat" not in recorded["env"].get("LD_LIBRARY_PATH", "")  # ... to no effect


def test_the_bootstrap_refuses_a_bundle_that_does_not_match_its_name(tmp_path: Path) -> None:
    done, recorded = _start(tmp_path, tamper=True)
    assert done.returncode != 0
    assert done.stderr.strip().endswith(
        "does not match the SHA-256 in its name: the upload is damaged. Submit again."
    )
    assert recorded == {}  # nothing from the bundle ran


def test_own_image_needs_no_image_scripts() -> None:
    request = _request("image=123456789012.dkr.ecr.us-east-1.amazonaws.com/trainer:1")
    emulated = emulate.replicas(request, "us-east-1")
    assert not any(path.startswith("usr/local/bin/") for path in emulated["cluster"]["files"])
    assert "PATH" not in emulated["cluster"]["env"]
    assert emulated["replicas"][0]["argv"][-1] == "train"


def test_the_emulated_host_finds_this_machines_python_first() -> None:
    path = emulate.replicas(_request(), "us-east-1")["cluster"]["env"]["PATH"]
    assert path.split(os.pathsep)[0] == os.path.dirname(sys.executable)


def _start(
    tmp_path: Path, *, setup: str | None = None, source_again: bool = True, tamper: bool = False
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """Run the emulated host's start as the local provider would, with a stub runtime in the bundle."""
    record = tmp_path / "recorded.json"
    staging = tmp_path / "bundle.tar.gz"
    _write_bundle_with_stub_runtime(staging, record)
    digest = hashlib.sha256(staging.read_bytes()).hexdigest()[:16]
    request = _request(bundle=f"{digest}.tar.gz")
    if not source_again:  # the DLC's entrypoint straight into the loader, without cloudtrain's shell
        request["AlgorithmSpecification"]["ContainerArguments"] = request["AlgorithmSpecification"][
            "ContainerArguments"
        ][4:]
    buckets = tmp_path / "buckets"
    uploaded = buckets / "s3" / "my-bucket" / "binary-classifier" / "code" / f"{digest}.tar.gz"
    uploaded.parent.mkdir(parents=True)
    staging.replace(uploaded)
    if tamper:
        uploaded.write_bytes(uploaded.read_bytes() + b"tampered")
    emulated = emulate.replicas(request, "us-east-1")
    [replica] = resolve_ports(emulated)
    replica = substitute(replica, {"<run>": str(tmp_path / "run"), "<buckets>": str(buckets)})
    hosts.prepare(replica)
    if setup is not None:
        (Path(replica["root"]) / DLC_SETUP.lstrip("/")).write_text(setup)
    env = {"HOME": str(tmp_path), "LANG": "C.UTF-8", **replica["env"]}
    done = subprocess.run(
        replica["argv"],
        env=env,
        cwd=replica["cwd"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        start_new_session=True,  # as the launcher starts a replica: bash -m takes no terminal
    )
    return done, json.loads(record.read_text()) if record.exists() else {}


def _write_bundle_with_stub_runtime(path: Path, record: Path) -> None:
    """A bundle whose ``cloudtrain_runtime.main.main`` records its argv and environment, then returns."""
    stub = (
        "import json, os\n"
        "def main(argv):\n"
        f"    env = {{name: os.environ[name] for name in {RECORDED_ENV!r} if name in os.environ}}\n"
        f"    json.dump({{'argv': argv, 'env': env}}, open({str(record)!r}, 'w'))\n"
    ).encode()
    with tarfile.open(path, "w:gz") as tar:
        for name, content in [
            (".cloudtrain-runtime/cloudtrain_runtime/__init__.py", b""),
            (".cloudtrain-runtime/cloudtrain_runtime/main.py", stub),
        ]:
            info = tarfile.TarInfo(name)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))


def _git_blob(content: bytes) -> str:
    """The object id git gives ``content`` (``git hash-object``)."""
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()
