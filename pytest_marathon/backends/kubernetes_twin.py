"""`--marathon-backend=kubernetes` without a kubeconfig: a twin of the run's seed behind its own
Kubernetes and Prometheus APIs, in this process, driven over HTTP by a `KubernetesBackend`.

This is the mode CI runs: the Kubernetes backend's code path end to end (the `kubernetes` client,
`prometheus-api-client`, patches, Chaos Mesh objects) with the clock stepped through
`/marathon/v1/clock`, so a whole marathon takes seconds. The servers share one lock (the twin is
not thread-safe); the clock and the operator's requests need bearer tokens drawn here, so a
kubeconfig handed to an agent can neither move time nor send the operator's changes.
"""

from __future__ import annotations

import secrets
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pytest_marathon.apiserver.identity import OPERATOR
from pytest_marathon.apiserver.kubeconfig import write_kubeconfig
from pytest_marathon.backends.kubernetes import KubernetesBackend


@dataclass
class PrivateFolder:
    """A folder removed when the backend closes (it holds the operator's credential)."""

    path: Path

    def close(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def twin_behind_apis(app: str, seed: int, users: int | None = None) -> KubernetesBackend:
    from kubernetes import client

    from pytest_marathon.apiserver.pair import serve_apis
    from pytest_marathon.apiserver.prom_format import TWIN_EPOCH_UNIX
    from pytest_marathon.twin.engine import Twin
    from pytest_marathon.twin.objects import EPOCH

    twin = Twin(app=app, seed=seed, users=users)
    token = secrets.token_urlsafe(24)
    apis = serve_apis(twin, app, clock_token=token, operator_token=token)
    kube, prometheus = apis.kube, apis.prometheus
    # chaostoolkit-kubernetes reads a kubeconfig: the operator's, in a private folder
    folder = PrivateFolder(Path(tempfile.mkdtemp(prefix="marathon-operator-")))
    kubeconfig = write_kubeconfig(folder.path / "kubeconfig.yaml", kube.url, twin.namespace, token=token,
                                  user=OPERATOR)
    configuration = client.Configuration(host=kube.url, api_key={"BearerToken": token},
                                         api_key_prefix={"BearerToken": "Bearer"})
    return KubernetesBackend(
        app, api_client=client.ApiClient(configuration), namespace=twin.namespace,
        prometheus_url=prometheus.url, operator_url=kube.url, operator_token=token, epoch=EPOCH,
        prometheus_time_base=float(TWIN_EPOCH_UNIX), tick_seconds=float(twin.tick_seconds),
        jaeger_url=apis.jaeger.url, kubeconfig=kubeconfig, closers=(apis, folder),
    )


def from_kubeconfig(app: str, *, kubeconfig: str | None, context: str | None, prometheus_url: str | None,
                    namespace: str | None = None, registry: str | None = None,
                    jaeger_url: str | None = None) -> KubernetesBackend:
    """A real cluster (or any API server) named by a kubeconfig; PromQL at `prometheus_url`,
    traces from the Jaeger query service at `jaeger_url`."""
    from kubernetes import config

    from pytest_marathon.backends.base import BackendError
    from pytest_marathon.twin.appspec import load_app

    if not prometheus_url:
        raise BackendError("the kubernetes backend needs --marathon-prometheus-url with --marathon-kubeconfig")
    try:
        api_client = config.new_client_from_config(config_file=kubeconfig, context=context)
    except (config.ConfigException, OSError) as exc:
        where = kubeconfig or "the default kubeconfig ($KUBECONFIG or ~/.kube/config)"
        raise BackendError(f"cannot use {where}{f' context {context!r}' if context else ''}: {exc}") from None
    return KubernetesBackend(app, api_client=api_client, namespace=namespace or load_app(app).namespace,
                             prometheus_url=prometheus_url, registry=registry, jaeger_url=jaeger_url,
                             kubeconfig=Path(kubeconfig) if kubeconfig else None, context=context)
