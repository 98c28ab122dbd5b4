"""What a Chaos Mesh object asks for, as the twin's chaos kinds: the twin does what Chaos Mesh
would do with the object it is given, whoever wrote it (chaostoolkit-kubernetes, kubectl, us).

Fields as chaos-mesh `api/v1alpha1` defines them (podchaos_types.go, networkchaos_types.go,
stresschaos_types.go, schedule_types.go):

    PodChaos      action pod-kill                        -> pod_kill
                  action pod-failure, duration "<d>"     -> pod_failure (duration s; none: until deleted)
                  action container-kill, containerNames  -> container_kill (container: the one name)
    Schedule      type PodChaos, schedule "@every <d>"   -> pod_kill, again every <d>
    NetworkChaos  action delay, delay.latency "<n>ms"    -> network_delay (delay_ms)
                  action loss, loss.loss "<percent>"     -> network_loss (loss, a fraction)
                  action partition, target.selector      -> partition (peer: the target's app)
    StressChaos   stressors.cpu.workers                  -> cpu_hog (cores)
                  stressors.memory.size "<n>MiB"         -> memory_hog (size "<n>Mi")

The pods are the deployment whose `app` label `selector.labelSelectors` names (the twin's pods
carry it, as the manifests render them). What the twin does not model is refused with the field
that asks for it: selectors by anything but `app`, a `mode` other than `all` or `one`. A
`duration` is kept by pod-failure alone (its pods get their image back when it runs out, as
Chaos Mesh recovers them); the other kinds last until the object is deleted, and the backend asks
for a duration longer than any run (docs/fidelity.md). pod-kill and container-kill are one-shot
(`+chaos-mesh:oneshot` in podchaos_types.go): their duration changes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

KINDS = {"podchaos": "PodChaos", "networkchaos": "NetworkChaos", "stresschaos": "StressChaos",
         "schedules": "Schedule"}
_EVERY = re.compile(r"^@every\s+(\d+(?:\.\d+)?)(ms|s|m|h)$")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_LATENCY = re.compile(r"^(\d+(?:\.\d+)?)(us|ms|s)$")
_LATENCY_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0}
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_GO_UNIT = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
# chaos-mesh's memStress parses sizes with go-humanize (`256MB`, `256MiB`); the twin takes
# Kubernetes quantities, and MiB is Mi
_SIZE = re.compile(r"^(\d+)(Ki|Mi|Gi)B$")


class ChaosSpecError(ValueError):
    """A field of the object the twin cannot carry out; `field` is its path."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def _app(spec: Mapping[str, Any], where: str) -> str:
    selector = spec.get("selector") or {}
    labels = selector.get("labelSelectors") or {}
    if set(selector) - {"namespaces", "labelSelectors"} or set(labels) != {"app"}:
        raise ChaosSpecError(f"{where}.selector", "the twin selects a deployment's pods by the app label "
                             "alone: labelSelectors {app: <deployment>}")
    mode = spec.get("mode", "one")
    if mode not in ("all", "one"):
        raise ChaosSpecError(f"{where}.mode", f"mode {mode!r} is not modelled (all, one)")
    return str(labels["app"])


def _duration(text: Any) -> float:
    """A Go duration of one or more `<n><unit>` parts (`100s`, `1m30s`), in seconds."""
    parts = _DURATION_PART.findall(str(text).strip())
    if not parts or "".join(n + u for n, u in parts) != str(text).strip():
        raise ChaosSpecError("spec.duration", f"a duration such as 100s is required, got {text!r}")
    return sum(float(n) * _GO_UNIT[u] for n, u in parts)


def fault_of(kind: str, spec: Mapping[str, Any]) -> tuple[str, str, dict[str, Any]]:
    """(twin chaos kind, target deployment, params) for a Chaos Mesh object's spec."""
    if kind == "Schedule":
        if spec.get("type") != "PodChaos":
            raise ChaosSpecError("spec.type", "the twin schedules PodChaos only")
        every = _EVERY.match(str(spec.get("schedule", "")).strip())
        if not every:
            raise ChaosSpecError("spec.schedule", 'the twin takes "@every <n>(ms|s|m|h)"')
        kill, target, params = fault_of("PodChaos", spec.get("podChaos") or {})
        return kill, target, {**params, "interval": float(every.group(1)) * _UNIT[every.group(2)]}
    if kind == "PodChaos":
        action = spec.get("action", "pod-kill")  # podchaos_types.go: "Default action: pod-kill"
        if action not in ("pod-kill", "pod-failure", "container-kill"):
            raise ChaosSpecError("spec.action", f"PodChaos action {action!r} is not one of pod-kill, pod-failure, "
                                 "container-kill")
        if spec.get("mode", "one") != "one":
            raise ChaosSpecError("spec.mode", f"the twin carries {action} on one pod (mode one)")
        target = _app(spec, "spec")
        if action == "pod-failure":
            if spec.get("duration") is None:
                return "pod_failure", target, {"count": 1}
            return "pod_failure", target, {"count": 1, "duration": _duration(spec["duration"])}
        if action == "container-kill":
            names = spec.get("containerNames") or []
            if not isinstance(names, list) or len(names) != 1:
                raise ChaosSpecError("spec.containerNames", "the twin's pods have one container: name it")
            return "container_kill", target, {"count": 1, "container": str(names[0])}
        return "pod_kill", target, {"count": 1}
    if kind == "NetworkChaos":
        action = spec.get("action")
        target = _app(spec, "spec")
        if action == "delay":
            latency = _LATENCY.match(str((spec.get("delay") or {}).get("latency", "")))
            if not latency:
                raise ChaosSpecError("spec.delay.latency", "a latency such as 200ms is required")
            return "network_delay", target, {"delay_ms": float(latency.group(1)) * _LATENCY_MS[latency.group(2)]}
        if action == "loss":
            try:
                percent = float((spec.get("loss") or {}).get("loss", ""))
            except ValueError:
                raise ChaosSpecError("spec.loss.loss", "a loss percentage is required") from None
            return "network_loss", target, {"loss": percent / 100.0}
        if action == "partition":
            peer = _app(spec.get("target") or {}, "spec.target")
            return "partition", target, {"peer": peer}
        raise ChaosSpecError("spec.action", f"NetworkChaos action {action!r} is not modelled (delay, loss, partition)")
    if kind == "StressChaos":
        stressors = spec.get("stressors") or {}
        target = _app(spec, "spec")
        if "cpu" in stressors and "memory" not in stressors:
            return "cpu_hog", target, {"cores": int(stressors["cpu"].get("workers") or 1)}
        if "memory" in stressors and "cpu" not in stressors:
            size = _SIZE.match(str(stressors["memory"].get("size") or ""))
            if not size:
                raise ChaosSpecError("spec.stressors.memory.size", "a size such as 256MiB is required")
            return "memory_hog", target, {"size": f"{size.group(1)}{size.group(2)}"}
        raise ChaosSpecError("spec.stressors", "one stressor, cpu or memory")
    raise ChaosSpecError("kind", f"{kind} is not a Chaos Mesh kind the twin carries")
