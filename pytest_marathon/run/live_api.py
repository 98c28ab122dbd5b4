"""The Kubernetes, Prometheus and Jaeger APIs over a marathon's live backend, for a person to watch.

`run --serve-api` and `--marathon-serve-api` start them while the run is recorded, read-only:
every write is refused (403 "read-only while a marathon is recorded"), because a change made
behind the agent's back would be scored as the agent's world. They share the tool session's
turn lock, which every tool call already holds and which the runner holds while it steps the
twin, so a read never sees half a tick nor races an agent's action.

The addresses and the kubeconfig go to the run's output and to a private folder (mode 0700)
that the agent's sandbox hides; nothing is put on the agent's context or environment, so a
sandboxed agent, whose network namespace has only the loopback endpoints relayed for it
(isolation/relay.py), cannot reach them.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_marathon.apiserver.kubeconfig import write_kubeconfig

if TYPE_CHECKING:
    from pytest_marathon.apiserver.pair import ServedApis

READ_ONLY = "read-only while a marathon is recorded"


@dataclass(frozen=True)
class ServeApi:
    """Asked for by `--serve-api`: ports (0: any free one) and where to print the addresses."""

    announce: Callable[[str], None] = print
    kube_port: int = 0
    prometheus_port: int = 0


@dataclass
class LiveApis:
    served: ServedApis
    kubeconfig: Path

    @property
    def folder(self) -> Path:
        return self.kubeconfig.parent

    def lines(self) -> list[str]:
        return [f"Kubernetes API: {self.served.kube.url}  (read-only while the marathon is recorded)",
                f"Prometheus API: {self.served.prometheus.url}",
                f"Jaeger API:     {self.served.jaeger.url}  (query API v3)",
                f"kubeconfig:     {self.kubeconfig}  (kubectl --kubeconfig {self.kubeconfig} get pods)"]

    def close(self) -> None:
        self.served.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def start_live_apis(backend: Any, app: str, lock: threading.RLock, alerts: Any, ask: ServeApi) -> LiveApis:
    """Serve the APIs read-only over `backend` under `lock`, write the kubeconfig, announce."""
    from pytest_marathon.apiserver.pair import serve_apis

    served = serve_apis(backend, app, lock=lock, kube_port=ask.kube_port, prometheus_port=ask.prometheus_port,
                        alerts=alerts)
    served.kube.api.read_only = READ_ONLY
    folder = Path(tempfile.mkdtemp(prefix="marathon-api-"))
    apis = LiveApis(served, write_kubeconfig(folder / "kubeconfig.yaml", served.kube.url, backend.namespace))
    for line in apis.lines():
        ask.announce(line)
    return apis
