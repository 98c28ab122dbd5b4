"""Direct faults on a Kubernetes backend as chaostoolkit-kubernetes actions (Chaos Mesh objects).

Each chaos kind Chaos Mesh carries goes through the Chaos Toolkit action that creates its
object: `chaosk8s.chaosmesh.network.actions.add_latency` / `set_loss` for delay and loss,
`chaosk8s.chaosmesh.stress.actions.stress_cpu` / `stress_memory` for CPU and memory stress, and
`chaosk8s.crd.actions.create_custom_object` for what chaosk8s has no action of its own for (a
partition NetworkChaos with its target, a PodChaos, or a Schedule of PodChaos that kills again
every interval). Stopping deletes the object (`delete_network_fault`, `delete_stressor`,
`delete_custom_object`). The twin's API server carries out what the object says
(apiserver/chaos_mesh.py), so CI runs these same calls.

chaosk8s builds its Kubernetes client from the process's kubeconfig (`create_k8s_api_client`:
`$KUBECONFIG`, else `~/.kube/config`, and the `KUBERNETES_CONTEXT` secret), and the kubernetes
client reads that location once, at import. So for the duration of a call, under a lock, both
point at the run's kubeconfig: the run's cluster gets the experiment, never the user's current
one. chaosk8s always sets a `duration`; a fault lasts until it is stopped, so the backend asks
for one longer than any run.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from urllib3.exceptions import HTTPError

from pytest_marathon.backends.base import BackendError

GROUP, VERSION = "chaos-mesh.org", "v1alpha1"
HOLD = "8760h"  # a year: until the fault is stopped
_LOCK = threading.Lock()


class ChaosToolkitChaos:
    """Starts and stops Chaos Mesh faults through chaosk8s against one kubeconfig's cluster."""

    def __init__(self, namespace: str, *, kubeconfig: Path | None, context: str | None) -> None:
        self.namespace = namespace
        self.kubeconfig = kubeconfig
        self.context = context

    @contextlib.contextmanager
    def _cluster(self) -> Iterator[dict[str, str]]:
        from kubernetes.config import kube_config

        with _LOCK:
            saved_env = os.environ.get("KUBECONFIG")
            saved_default = kube_config.KUBE_CONFIG_DEFAULT_LOCATION
            if self.kubeconfig is not None:
                os.environ["KUBECONFIG"] = str(self.kubeconfig)
                kube_config.KUBE_CONFIG_DEFAULT_LOCATION = str(self.kubeconfig)
            try:
                yield {"KUBERNETES_CONTEXT": self.context} if self.context else {}
            finally:
                kube_config.KUBE_CONFIG_DEFAULT_LOCATION = saved_default
                if saved_env is None:
                    os.environ.pop("KUBECONFIG", None)
                else:
                    os.environ["KUBECONFIG"] = saved_env

    def start(self, kind: str, target: str, params: Mapping[str, Any], name: str) -> str:
        """Create the fault's object; the handle is `<plural>/<name>`."""
        from chaosk8s.chaosmesh.network import actions as network
        from chaosk8s.chaosmesh.stress import actions as stress
        from chaosk8s.crd import actions as crd
        from chaoslib.exceptions import ActivityFailed

        ns, pods = self.namespace, {"app": target}
        try:
            with self._cluster() as secrets:
                if kind == "network_delay":
                    network.add_latency(name, ns=ns, label_selectors=pods, mode="all", direction="to",
                                        latency=f"{float(params.get('delay_ms', 500.0)):g}ms", target_mode=None,
                                        secrets=secrets)
                    return f"networkchaos/{name}"
                if kind == "network_loss":
                    network.set_loss(name, ns=ns, label_selectors=pods, mode="all", direction="to",
                                     loss=f"{100 * float(params.get('loss', 0.5)):g}", target_mode=None,
                                     secrets=secrets)
                    return f"networkchaos/{name}"
                if kind == "cpu_hog":
                    stress.stress_cpu(name, workers=max(1, round(float(params.get("cores", 1.0)))), load=100,
                                      ns=ns, label_selectors=pods, mode="all", duration=HOLD, secrets=secrets)
                    return f"stresschaos/{name}"
                if kind == "memory_hog":
                    size = str(params.get("size") or f"{params.get('mb', 256)}Mi")
                    stress.stress_memory(name, workers=1, size=size + "B" if size.endswith("i") else size,
                                         ns=ns, label_selectors=pods, mode="all", duration=HOLD,
                                         secrets=secrets)
                    return f"stresschaos/{name}"
                plural, doc = _object(kind, target, params, ns, name)
                crd.create_custom_object(GROUP, VERSION, plural, ns, resource=doc, secrets=secrets)
                return f"{plural}/{name}"
        except (ActivityFailed, HTTPError, OSError) as exc:  # refused, or the cluster unreachable
            raise BackendError(f"chaostoolkit-kubernetes: {exc}") from None

    def stop(self, handle: str) -> None:
        from chaosk8s.chaosmesh.network import actions as network
        from chaosk8s.chaosmesh.stress import actions as stress
        from chaosk8s.crd import actions as crd
        from chaoslib.exceptions import ActivityFailed

        plural, _, name = handle.partition("/")
        try:
            with self._cluster() as secrets:
                if plural == "networkchaos":
                    network.delete_network_fault(name, ns=self.namespace, secrets=secrets)
                elif plural == "stresschaos":
                    stress.delete_stressor(name, ns=self.namespace, secrets=secrets)
                else:
                    crd.delete_custom_object(GROUP, VERSION, plural, name, self.namespace, secrets=secrets)
        except (ActivityFailed, HTTPError, OSError) as exc:  # refused, or the cluster unreachable
            raise BackendError(f"chaostoolkit-kubernetes: {exc}") from None


def _object(kind: str, target: str, params: Mapping[str, Any], namespace: str,
            name: str) -> tuple[str, dict[str, Any]]:
    """The object of a kind chaosk8s has no action for (chaos-mesh api/v1alpha1)."""
    def selector(app: str) -> dict[str, Any]:
        return {"namespaces": [namespace], "labelSelectors": {"app": app}}

    meta = {"name": name, "namespace": namespace}
    if kind == "partition":
        spec = {"action": "partition", "mode": "all", "direction": "both", "selector": selector(target),
                "target": {"mode": "all", "selector": selector(str(params.get("peer", "")))}}
        return "networkchaos", {"apiVersion": f"{GROUP}/{VERSION}", "kind": "NetworkChaos",
                                "metadata": meta, "spec": spec}
    if kind == "pod_kill":
        kill = {"action": "pod-kill", "mode": "one", "selector": selector(target)}
        if "interval" not in params:
            return "podchaos", {"apiVersion": f"{GROUP}/{VERSION}", "kind": "PodChaos", "metadata": meta,
                                "spec": kill}
        every = f"@every {float(params['interval']):g}s"
        spec = {"schedule": every, "type": "PodChaos", "historyLimit": 1, "concurrencyPolicy": "Forbid",
                "podChaos": kill}
        return "schedules", {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Schedule", "metadata": meta,
                             "spec": spec}
    raise BackendError(f"Chaos Mesh has no object for a {kind} fault")
