"""Bring an app up on a real cluster: create a Kind cluster (or reuse a context), apply the
rendered manifests, wait until every Deployment is Available; and tear the Kind cluster down.

Everything goes through the tools a user already has (`docker`, `kind`, `kubectl`), so what runs
here is what the user could type. A missing tool is found before anything is created.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

import yaml

from pytest_marathon.deploy.kind import kind_config
from pytest_marathon.deploy.manifests import render, to_yaml
from pytest_marathon.deploy.monitoring import NAMESPACE as MONITORING
from pytest_marathon.twin.appspec import load_app

DEFAULT_NAME = "marathon"
READY_TIMEOUT = "600s"
Runner = Callable[[list[str], str | None], str]


class ClusterError(ValueError):
    """A cluster cannot be provided; the message says what is missing or what failed."""


def _run(argv: list[str], stdin: str | None = None) -> str:
    done = subprocess.run(argv, input=stdin, capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:] or ["no output"]
        raise ClusterError(f"{' '.join(argv[:3])} failed (exit {done.returncode}): {last[0]}")
    return done.stdout


def missing_tools(*, create: bool) -> str | None:
    """What keeps this machine from creating (or, `create=False`, deploying to) a cluster, as one
    line naming every missing piece; None when nothing does. A docker CLI whose engine does not
    answer (`docker info` fails) counts as missing: kind could not start a node."""
    needed = ["kubectl", *(["docker", "kind"] if create else [])]
    absent = [tool for tool in needed if shutil.which(tool) is None]
    problems = [f"{', '.join(absent)} not found on PATH"] if absent else []
    if create and "docker" not in absent:
        done = subprocess.run(["docker", "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True)
        if done.returncode != 0:
            problems.append("docker is installed but its engine is not reachable (`docker info` failed)")
    return "; ".join(problems) or None


def kind_context(name: str) -> str:
    """The kubeconfig context `kind create cluster --name NAME` writes."""
    return f"kind-{name}"


def up(app: str, *, name: str = DEFAULT_NAME, context: str | None = None, run: Runner = _run) -> str:
    """Create the Kind cluster `name` (unless `context` names one to reuse), deploy the app and
    its monitoring stack, wait for them; the context to use."""
    problem = missing_tools(create=context is None)
    if problem:
        raise ClusterError(f"cannot {'deploy' if context else 'create a Kind cluster'}: {problem}")
    if context is None:
        with tempfile.TemporaryDirectory(prefix="marathon-kind-") as tmp:
            config = Path(tmp) / "kind.yaml"
            config.write_text(yaml.safe_dump(kind_config(app), sort_keys=False), encoding="utf-8")
            run(["kind", "create", "cluster", "--name", name, "--config", str(config), "--wait", "300s"], None)
        context = kind_context(name)
    deploy(app, context, run=run)
    return context


def deploy(app: str, context: str, *, run: Runner = _run) -> None:
    """Apply the manifests (the rule pack as a rule file: a bare cluster has no Prometheus
    Operator) and wait until every Deployment of both namespaces is Available."""
    run(["kubectl", "--context", context, "apply", "-f", "-"], to_yaml(render(app, rules_format="file")))
    for ns in (load_app(app).namespace, MONITORING):
        run(["kubectl", "--context", context, "-n", ns, "wait", "--for=condition=Available",
             "deployment", "--all", f"--timeout={READY_TIMEOUT}"], None)


def down(*, name: str = DEFAULT_NAME, run: Runner = _run) -> None:
    problem = missing_tools(create=True)
    if problem:
        raise ClusterError(f"cannot delete a Kind cluster: {problem}")
    run(["kind", "delete", "cluster", "--name", name], None)
