"""The context and namespace Kubernetes takes from the kubeconfig, as kubectl would."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from kubernetes.config import kube_config

from cloudtrain import api
from cloudtrain.provider.base import Discovered
from cloudtrain.providers.kubernetes.discover import discover
from cloudtrain.providers.kubernetes.kubeconfig import KubeconfigError
from cloudtrain.providers.kubernetes.settings import KubernetesSettings


def _kubeconfig(path: Path, current: str | None, contexts: dict[str, str | None]) -> Path:
    """A kubeconfig at ``path`` with ``contexts`` (name → namespace) and ``current`` as current-context."""
    config: dict[str, object] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [
            {"name": name, "context": {"cluster": "c", "user": "u", **({"namespace": ns} if ns else {})}}
            for name, ns in contexts.items()
        ],
    }
    if current is not None:
        config["current-context"] = current
    path.write_text(yaml.safe_dump(config))
    return path


def test_the_current_context_and_its_namespace(tmp_path: Path) -> None:
    path = _kubeconfig(tmp_path / "config", "training", {"training": "ml", "other": "x"})
    assert discover({"KUBECONFIG": str(path)}) == {
        "context": Discovered("training", str(path)),
        "namespace": Discovered("ml", str(path)),
    }


def test_the_same_current_context_as_the_kubernetes_client(tmp_path: Path) -> None:
    path = _kubeconfig(tmp_path / "config", "b", {"a": "one", "b": "two"})
    contexts, current = kube_config.list_kube_config_contexts(str(path))
    found = discover({"KUBECONFIG": str(path)})
    assert found["context"].value == current["name"] == "b"
    assert found["namespace"].value == current["context"]["namespace"]
    assert {c["name"] for c in contexts} == {"a", "b"}


def test_a_context_without_namespace_gives_only_the_context(tmp_path: Path) -> None:
    path = _kubeconfig(tmp_path / "config", "bare", {"bare": None})
    assert discover({"KUBECONFIG": str(path)}) == {"context": Discovered("bare", str(path))}


def test_kubeconfig_lists_files_and_the_first_to_set_a_current_context_wins(tmp_path: Path) -> None:
    # kubectl's merging rule: the first file to set a value wins; the context may be defined in another file
    first = _kubeconfig(tmp_path / "first", None, {"unused": "u"})
    second = _kubeconfig(tmp_path / "second", "gke", {"other": "o"})
    third = _kubeconfig(tmp_path / "third", "eks", {"gke": "team", "eks": "e"})
    listed = os.pathsep.join(str(p) for p in (tmp_path / "missing", first, second, third))
    assert discover({"KUBECONFIG": listed}) == {
        "context": Discovered("gke", str(second)),
        "namespace": Discovered("team", str(third)),
    }


def test_without_kubeconfig_the_file_is_under_home(tmp_path: Path) -> None:
    (tmp_path / ".kube").mkdir()
    _kubeconfig(tmp_path / ".kube" / "config", "home", {"home": "mine"})
    assert discover({"HOME": str(tmp_path)})["namespace"].value == "mine"


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"[not, a, mapping]\n", "must be a YAML mapping"),
        (b"contexts: [\n", "not valid YAML"),
        (b"\x00\xff\xfe", "not UTF-8 text"),
    ],
)
def test_a_broken_kubeconfig_is_an_error_naming_it(tmp_path: Path, content: bytes, problem: str) -> None:
    # kubectl refuses such a file too; only a job sent to Kubernetes asks (the defaults' target)
    path = tmp_path / "config"
    path.write_bytes(content)
    with pytest.raises(KubeconfigError, match=f"kubeconfig {path}: {problem}"):
        discover({"KUBECONFIG": str(path)})


def test_an_empty_or_large_kubeconfig_is_read(tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_bytes(b"")
    assert discover({"KUBECONFIG": str(path)}) == {}
    path.write_bytes(b"current-context: x\n" + b"#" * 1_000_001)  # over the 1 MB that plan once ignored
    assert discover({"KUBECONFIG": str(path)}) == {"context": Discovered("x", str(path))}


def test_in_a_pod_the_namespace_is_the_service_accounts(tmp_path: Path) -> None:
    namespace = tmp_path / "namespace"
    namespace.write_text("training\n")
    environ = {"KUBECONFIG": str(tmp_path / "none"), "KUBERNETES_SERVICE_HOST": "10.0.0.1"}
    assert discover(environ, in_cluster_namespace=namespace) == {
        "namespace": Discovered("training", str(namespace))
    }
    # outside a pod the file is not read, even where it exists
    assert discover({"KUBECONFIG": str(tmp_path / "none")}, in_cluster_namespace=namespace) == {}


def test_the_discovered_context_and_namespace_are_the_specs_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, repo: Path
) -> None:
    path = _kubeconfig(tmp_path / "config", "training", {"training": "ml"})
    monkeypatch.setenv("KUBECONFIG", str(path))
    plan = api.plan(repo / "examples" / "binary_classifier" / "job.yaml", "kubernetes")
    settings = KubernetesSettings.of(plan.spec)
    assert (settings.context, settings.namespace) == ("training", "ml")
