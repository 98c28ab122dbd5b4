"""`pytest-marathon cluster up|down`, the Kind configuration and the `--run-cluster` switch,
on a machine without a cluster: what is checked is what happens before anything is created."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from pytest_marathon.backends import create_backend
from pytest_marathon.cli import main
from pytest_marathon.deploy.kind import ZONE_LABEL, kind_config

ROOT = Path(__file__).resolve().parents[1]


def _stub(bin_dir: Path, name: str, log: Path) -> None:
    """A stand-in for a tool the project does not own, recording that it was called."""
    path = bin_dir / name
    path.write_text(f"#!/bin/sh\necho {name} \"$@\" >> {log}\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def _engine_down() -> bool:
    docker = shutil.which("docker")
    return docker is not None and subprocess.run([docker, "info"], capture_output=True).returncode != 0


def test_kind_config_has_the_papers_shape_with_the_twins_zones() -> None:
    """1 control plane + 4 workers over two zones, each worker in the zone of one twin node."""
    config = kind_config("boutique")
    assert config["kind"] == "Cluster" and config["apiVersion"] == "kind.x-k8s.io/v1alpha4"
    roles = Counter(node["role"] for node in config["nodes"])
    assert roles == {"control-plane": 1, "worker": 4}
    zones = Counter(n["labels"][ZONE_LABEL] for n in config["nodes"] if n["role"] == "worker")
    twin_zones = Counter(n["metadata"]["labels"][ZONE_LABEL] for n in create_backend("boutique", seed=1).resources("nodes"))
    assert zones == twin_zones and len(zones) == 2 and set(zones.values()) == {2}


@pytest.mark.skipif(not _engine_down(), reason="needs a docker CLI whose engine is not running")
def test_up_without_a_docker_engine_is_one_error_line_and_creates_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    bin_dir, log = tmp_path / "bin", tmp_path / "calls.log"
    bin_dir.mkdir()
    _stub(bin_dir, "kind", log)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "kubeconfig"))
    assert main(["cluster", "up", "--name", "t"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["pytest-marathon: error: cannot create a Kind cluster: docker is installed but its engine "
                   "is not reachable (`docker info` failed)"]
    assert not log.exists()  # kind was never run
    assert not (tmp_path / "kubeconfig").exists()
    assert main(["cluster", "down", "--name", "t"]) == 2
    assert "engine is not reachable" in capsys.readouterr().err
    assert not log.exists()


def test_up_names_every_missing_tool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    bin_dir, log = tmp_path / "bin", tmp_path / "calls.log"
    bin_dir.mkdir()
    _stub(bin_dir, "kind", log)
    monkeypatch.setenv("PATH", str(bin_dir))
    assert main(["cluster", "up"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "pytest-marathon: error: cannot create a Kind cluster: kubectl, docker not found on PATH"]
    assert main(["cluster", "up", "--context", "kind-other"]) == 2  # reusing needs kubectl only
    assert capsys.readouterr().err.strip() == "pytest-marathon: error: cannot deploy: kubectl not found on PATH"
    assert not log.exists()


def test_down_does_not_touch_a_reused_context(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cluster", "down", "--context", "prod"]) == 2
    assert "a reused --context is left as it is" in capsys.readouterr().err


CLUSTER_TESTS = """
import pytest

@pytest.mark.cluster
def test_needs_a_cluster():
    pass

def test_plain():
    pass
"""


def test_cluster_tests_are_skipped_without_run_cluster(pytester: pytest.Pytester) -> None:
    pytester.makeconftest((ROOT / "conftest.py").read_text())
    pytester.makeini("[pytest]\nmarkers =\n    cluster: needs a cluster\n")
    pytester.makepyfile(CLUSTER_TESTS)
    result = pytester.runpytest("-p", "no:randomly", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*needs a real cluster: pass --run-cluster*"])
    result = pytester.runpytest("-p", "no:randomly", "--run-cluster")
    result.assert_outcomes(passed=2)


def test_marathon_cluster_fixture_skips_naming_what_is_missing(pytester: pytest.Pytester,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makepyfile("""
        def test_uses_it(marathon_cluster):
            raise AssertionError("never reached without a cluster")
    """)
    monkeypatch.setenv("PATH", str(pytester.path))  # no kubectl, docker or kind
    result = pytester.runpytest("-p", "no:randomly", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*no cluster: kubectl, docker, kind not found on PATH (or pass --marathon-context)*"])


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_up_with_a_context_applies_the_rule_file_stream_and_waits_on_both_namespaces() -> None:
    """What `cluster up --context C` asks kubectl to do (the tool's replies stand in for a
    cluster this machine does not have)."""
    from pytest_marathon.deploy.cluster import up
    from pytest_marathon.deploy.manifests import render, to_yaml

    calls: list[tuple[list[str], str | None]] = []
    assert up("boutique", context="kind-x", run=lambda argv, stdin: calls.append((argv, stdin)) or "") == "kind-x"
    (apply, stream), *waits = calls
    assert apply == ["kubectl", "--context", "kind-x", "apply", "-f", "-"]
    assert stream == to_yaml(render("boutique", rules_format="file"))
    assert [argv[4] for argv, _ in waits] == ["boutique", "monitoring"]
    assert all(argv[5:8] == ["wait", "--for=condition=Available", "deployment"] for argv, _ in waits)


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_marathon_cluster_fixture_deploys_to_the_given_context(pytester: pytest.Pytester,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """With --marathon-context the fixture creates nothing and hands kubectl that context; an
    unknown one is kubectl's own error, on the test that asked for the cluster."""
    pytester.makepyfile("""
        def test_uses_it(marathon_cluster):
            raise AssertionError("never reached without a cluster")
    """)
    (pytester.path / "kubeconfig").write_text("apiVersion: v1\nkind: Config\n")
    monkeypatch.setenv("KUBECONFIG", str(pytester.path / "kubeconfig"))
    result = pytester.runpytest("-p", "no:randomly", "--marathon-context", "no-such-context")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*kubectl --context no-such-context failed (exit 1)*no-such-context*"])
