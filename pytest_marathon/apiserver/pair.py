"""The APIs over one backend, under one lock: Kubernetes, Prometheus and Jaeger's query API.

The twin is not thread-safe, so a PromQL query or a trace search must not run while a
kubectl request (or the clock) steps it; `serve`, the runner's `--serve-api` and the Kubernetes
backend's own twin all serve them this way, and closing the set closes all.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from pytest_marathon.apiserver.jaeger import start_jaeger_api
from pytest_marathon.apiserver.prometheus import start_prometheus_api
from pytest_marathon.apiserver.server import KubeApiServer


@dataclass
class ServedApis:
    kube: KubeApiServer
    prometheus: Any
    jaeger: Any

    def close(self) -> None:
        self.jaeger.close()
        self.prometheus.close()
        self.kube.close()


def serve_apis(backend: Any, app: str, *, lock: threading.RLock | None = None, kube_port: int = 0,
               prometheus_port: int = 0, jaeger_port: int = 0, alerts: Any = None, **kube_options: Any) -> ServedApis:
    """Start all on loopback (`kube_options` go to `KubeApiServer`: tokens, TLS, audit); if one
    cannot start, those already started are closed again."""
    lock = lock or threading.RLock()
    kube = KubeApiServer(backend, port=kube_port, lock=lock, **kube_options)
    started: list[Any] = [kube]
    try:
        prometheus = start_prometheus_api(backend, rule_pack_app=app, port=prometheus_port, lock=lock,
                                          alerts=alerts)
        started.append(prometheus)
        jaeger = start_jaeger_api(backend, port=jaeger_port, lock=lock)
    except BaseException:
        for server in reversed(started):
            server.close()
        raise
    return ServedApis(kube, prometheus, jaeger)
