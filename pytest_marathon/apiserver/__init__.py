"""The twin behind the real APIs: a Kubernetes REST API server (and, where present, a
Prometheus HTTP API), so kubectl, the `kubernetes` client and other tools an SRE knows work
against the system under test."""

from pytest_marathon.apiserver.server import KubeApiServer, start_kube_api

__all__ = ["KubeApiServer", "start_kube_api"]
