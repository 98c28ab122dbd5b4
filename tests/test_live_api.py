"""`--serve-api`: the Kubernetes and Prometheus APIs over a marathon's live backend, read-only.

A person watches with kubectl while the run is recorded (a thread stands in for them, while an
in-process agent holds invocation 1 open); every write is refused; a sandboxed `cmd:` agent,
told the ports, cannot connect, while the same program outside the sandbox can (so the check
would see a leak). A two-invocation scenario keeps each run to seconds.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from isolation_support import need_sandbox

from pytest_marathon.config import RunConfig
from pytest_marathon.isolation.probe import sandbox_support
from pytest_marathon.run.live_api import READ_ONLY, ServeApi
from pytest_marathon.runner import run_marathon

KUBECTL = shutil.which("kubectl")
QUIET = ("name: quiet\ndescription: no faults\nwarmup_s: 60\ninjection_window_s: 240\n"
         "observation_s: 0\narrivals: 0\nintensity: {start: 1.0, end: 1.0}\n"
         "lifetime_s: {min: 240, max: 720}\nmax_concurrent: 1\n")
KNOCK = """
import json, os, sys, urllib.request
reached = []
for url in json.loads(os.environ["KNOCK_URLS"]):
    try:
        urllib.request.urlopen(url, timeout=3)
        reached.append(url)
    except urllib.error.HTTPError:
        reached.append(url)
    except Exception:
        pass
print(json.dumps(reached))
sys.exit(3 if reached else 0)
"""


def _config(tmp_path: Path, agent: str) -> RunConfig:
    tmp_path.mkdir(parents=True, exist_ok=True)
    scenario = tmp_path / "quiet.yaml"
    scenario.write_text(QUIET)
    return RunConfig(app="boutique", agent=agent, seed=1, scenario=str(scenario), out_dir=tmp_path / "out")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Holding:
    """An in-process agent that keeps invocation 1 open until the watcher is done."""

    name = "holding"
    description = "waits at its first invocation"
    uses_models = False

    def __init__(self, done: threading.Event) -> None:
        self.done = done

    def invoke(self, ctx: Any) -> None:
        if ctx.n == 1:
            self.done.wait(90)


def _get(url: str, method: str = "GET") -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(url, method=method, data=b"{}" if method != "GET" else None)
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@pytest.mark.skipif(KUBECTL is None, reason="kubectl not installed")
def test_kubectl_watches_the_live_run_and_every_write_is_refused(tmp_path: Path) -> None:
    lines: list[str] = []
    ready, done = threading.Event(), threading.Event()
    seen: dict[str, Any] = {}

    def announce(line: str) -> None:
        lines.append(line)
        if line.startswith("kubeconfig:"):
            ready.set()

    def watch() -> None:
        try:
            assert ready.wait(60)
            kubeconfig = lines[3].split()[1]
            kube, prometheus = lines[0].split()[2], lines[1].split()[2]
            seen["kube"], seen["kubeconfig"] = kube, kubeconfig

            def kubectl(*args: str) -> subprocess.CompletedProcess[str]:
                assert KUBECTL is not None
                return subprocess.run([KUBECTL, "--kubeconfig", kubeconfig, "--cache-dir", str(tmp_path / "cache"),
                                       *args], capture_output=True, text=True, timeout=60, check=False)

            seen["pods"] = kubectl("get", "pods")
            seen["scale"] = kubectl("scale", "deployment", "frontend", "--replicas", "3")
            seen["clock"] = _get(f"{kube}/marathon/v1/clock", "POST")
            seen["query"] = _get(f"{prometheus}/api/v1/query?query=up")
        finally:
            done.set()

    watcher = threading.Thread(target=watch)
    watcher.start()
    result = run_marathon(_config(tmp_path, "noop"), agent=Holding(done), baseline_cache=None, score=False,
                          serve_api=ServeApi(announce=announce))
    watcher.join(30)
    assert [line.split(":")[0] for line in lines] == ["Kubernetes API", "Prometheus API", "Jaeger API", "kubeconfig"]
    pods = seen["pods"]
    assert pods.returncode == 0, pods.stderr
    assert pods.stdout.split()[:5] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert any(line.startswith("frontend-") and " Running " in line for line in pods.stdout.splitlines())
    assert seen["scale"].returncode == 1 and READ_ONLY in seen["scale"].stderr
    assert seen["clock"][0] == 403 and seen["clock"][1]["message"] == READ_ONLY
    assert seen["query"][0] == 200 and seen["query"][1]["status"] == "success"
    # closed with the run, the kubeconfig with them; the run itself recorded as ever
    assert not Path(seen["kubeconfig"]).exists()
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(f"{seen['kube']}/version", timeout=3)
    assert (result.bundle / "manifest.json").exists()
    statuses = [json.loads(r)["status"] for r in (result.bundle / "invocations.jsonl").read_text().splitlines()]
    assert statuses == ["ok", "ok"]


def _knocking_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], list[str]]:
    kube_port, prometheus_port = _free_port(), _free_port()
    urls = [f"http://127.0.0.1:{kube_port}/version", f"http://127.0.0.1:{prometheus_port}/api/v1/query?query=up"]
    monkeypatch.setenv("KNOCK_URLS", json.dumps(urls))
    tmp_path.mkdir(parents=True, exist_ok=True)
    program = tmp_path / "knock.py"
    program.write_text(KNOCK)
    lines: list[str] = []
    result = run_marathon(_config(tmp_path, f'cmd:"{sys.executable}" "{program}"'), baseline_cache=None,
                          score=False, serve_api=ServeApi(announce=lines.append, kube_port=kube_port,
                                                          prometheus_port=prometheus_port))
    assert f"127.0.0.1:{kube_port}" in lines[0] and f"127.0.0.1:{prometheus_port}" in lines[1]
    records = [json.loads(r) for r in (result.bundle / "invocations.jsonl").read_text().splitlines()]
    return [r["status"] for r in records], lines


def test_a_sandboxed_cmd_agent_cannot_reach_the_served_apis(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    need_sandbox()
    statuses, _ = _knocking_run(tmp_path / "sandboxed", monkeypatch)
    assert statuses == ["ok", "ok"]  # every knock failed: the sandbox's loopback is its own
    monkeypatch.setenv("MARATHON_SANDBOX", "off")  # the same program outside the sandbox reaches them
    sandbox_support.cache_clear()
    try:
        statuses, _ = _knocking_run(tmp_path / "plain", monkeypatch)
    finally:
        monkeypatch.delenv("MARATHON_SANDBOX")
        sandbox_support.cache_clear()
    assert statuses != ["ok", "ok"]


@pytest.mark.slow  # two scored runs (~15 s); the runner's side is in the default tests above
def test_the_plugin_and_the_cli_print_the_addresses(pytester: pytest.Pytester, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """`--marathon-serve-api` writes them past output capturing; `run --serve-api` on stderr
    (stdout stays the result, `--json` parseable). The noop agent is its own baseline: one run."""
    scenario = tmp_path / "quiet.yaml"
    scenario.write_text(QUIET)
    result = pytester.runpytest("--marathon-app=boutique", "--agent=noop", f"--marathon-scenario={scenario}",
                                "--marathon-serve-api", "-p", "no:cacheprovider", "-p", "no:randomly")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["marathon: Kubernetes API: http://127.0.0.1:*  (read-only while the marathon*",
                                 "marathon: Prometheus API: http://127.0.0.1:*",
                                 "marathon: kubeconfig: *kubeconfig.yaml  (kubectl --kubeconfig *get pods)"])
    capsys.readouterr()
    from pytest_marathon.cli import main

    code = main(["run", "--app", "boutique", "--agent", "noop", "--scenario", str(scenario), "--seed", "1",
                 "--out", str(tmp_path / "cli"), "--baseline-cache", str(tmp_path / "cache"), "--serve-api",
                 "--json", "--alerts", "0"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)
    assert [line.split(":")[1].strip() for line in err.splitlines() if line.startswith("pytest-marathon: ")
            and ("API:" in line or "kubeconfig:" in line)] == ["Kubernetes API", "Prometheus API", "Jaeger API", "kubeconfig"]


def test_time_the_runner_moves_is_a_new_resource_version() -> None:
    """The runner steps the backend itself, not through the API: the API still versions it, so
    a watch (`kubectl get -w`, `rollout status`) sees the world move."""
    from pytest_marathon.apiserver.server import start_kube_api
    from pytest_marathon.backends import create_backend

    twin = create_backend("boutique", 1)
    with start_kube_api(twin) as server:
        def version() -> str:
            return _get(f"{server.url}/apis/apps/v1/namespaces/boutique/deployments")[1]["metadata"]["resourceVersion"]

        first = version()
        assert version() == first
        with server.lock:
            twin.advance_to(twin.now + twin.tick_seconds)
        assert int(version()) > int(first)
