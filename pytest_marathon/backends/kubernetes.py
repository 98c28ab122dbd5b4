"""`KubernetesBackend`: the `Backend` protocol over a Kubernetes API server and a Prometheus.

Reads go through the `kubernetes` client (deployments, pods, ReplicaSets for rollout history,
events, `pods/log`) and PromQL through `prometheus-api-client` (`RemotePromQL`; `store` is None).
Agent actions are the requests kubectl sends: `rollout restart` patches the template annotation
`kubectl.kubernetes.io/restartedAt` (kubectl pkg/polymorphichelpers/objectrestarter.go), `scale`
writes the scale subresource, `rollout undo` patches the template of the earlier ReplicaSet back
(pkg/polymorphichelpers/rollback.go), `set env` / `set image` are strategic-merge patches with the
`kubernetes.io/change-cause` annotation. The orchestrator's releases are patches too; direct
faults are Chaos Mesh objects created by chaostoolkit-kubernetes actions (`kubernetes_chaos`).

Traces come from Jaeger's query API v3 (`kubernetes_traces`), which a cluster's Jaeger and the
twin's API server both serve. On a cluster the SLI comes from the entry service's span metrics
(`kubernetes_sli`); the twin's API server answers it, as what a cluster answers from other
systems (the image registry's sources and builds, the catalog's synthetic-request probes), under
`/marathon/v1/` for the operator's bearer token; on a real cluster without them such calls raise
`BackendError` naming the missing system (docs/kubernetes-backend.md). The clock is the twin's
`/marathon/v1/clock` when the server has one, the wall clock otherwise.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pytest_marathon.backends import fault_images, kubernetes_artifacts, kubernetes_probes
from pytest_marathon.backends.base import (
    ActionResult,
    BackendError,
    BuildResult,
    EnvValue,
    SliSample,
    resource_kind,
)
from pytest_marathon.backends.kubernetes_chaos import ChaosToolkitChaos
from pytest_marathon.backends.kubernetes_promql import RemotePromQL
from pytest_marathon.backends.kubernetes_shapes import (
    CHANGE_CAUSE,
    RESTARTED_AT,
    REVISION,
    container_patch,
    log_lines,
    virtual_time,
)
from pytest_marathon.backends.kubernetes_sli import PromQLSli
from pytest_marathon.backends.kubernetes_traces import JaegerTraces
from pytest_marathon.faults.backend_support import (
    CHAOS_MESH,
    CHAOS_MESH_KINDS,
    EVERYTHING,
    REGISTRY,
)
from pytest_marathon.twin.appspec import load_app

RESULT_ANNOTATION = "marathon.pytest.dev/result"


class KubernetesBackend:
    """One application's namespace on a Kubernetes API server (see the module docstring)."""

    def __init__(self, app: str, *, api_client: Any, namespace: str, prometheus_url: str,
                 operator_url: str | None = None, operator_token: str | None = None,
                 epoch: datetime | None = None, prometheus_time_base: float | None = None,
                 tick_seconds: float = 5.0, registry: str | None = None, jaeger_url: str | None = None,
                 kubeconfig: Path | None = None, context: str | None = None,
                 closers: tuple[Any, ...] = ()) -> None:
        """`epoch`: the wall time of the backend's t = 0 in the API's timestamps (default: now,
        for a real cluster); `prometheus_time_base`: the unix time of t = 0 in PromQL requests
        (default: the epoch's)."""
        from kubernetes import client

        self.app = app
        self.namespace = namespace
        self.tick_seconds = tick_seconds
        self.registry = registry
        self.api_client = api_client
        self.core = client.CoreV1Api(api_client)
        self.apps = client.AppsV1Api(api_client)
        self.epoch = epoch or datetime.now(UTC)
        base = self.epoch.timestamp() if prometheus_time_base is None else prometheus_time_base
        self.promql = RemotePromQL(prometheus_url, time_base=base)
        spec = load_app(app)  # the entry point's OTel service name is its deployment's
        self.jaeger = JaegerTraces(jaeger_url, time_base=base, now=lambda: self.now,
                                   entry_service=spec.entry_deployment) if jaeger_url else None
        self.sli = PromQLSli(self.promql, service=spec.entry_deployment, slow_seconds=spec.slow_seconds,
                             tick=tick_seconds)
        self._operator_url = operator_url
        self._token = operator_token
        self._closers = closers
        # what this cluster can deliver beyond plain patches (faults/backend_support.py): the
        # twin's API server has a registry and all chaos kinds; a cluster only what it is given
        self.offers = EVERYTHING if operator_url else frozenset(
            ({REGISTRY} if registry else set()) | ({CHAOS_MESH} if self._serves_group("chaos-mesh.org") else set()))
        self._chaos_seq = 0
        # chaostoolkit-kubernetes builds its own client from a kubeconfig: the run's
        self.chaos = ChaosToolkitChaos(namespace, kubeconfig=kubeconfig, context=context)

    # --- plumbing --------------------------------------------------------------------------------
    def _serves_group(self, group: str) -> bool:
        """Whether the API server serves an API group (discovery, `GET /apis`): Chaos Mesh's
        custom resources exist only where Chaos Mesh is installed."""
        from kubernetes import client

        try:
            groups = client.ApisApi(self.api_client).get_api_versions().groups or []
        except Exception:  # noqa: BLE001 - discovery unreachable: the group is not known to be served
            return False
        return any(g.name == group for g in groups)

    def close(self) -> None:
        for closer in self._closers:
            closer.close()

    def _operator(self, call: str, **args: Any) -> Any:
        if self._operator_url is None:
            raise BackendError(f"{call} needs the twin's operator endpoints; this cluster has no "
                               "system that answers it (docs/kubernetes-backend.md)")
        doc = self._post(f"{self._operator_url}/marathon/v1/{call}", args)
        if "error" in doc:
            raise BackendError(doc["error"])
        return doc["result"]

    def _post(self, url: str, doc: Any) -> Any:
        request = urllib.request.Request(url, data=json.dumps(doc).encode(), method="POST",
                                         headers={"Content-Type": "application/json",
                                                  "Authorization": f"Bearer {self._token}"})
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            try:
                doc = json.loads(exc.read())
            except ValueError:
                doc = None
            if exc.code == 409 and isinstance(doc, dict) and "error" in doc:
                return doc  # the backend refused the call: its words, as a BackendError above
            message = doc.get("message") if isinstance(doc, dict) else None
            raise BackendError(message or f"{url}: HTTP {exc.code}") from None

    def _raw(self, method: Any, *args: Any, **kwargs: Any) -> Any:
        """A client call's JSON as the server sent it (the objects' full documents)."""
        from kubernetes.client.rest import ApiException

        try:
            response = method(*args, _preload_content=False, **kwargs)
        except ApiException as exc:
            raise _backend_error(exc) from None
        data = response.data
        return json.loads(data) if data else None

    # --- clock -------------------------------------------------------------------------------------
    @property
    def now(self) -> float:
        if self._operator_url is None:
            return round(time.time() - self.epoch.timestamp(), 3)
        return self._get_clock()

    def _get_clock(self) -> float:
        with urllib.request.urlopen(f"{self._operator_url}/marathon/v1/clock", timeout=60) as response:
            return float(json.loads(response.read())["now"])

    def _clock(self, doc: Any) -> Any:
        assert self._operator_url is not None
        return self._post(f"{self._operator_url}/marathon/v1/clock", doc)

    def advance_to(self, t: float) -> None:
        if self._operator_url is None:
            delay = t - self.now
            if delay > 0:
                time.sleep(delay)
            return
        self._clock({"advance_to": t})

    # --- reads ---------------------------------------------------------------------------------------
    @property
    def store(self) -> None:
        return None

    def workloads(self) -> list[str]:
        items = self._raw(self.apps.list_namespaced_deployment, self.namespace)["items"]
        hidden = set(self.infrastructure())
        return sorted(d["metadata"]["name"] for d in items if d["metadata"]["name"] not in hidden)

    def infrastructure(self) -> list[str]:
        if self._operator_url is None:
            return []
        return list(self._operator("infrastructure"))

    def resources(self, kind: str, name: str | None = None) -> list[dict[str, Any]]:
        kind = resource_kind(kind)
        lister = {
            "deployments": lambda: self._raw(self.apps.list_namespaced_deployment, self.namespace),
            "replicasets": lambda: self._raw(self.apps.list_namespaced_replica_set, self.namespace),
            "pods": lambda: self._raw(self.core.list_namespaced_pod, self.namespace),
            "services": lambda: self._raw(self.core.list_namespaced_service, self.namespace),
            "configmaps": lambda: self._raw(self.core.list_namespaced_config_map, self.namespace),
            "nodes": lambda: self._raw(self.core.list_node),
        }[kind]
        out = list(lister()["items"])
        if name is not None:
            out = [o for o in out if o["metadata"]["name"] == name
                   or kind == "pods" and o["metadata"].get("labels", {}).get("app") == name]
            if not out:
                raise BackendError(f"{kind[:-1]} {name!r} not found in namespace {self.namespace}")
        return out

    def logs(self, *, service: str | None = None, since: float | None = None, until: float | None = None,
             level: str | None = None, contains: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        """Lines from `pods/log` (what the API carries: time and message; a line's level and trace id
        are not in it, so `level` matches the message's text)."""
        selector = f"app={service}" if service else None
        pods = self._raw(self.core.list_namespaced_pod, self.namespace, label_selector=selector)["items"]
        lines: list[dict[str, Any]] = []
        for pod in pods:
            meta = pod["metadata"]
            kwargs: dict[str, Any] = {"timestamps": True}
            if since is not None:
                kwargs["since_seconds"] = max(1, int(self.now - since) + 1)
            response = self.core.read_namespaced_pod_log(meta["name"], self.namespace, _preload_content=False,
                                                         **kwargs)
            for t, message in log_lines(response.data.decode(), self.epoch):
                lines.append({"t": t, "service": meta.get("labels", {}).get("app"), "pod": meta["name"],
                              "message": message, "container": pod["spec"]["containers"][0]["name"]})
        lines = [line for line in lines if (since is None or line["t"] >= since)
                 and (until is None or line["t"] <= until)
                 and (level is None or level.lower() in line["message"].lower())
                 and (contains is None or contains in line["message"])]
        lines.sort(key=lambda line: line["t"])
        return lines[-limit:] if limit > 0 else []

    def traces(self, *, service: str | None = None, since: float | None = None, until: float | None = None,
               errors_only: bool = False, min_duration_ms: float | None = None, limit: int = 20) -> list[dict[str, Any]]:
        if self.jaeger is None:
            raise BackendError("no Jaeger to read traces from (--jaeger-url)")
        return self.jaeger.traces(service=service, since=since, until=until, errors_only=errors_only,
                                  min_duration_ms=min_duration_ms, limit=limit)

    def trace(self, trace_id: str) -> dict[str, Any] | None:
        if self.jaeger is None:
            raise BackendError("no Jaeger to read traces from (--jaeger-url)")
        return self.jaeger.trace(trace_id)

    def topology(self) -> dict[str, Any]:
        if self._operator_url is None:
            return kubernetes_artifacts.topology(self)
        return dict(self._operator("topology"))

    def events(self, *, since: float | None = None, object_name: str | None = None,
               limit: int = 100) -> list[dict[str, Any]]:
        items = self._raw(self.core.list_namespaced_event, self.namespace)["items"]
        found = []
        for event in items:
            t = virtual_time(event.get("lastTimestamp") or event.get("eventTime"), self.epoch)
            name = event["involvedObject"]["name"]
            if since is not None and (t is None or t < since):
                continue
            if object_name is not None and not (name == object_name or name.startswith(object_name + "-")):
                continue
            found.append({**event, "t": t})
        found.sort(key=lambda e: (e["t"] or 0.0, virtual_time(e.get("firstTimestamp"), self.epoch) or 0.0))
        return found[-limit:] if limit > 0 else []

    def _replica_sets(self, deployment: str) -> list[dict[str, Any]]:
        items = self._raw(self.apps.list_namespaced_replica_set, self.namespace,
                          label_selector=f"app={deployment}")["items"]
        return [rs for rs in items if any(ref.get("kind") == "Deployment" and ref.get("name") == deployment
                                          for ref in rs["metadata"].get("ownerReferences", []))]

    def _deployment(self, name: str) -> dict[str, Any]:
        return self._raw(self.apps.read_namespaced_deployment, name, self.namespace)

    def rollout_history(self, deployment: str) -> list[dict[str, Any]]:
        """`kubectl rollout history`'s rows from the ReplicaSets the deployment owns; `created_at`
        is the ReplicaSet's creationTimestamp on the backend's clock."""
        current = self._deployment(deployment)["metadata"].get("annotations", {}).get(REVISION)
        rows = []
        for rs in self._replica_sets(deployment):
            meta = rs["metadata"]
            revision = meta.get("annotations", {}).get(REVISION)
            if revision is None:
                continue
            rows.append({"revision": int(revision), "change_cause": meta.get("annotations", {}).get(CHANGE_CAUSE, ""),
                         "image": rs["spec"]["template"]["spec"]["containers"][0]["image"],
                         "replica_set": meta["name"], "created_at": virtual_time(meta.get("creationTimestamp"), self.epoch),
                         "current": revision == current})
        return sorted(rows, key=lambda r: r["revision"])

    def rollout_completed_at(self, deployment: str, revision: int | None = None) -> float | None:
        if self._operator_url is not None:
            return self._operator("rollout_completed_at", deployment=deployment, revision=revision)
        dep = self._deployment(deployment)
        now_rev = dep["metadata"].get("annotations", {}).get(REVISION)
        if revision is not None and str(revision) != now_rev:
            return None
        for condition in dep.get("status", {}).get("conditions", []):
            if condition.get("type") == "Progressing" and condition.get("reason") == "NewReplicaSetAvailable":
                return virtual_time(condition.get("lastUpdateTime"), self.epoch)
        return None

    def source(self, service: str, *, revision: int | None = None, path: str | None = None) -> dict[str, str]:
        return dict(self._operator("source", service=service, revision=revision, path=path))

    def source_diff(self, service: str, from_revision: int, to_revision: int) -> str:
        return str(self._operator("source_diff", service=service, from_revision=from_revision,
                                  to_revision=to_revision))

    def sli_samples(self, since: float | None = None) -> list[SliSample]:
        if self._operator_url is None:  # a cluster: from the entry service's span metrics
            return self.sli.samples(since, self.now)
        return [SliSample(**s) for s in self._operator("sli_samples", since=since)]

    def exec(self, pod: str, command: list[str], container: str = "") -> dict[str, Any]:
        """Through the API server's pods/exec WebSocket, as kubectl does (client's `stream`)."""
        from kubernetes.client.rest import ApiException
        from kubernetes.stream import stream
        from kubernetes.stream.ws_client import ERROR_CHANNEL

        kwargs: dict[str, Any] = {"command": list(command), "stdout": True, "stderr": True, "stdin": False,
                                  "tty": False, "_preload_content": False}
        if container:
            kwargs["container"] = container
        try:
            client = stream(self.core.connect_get_namespaced_pod_exec, pod, self.namespace, **kwargs)
        except ApiException as exc:
            raise _backend_error(exc) from None
        client.run_forever(timeout=60)
        stdout, stderr = client.read_stdout(), client.read_stderr()
        status = json.loads(client.read_channel(ERROR_CHANNEL) or "{}")
        client.close()
        if status.get("status") == "Success":
            return {"code": 0, "stdout": stdout, "stderr": stderr}
        if status.get("reason") == "NonZeroExitCode":
            code = int(status["details"]["causes"][0]["message"])
            return {"code": code, "stdout": stdout, "stderr": stderr}
        raise BackendError(str(status.get("message", status)))

    def flag_readers(self, name: str) -> list[str]:
        return list(self._operator("flag_readers", name=name))

    # --- agent actions ---------------------------------------------------------------------------------
    def _patch(self, name: str, body: Any, *, content_type: str = "application/strategic-merge-patch+json",
               scale: bool = False) -> dict[str, Any]:
        """A PATCH as kubectl sends it, with the operator's token when the backend holds one."""
        method = self.apps.patch_namespaced_deployment_scale if scale else self.apps.patch_namespaced_deployment
        return self._raw(method, name, self.namespace, body, _content_type=content_type)

    def _result(self, name: str, doc: dict[str, Any], verb: str) -> ActionResult:
        annotations = doc.get("metadata", {}).get("annotations", {})
        if RESULT_ANNOTATION in annotations:
            r = json.loads(annotations[RESULT_ANNOTATION])
            return ActionResult(bool(r["ok"]), r["message"], r["revision"], r["completes_at"])
        revision = annotations.get(REVISION)
        return ActionResult(True, f"deployment.apps/{name} {verb}", int(revision) if revision else None,
                            self.rollout_completed_at(name))

    def restart(self, deployment: str) -> ActionResult:
        # kubectl writes time.Now() in RFC 3339; microseconds keep two restarts in one second apart
        stamp = datetime.now(UTC).isoformat(timespec="microseconds")
        body = {"spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: stamp}}}}}
        return self._result(deployment, self._patch(deployment, body), "restarted")

    def scale(self, deployment: str, replicas: int) -> ActionResult:
        if not isinstance(replicas, int) or isinstance(replicas, bool):
            raise BackendError(f"replicas must be an integer, got {replicas!r}")
        doc = self._patch(deployment, {"spec": {"replicas": replicas}}, content_type="application/merge-patch+json",
                          scale=True)
        if RESULT_ANNOTATION not in doc.get("metadata", {}).get("annotations", {}):
            doc = self._deployment(deployment)
        return self._result(deployment, doc, "scaled")

    def rollback(self, deployment: str, to_revision: int | None = None) -> ActionResult:
        """kubectl's client-side undo: the earlier ReplicaSet's template, hash label dropped, as a
        JSON patch of /spec/template with the ReplicaSet's annotations."""
        dep = self._deployment(deployment)
        current = int(dep["metadata"].get("annotations", {}).get(REVISION, "0"))
        history = sorted(self._replica_sets(deployment),
                         key=lambda rs: int(rs["metadata"].get("annotations", {}).get(REVISION, "0")))
        revisions = [int(rs["metadata"].get("annotations", {}).get(REVISION, "0")) for rs in history]
        if to_revision is None:
            older = [rs for rs, rev in zip(history, revisions, strict=True) if rev < current]
            if not older:
                raise BackendError(f"no rollout history found for deployment {deployment!r} before revision {current}")
            target = older[-1]
        else:
            found = [rs for rs, rev in zip(history, revisions, strict=True) if rev == to_revision]
            if not found:
                raise BackendError(f"unable to find specified revision {to_revision} in history of {deployment}")
            if to_revision == current:
                raise BackendError(f"revision {to_revision} is already the current revision of {deployment}")
            target = found[0]
        template = json.loads(json.dumps(target["spec"]["template"]))
        template.get("metadata", {}).get("labels", {}).pop("pod-template-hash", None)
        body = [{"op": "replace", "path": "/spec/template", "value": template}]
        return self._result(deployment, self._patch(deployment, body, content_type="application/json-patch+json"),
                            "rolled back")

    def update_config(self, deployment: str, *, env: Mapping[str, str | None] | None = None,
                      resources: Mapping[str, str] | None = None, change_cause: str = "") -> ActionResult:
        if not env and not resources:
            raise BackendError("update_config needs env and/or resources")
        return self._change(deployment, env=env, resources=resources, change_cause=change_cause)

    def feature_flags(self) -> dict[str, str]:
        maps = [m for m in self.resources("configmaps") if m["metadata"]["name"] == "feature-flags"]
        return dict((maps[0].get("data") or {}) if maps else {})

    def set_feature_flag(self, name: str, value: str) -> ActionResult:
        if self._operator_url is None:  # a merge patch of the shared ConfigMap, as kubectl patch sends it
            self._raw(self.core.patch_namespaced_config_map, "feature-flags", self.namespace, {"data": {name: value}})
            return ActionResult(True, f"configmap/feature-flags patched ({name}={value})", None, self.now)
        r = self._operator("set_feature_flag", name=name, value=value)
        return ActionResult(bool(r["ok"]), r["message"], r["revision"], r["completes_at"])

    def set_container_args(self, deployment: str, args: list[str], change_cause: str = "") -> ActionResult:
        """A strategic merge patch of the first container's args (what `kubectl patch` sends)."""
        doc = self._raw(self.apps.read_namespaced_deployment, deployment, self.namespace)
        container = doc["spec"]["template"]["spec"]["containers"][0]["name"]
        body: dict[str, Any] = {"spec": {"template": {"spec": {"containers": [{"name": container,
                                                                             "args": list(args)}]}}}}
        if change_cause:
            body["metadata"] = {"annotations": {"kubernetes.io/change-cause": change_cause}}
        return self._result(deployment, self._patch(deployment, body), "patched")

    def set_container_command(self, deployment: str, command: list[str], change_cause: str = "") -> ActionResult:
        """A strategic merge patch of the first container's command (what `kubectl patch` sends)."""
        doc = self._raw(self.apps.read_namespaced_deployment, deployment, self.namespace)
        container = doc["spec"]["template"]["spec"]["containers"][0]["name"]
        body: dict[str, Any] = {"spec": {"template": {"spec": {"containers": [{"name": container,
                                                                             "command": list(command)}]}}}}
        if change_cause:
            body["metadata"] = {"annotations": {"kubernetes.io/change-cause": change_cause}}
        return self._result(deployment, self._patch(deployment, body), "patched")

    def set_node_selector(self, deployment: str, selector: Mapping[str, str] | None,
                          change_cause: str = "") -> ActionResult:
        """A JSON patch of /spec/template/spec/nodeSelector: `add` replaces the whole map (a
        merge patch would keep labels it does not name), `remove` drops it."""
        doc = self._raw(self.apps.read_namespaced_deployment, deployment, self.namespace)
        path = "/spec/template/spec/nodeSelector"
        has = "nodeSelector" in doc["spec"]["template"]["spec"]
        ops: list[dict[str, Any]] = [{"op": "add", "path": path, "value": dict(selector)}] if selector else (
            [{"op": "remove", "path": path}] if has else [])
        if change_cause:
            ops.append({"op": "add", "path": "/metadata/annotations/kubernetes.io~1change-cause", "value": change_cause})
        if not ops:
            return ActionResult(True, f"deployment.apps/{deployment} unchanged", None, self.now)
        return self._result(deployment, self._patch(deployment, ops, content_type="application/json-patch+json"),
                            "patched")

    def set_service_target_port(self, service: str, target_port: int, port_index: int = 0) -> ActionResult:
        """The JSON patch AIOpsLab's misconfig_k8s fault and its repair amount to (a replace of
        `/spec/ports/<i>/targetPort`); on the twin's API server too, which judges it."""
        op = {"op": "replace", "path": f"/spec/ports/{int(port_index)}/targetPort", "value": target_port}
        self._raw(self.core.patch_namespaced_service, service, self.namespace, [op],
                  _content_type="application/json-patch+json")
        return ActionResult(True, f"service/{service} patched (targetPort={target_port})", None, self.now)

    def missing(self, entry: Any) -> list[str]:
        """What a cluster lacks for a scheduled entry beyond `offers`: a code fault's image."""
        if self._operator_url is not None or entry.patch is None or not self.registry:
            return []
        image = fault_images.fault_image(self.registry, entry.target, entry.patch)
        return [] if fault_images.image_exists(image) else [f"its fault image {image}"]

    def build_image(self, service: str, files: Mapping[str, str]) -> BuildResult:
        if self._operator_url is None:
            raise BackendError(f"building an image of {service} needs a build pipeline that pushes to "
                               f"{self.registry or 'a registry (--marathon-registry)'}; this backend runs none")
        r = self._operator("build_image", service=service, files=dict(files))
        return BuildResult(bool(r["ok"]), r["image"], tuple(r["failures"]), r["log"])

    def deploy_image(self, deployment: str, image: str, change_cause: str = "") -> ActionResult:
        if not isinstance(image, str) or ":" not in image:
            raise BackendError(f"image must look like name:tag, got {image!r}")
        return self._change(deployment, image=image, change_cause=change_cause)

    def _change(self, deployment: str, *, change_cause: str, **fields: Any) -> ActionResult:
        dep = self._deployment(deployment)
        container = dep["spec"]["template"]["spec"]["containers"][0]
        body: dict[str, Any] = {"spec": {"template": {"spec": {"containers": [container_patch(container, **{
            k: v for k, v in fields.items() if k != "strategy"})]}}}}
        if fields.get("strategy") is not None:
            body["spec"]["strategy"] = {**{k: None for k in dep["spec"].get("strategy", {})}, **fields["strategy"]}
        if change_cause:
            body["metadata"] = {"annotations": {CHANGE_CAUSE: change_cause}}
        return self._result(deployment, self._patch(deployment, body), "configured")

    # --- fault API ---------------------------------------------------------------------------------------
    def release(self, deployment: str, *, image: str | None = None, env: Mapping[str, EnvValue] | None = None,
                resources: Mapping[str, str] | None = None, probes: Mapping[str, Any] | None = None,
                patch: str | None = None, strategy: Mapping[str, Any] | None = None,
                change_cause: str) -> ActionResult:
        """A release as a patch of the deployment. A code patch: on the twin's API server it is
        built into an image in the twin's registry first; on a cluster the release deploys the
        fault image of that patch from `--marathon-registry` (`fault_images`), if it is there."""
        if patch is not None and self._operator_url is None:  # a cluster: the fault image by name
            if not self.registry:
                raise BackendError("a code change needs a registry of fault images (--marathon-registry)")
            image = fault_images.fault_image(self.registry, deployment, patch)
            if not fault_images.image_exists(image):
                return ActionResult(False, f"no image {image} in the registry "
                                    "(pytest-marathon fault-images lists what to build)", None, None, {})
            patch = None
        if patch is not None:
            from pytest_marathon.twin.patching import PatchError, apply_patch

            try:
                files = apply_patch(self.source(deployment), patch)
            except PatchError as exc:
                raise BackendError(f"patch does not apply to {deployment}: {exc}") from None
            built = self.build_image(deployment, files)
            if not built.ok:
                revision = self._deployment(deployment)["metadata"].get("annotations", {}).get(REVISION)
                return ActionResult(False, "build failed: " + "; ".join(built.failures),
                                    int(revision) if revision else None, None, {"log": built.log})
            image = built.image
        return self._change(deployment, image=image, env=env, resources=resources, probes=probes,
                            strategy=strategy, change_cause=change_cause)

    def push_image(self, deployment: str, image: str) -> None:
        if self._operator_url is None:
            raise BackendError(f"retagging the image of {deployment} needs "
                               f"{self.registry or 'a registry (--marathon-registry)'}'s API; this backend has none")
        self._operator("push_image", deployment=deployment, image=image)

    def annotate_change_cause(self, deployment: str, change_cause: str) -> None:
        self._patch(deployment, {"metadata": {"annotations": {CHANGE_CAUSE: change_cause}}})

    def chaos_start(self, kind: str, target: str, **params: Any) -> str:
        """A Chaos Mesh object for the fault through chaostoolkit-kubernetes (the kinds Chaos
        Mesh has, `kubernetes_chaos`); the twin's own kinds (a datastore outage, a credential
        rotation, ...) through its operator endpoint."""
        self._chaos_seq += 1
        if kind not in CHAOS_MESH_KINDS:
            return "twin:" + str(self._operator("chaos_start", kind=kind, target=target, params=params))
        return self.chaos.start(kind, target, params, f"marathon-{self._chaos_seq:04d}")

    def chaos_stop(self, handle: str) -> None:
        if handle.startswith("twin:"):
            self._operator("chaos_stop", handle=handle[len("twin:"):])
            return
        self.chaos.stop(handle)

    # --- probes ------------------------------------------------------------------------------------------
    def probe(self, spec: Mapping[str, Any]) -> bool:
        if self._operator_url is None:  # a cluster: what its API answers
            return kubernetes_probes.run_probe(self, spec)
        return bool(self._operator("probe", spec=dict(spec)))

    def artifact_value(self, artifact: str) -> str | None:
        if self._operator_url is None:
            return kubernetes_artifacts.artifact_value(self, artifact)
        return self._operator("artifact_value", artifact=artifact)


def _backend_error(exc: Any) -> BackendError:
    """An API error as the backend's words: a 422's cause (`Invalid value: <reason>`), else the
    Status message."""
    try:
        status = json.loads(exc.body)
    except (TypeError, ValueError):
        return BackendError(f"HTTP {exc.status}: {exc.reason}")
    causes = status.get("details", {}).get("causes", [])
    if exc.status == 422 and causes:
        message = causes[0].get("message", "")
        return BackendError(message.removeprefix("Invalid value: "))
    return BackendError(status.get("message") or f"HTTP {exc.status}")
