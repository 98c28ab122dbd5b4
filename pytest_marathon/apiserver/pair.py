"""Both APIs over one backend: the Kubernetes API and the Prometheus API, under one lock.

The twin is not thread-safe, so a PromQL query must not run while a kubectl request (or the
clock) steps it; `serve`, the runner's `--serve-api` and the Kubernetes backend's own twin all
serve the pair this way, and closing it closes both.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from pytest_marathon.apiserver.prometheus import start_prometheus_api
from pytest_marathon.apiserver.server import KubeApiServer


@dataclass
class ServedApis:
    kube: KubeApiServer
    prometheus: Any

    def close(self) -> None:
        self.prometheus.close()
        self.kube.close()


def serve_apis(backend: Any, app: str, *, lock: threading.RLock | None = None, kube_port: int = 0,
               prometheus_port: int = 0, alerts: Any = None, **kube_options: Any) -> ServedApis:
    """Start both on loopback (`kube_options` go to `KubeApiServer`: tokens, TLS, audit); if the
    second cannot start, the first is closed again."""
    lock = lock or threading.RLock()
    kube = KubeApiServer(backend, port=kube_port, lock=lock, **kube_options)
    try:
        prometheus = start_prometheus_api(backend, rule_pack_app=app, port=prometheus_port, lock=lock,
                                          alerts=alerts)
    except BaseException:
        kube.close()
        raise
    return ServedApis(kube, prometheus)
