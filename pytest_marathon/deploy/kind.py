"""The Kind cluster configuration of an app: the paper's shape, zones from `app.yaml`.

One control plane and one worker per node of the app definition (Online Boutique: four, two
per zone), each worker labelled `topology.kubernetes.io/zone` with its node's zone, so a
cluster's zones are the twin's. Kind applies `labels` to a node at creation
(kubernetes-sigs/kind `pkg/apis/config/v1alpha4/types.go`, `Node.Labels`), and the kubelet may
set this label on itself (kubernetes `pkg/kubelet/apis/well_known_labels.go`).
"""

from __future__ import annotations

from typing import Any

from pytest_marathon.twin.appspec import load_app

ZONE_LABEL = "topology.kubernetes.io/zone"


def kind_config(app: str) -> dict[str, Any]:
    spec = load_app(app)
    workers = [{"role": "worker", "labels": {ZONE_LABEL: node.zone}} for node in spec.nodes]
    return {"kind": "Cluster", "apiVersion": "kind.x-k8s.io/v1alpha4",
            "nodes": [{"role": "control-plane"}, *workers]}
