"""The kubeconfig: read only for a job sent to Kubernetes, within bounds, and every defect one line.

Regressions of issue 40: a malformed ``~/.kube/config`` broke ``validate``, ``plan``,
``cost``, ``list`` and ``submit --dry-run`` of local and Vertex jobs (an AttributeError,
5.5 GB for an alias bomb, a hang on a FIFO, a RecursionError), ``check`` called a broken
file "missing", and a valid 2 MB kubeconfig was ignored by ``plan`` but read by ``check``.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from cloudtrain import api, files
from cloudtrain.providers.kubernetes import clients as kube_clients
from cloudtrain.providers.kubernetes import kubeconfig
from cloudtrain.providers.kubernetes.clients import KubernetesClients, connect
from cloudtrain.providers.kubernetes.kubeconfig import KubeconfigError
from cloudtrain.providers.kubernetes.settings import KubernetesSettings
from cloudtrain.providers.kubernetes.setup_checks import check_setup
from tests.cloudtrain.providers.fakes.kubernetes_api import FakeKubernetes
from tests.conftest import Result

EXAMPLE = str(Path(__file__).resolve().parents[4] / "examples" / "binary_classifier" / "job.yaml")
# The issue's own case: a context whose body is a list, named as the current context.
LIST_CONTEXT = "contexts: [{name: c, context: [a]}]\ncurrent-context: c\n"
# 362 bytes that expand to 387,420,489 values, as the current context.
BOMB = (
    'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    + "".join(f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(8))
    + "contexts: [{name: c, context: {namespace: *i}}]\ncurrent-context: c\n"
)

HOSTILE = [
    (LIST_CONTEXT, "contexts[0].context must be a mapping (key: value lines). Received: a list."),
    (BOMB, "holds more than 400,000 values once its aliases are expanded"),
    ("[" * 5000 + "]" * 5000, "nested deeper than 32 levels"),  # a 5,000-deep list
    (b"\x00\xff\xfe\x80binary", "not UTF-8 text (byte 1)"),  # binary bytes
    (
        "just a string\n",
        "must be a YAML mapping (apiVersion, clusters, contexts, users). Received: a string.",
    ),
    ("contexts:\n\t- name: c\n", "not valid YAML (line 2: "),  # indented with a tab
    ("current-context: [a]\n", "current-context must be a context's name. Received: a list."),
    ("clusters: {name: c}\n", "clusters must be a list of entries (- name: ...). Received: a mapping."),
    ("users: [{user: {}}]\n", "users[0].name must be a non-empty string. Received: nothing."),
    ("users: [just-a-name]\n", "users[0] must be a mapping (name: ..., user: ...). Received: a string."),
    ("contexts: [{name: c, context: {namespace: 7}}]\n", "contexts[0].context.namespace must be a string."),
    ("clusters: [{name: c, cluster: {server: [x]}}]\n", "clusters[0].cluster.server must be a string."),
    ("a: !!int abc\n", "holds a value YAML cannot build"),  # a tag that cannot be built
]


def _write(path: Path, content: str | bytes) -> Path:
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


@pytest.mark.parametrize(("content", "problem"), HOSTILE)
def test_a_hostile_kubeconfig_is_one_line_naming_the_file_and_the_problem(
    tmp_path: Path, content: str | bytes, problem: str
) -> None:
    path = _write(tmp_path / "config", content)
    with pytest.raises(KubeconfigError) as refused:
        kubeconfig.read({"KUBECONFIG": str(path)})
    assert str(refused.value).startswith(f"kubeconfig {path}: ")
    assert problem in str(refused.value)
    assert str(refused.value).endswith(kubeconfig.FIX) and "\n" not in str(refused.value)


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        ("/dev/zero", "larger than 4,194,304 bytes"),  # its size is 0, and it never ends
        (".", "is a folder, not a file."),
    ],
)
def test_a_device_or_a_folder_is_one_line(path: str, problem: str) -> None:
    with pytest.raises(KubeconfigError, match=problem):
        kubeconfig.read({"KUBECONFIG": path})


def test_a_fifo_never_hangs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fifo = tmp_path / "config"
    os.mkfifo(fifo)
    assert kubeconfig.read({"KUBECONFIG": str(fifo)}).files == [fifo]  # no writer: empty at once
    monkeypatch.setattr(files, "WAIT_S", 0.2)
    writer = os.open(fifo, os.O_RDWR)  # a writer that never writes
    try:
        with pytest.raises(KubeconfigError, match=r"nothing came in 0\.2 s"):
            kubeconfig.read({"KUBECONFIG": str(fifo)})
    finally:
        os.close(writer)


def test_every_file_of_kubeconfig_shares_one_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kubeconfig, "MAX_BYTES", 100)
    first = _write(tmp_path / "first", "# " + "x" * 60 + "\n")
    second = _write(tmp_path / "second", "# " + "x" * 60 + "\n")
    with pytest.raises(KubeconfigError, match=f"kubeconfig {second}: larger than 37 bytes"):
        kubeconfig.read({"KUBECONFIG": os.pathsep.join([str(first), str(second)])})


def test_an_empty_kubeconfig_is_an_empty_config(tmp_path: Path) -> None:
    path = _write(tmp_path / "config", "# nothing yet\n")
    found = kubeconfig.read({"KUBECONFIG": str(path)})
    assert (found.files, found.current, found.contexts) == ([path], None, {})


# The commands of a local or Vertex job never read the kubeconfig; a Kubernetes job's do.
SPEC_COMMANDS = [
    ("validate", EXAMPLE),
    ("plan", EXAMPLE),
    ("render", EXAMPLE),
    ("submit", EXAMPLE, "--dry-run"),
]


@pytest.mark.parametrize("provider", ["local", "vertex"])
@pytest.mark.parametrize("command", SPEC_COMMANDS)
def test_a_broken_kubeconfig_never_touches_a_local_or_vertex_job(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    run_cli: Callable[..., Result],
    command: tuple[str, ...],
    provider: str,
) -> None:
    # regression: AttributeError in kubernetes/discover.py _namespace_of, for every command
    monkeypatch.setenv("KUBECONFIG", str(_write(tmp_path / "config", LIST_CONTEXT)))
    result = run_cli(*command, "--provider", provider)
    assert result.code == 0, result.err


@pytest.mark.parametrize(
    "command",
    [("cost", EXAMPLE), ("cost", EXAMPLE, "--throughput", "100@t4"), ("list", "--provider", "local")],
)
def test_cost_and_list_of_other_providers_never_read_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli: Callable[..., Result], command: tuple[str, ...]
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(_write(tmp_path / "config", LIST_CONTEXT)))
    monkeypatch.setenv("CLOUDTRAIN_LOCAL_HOME", str(tmp_path / "home"))
    result = run_cli(*command)
    assert result.code == 0, result.err


@pytest.mark.parametrize(
    "command",
    [*SPEC_COMMANDS, ("check",)],
)
def test_a_kubernetes_job_says_what_is_wrong_with_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli: Callable[..., Result], command: tuple[str, ...]
) -> None:
    # regression: check said "no kubeconfig at $KUBECONFIG or ~/.kube/config" for a broken one
    path = _write(tmp_path / "config", LIST_CONTEXT)
    monkeypatch.setenv("KUBECONFIG", str(path))
    result = run_cli(*command, "--provider", "kubernetes")
    assert (result.code, result.out) == (1, "")
    assert result.err == (
        f"Error: kubeconfig {path}: contexts[0].context must be a mapping (key: value lines). "
        f"Received: a list. {kubeconfig.FIX}\n"
    )


def test_the_clients_check_line_names_the_defect(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path / "config", "contexts:\n\t- name: c\n")
    monkeypatch.setenv("KUBECONFIG", str(path))
    (line,) = check_setup(KubernetesClients())
    assert (line.check, line.status, line.fix) == ("cluster", "fail", kubeconfig.FIX)
    assert line.detail.startswith(f"kubeconfig {path}: not valid YAML (line 2: ")


def _large(config: dict[str, Any], count: int) -> dict[str, Any]:
    """``config`` with ``count`` more clusters, users and contexts, each with a 1.5 kB certificate."""
    certificate = "LS0t" * 400
    return {
        **config,
        "clusters": config["clusters"]
        + [
            {
                "name": f"c{i}",
                "cluster": {"server": "https://10.0.0.1", "certificate-authority-data": certificate},
            }
            for i in range(count)
        ],
        "users": config["users"] + [{"name": f"u{i}", "user": {"token": "t" * 40}} for i in range(count)],
        "contexts": config["contexts"]
        + [{"name": f"x{i}", "context": {"cluster": f"c{i}", "user": f"u{i}"}} for i in range(count)],
    }


def test_a_valid_2_mb_kubeconfig_is_read_the_same_by_plan_and_check(
    fake_cluster: FakeKubernetes, repo: Path
) -> None:
    # regression: plan ignored a kubeconfig over 1 MB (no namespace in the JobSet); check read it
    path = Path(os.environ["KUBECONFIG"])
    path.write_text(yaml.safe_dump(_large(yaml.safe_load(path.read_text()), 1300)))
    assert path.stat().st_size > 2_000_000
    planned = api.plan(repo / "examples" / "binary_classifier" / "job.yaml", "kubernetes")
    settings = KubernetesSettings.of(planned.spec)
    assert (settings.context, settings.namespace) == ("fake", "training")
    assert [line.status for line in check_setup(KubernetesClients())] == ["ok"] * 4


def test_the_client_is_given_what_was_read_not_the_file_again(
    fake_cluster: FakeKubernetes, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a pipe reads once: the client reading the file again would find it empty
    text = Path(os.environ["KUBECONFIG"]).read_bytes()
    reader, writer = os.pipe()
    sender = threading.Thread(target=lambda: os.write(writer, text) and os.close(writer))
    sender.start()
    monkeypatch.setenv("KUBECONFIG", f"/dev/fd/{reader}")
    try:
        clients = KubernetesClients()
        assert clients.target_namespace() == "training" and clients.found_context == "fake"
    finally:
        sender.join()
        os.close(reader)


def test_a_relative_certificate_is_found_beside_the_file_that_names_it(tmp_path: Path) -> None:
    # kubectl and the client's KubeConfigMerger resolve it against that file's folder
    (tmp_path / "team").mkdir()
    (tmp_path / "team" / "ca.crt").write_text("-----BEGIN CERTIFICATE-----\n")
    first = _write(tmp_path / "first", yaml.safe_dump({"current-context": "t"}))
    second = _write(
        tmp_path / "team" / "config",
        yaml.safe_dump(
            {
                "clusters": [
                    {
                        "name": "t",
                        "cluster": {"server": "https://127.0.0.1:1", "certificate-authority": "ca.crt"},
                    }
                ],
                "users": [{"name": "t", "user": {"token": "x"}}],
                "contexts": [{"name": "t", "context": {"cluster": "t", "user": "t", "namespace": "ml"}}],
            }
        ),
    )
    api_client, context, namespace = connect(None, {"KUBECONFIG": f"{first}{os.pathsep}{second}"})
    assert (context, namespace) == ("t", "ml")
    assert api_client.configuration.ssl_ca_cert == str(tmp_path / "team" / "ca.crt")


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"current-context": "gone"}, "its current-context 'gone' is not defined"),
        ({"contexts": [{"name": "a", "context": {}}]}, "it sets no current-context. Contexts: a."),
        (
            {
                "contexts": [{"name": "a", "context": {"cluster": "missing", "user": "u"}}],
                "current-context": "a",
            },
            "The kubeconfig context 'a' (",
        ),
    ],
)
def test_a_context_that_cannot_be_used_is_one_line(
    tmp_path: Path, config: dict[str, Any], message: str
) -> None:
    path = _write(tmp_path / "config", yaml.safe_dump(config))
    with pytest.raises(kube_clients.CredentialsError) as refused:
        connect(None, {"KUBECONFIG": str(path)})
    assert message in str(refused.value) and "\n" not in str(refused.value)


def test_plan_json_names_the_kubeconfig_as_the_source(
    fake_cluster: FakeKubernetes, run_cli: Callable[..., Result]
) -> None:
    planned = json.loads(run_cli("plan", EXAMPLE, "--provider", "kubernetes", "--json").out)
    assert planned["sources"]["kubernetes.namespace"] == f"environment:{os.environ['KUBECONFIG']}"
