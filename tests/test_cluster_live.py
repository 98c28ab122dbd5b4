"""On a real cluster (`--run-cluster`, with `--marathon-context C` or Docker and kind): the
rendered manifests come up and every Deployment of the app and its monitoring stack is
Available, read through the `kubernetes` client."""

from __future__ import annotations

import pytest

from pytest_marathon.deploy.manifests import render

pytestmark = pytest.mark.cluster


def test_every_deployment_is_available(marathon_cluster: str) -> None:
    kubernetes = pytest.importorskip("kubernetes")
    kubernetes.config.load_kube_config(context=marathon_cluster)
    apps = kubernetes.client.AppsV1Api()
    wanted = {(d["metadata"]["namespace"], d["metadata"]["name"])
              for d in render("boutique", rules_format="file") if d["kind"] == "Deployment"}
    available = set()
    for namespace in sorted({ns for ns, _ in wanted}):
        for dep in apps.list_namespaced_deployment(namespace).items:
            conditions = {c.type: c.status for c in dep.status.conditions or []}
            if conditions.get("Available") == "True":
                available.add((namespace, dep.metadata.name))
    assert wanted <= available, sorted(wanted - available)
