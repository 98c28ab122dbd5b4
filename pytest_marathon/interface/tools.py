"""The 19 tools: names, kinds, JSON schemas and the descriptions agents learn from.

This module is the single source of what an agent is told. The MCP server lists these specs, the
in-process client lists the same specs, and the session validates every call against the same
schemas, so no transport can drift from another. Descriptions are written for a model reading a
tool catalog: they say what a tool is for, what comes back and what is refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pytest_marathon.vocabulary import CATEGORIES

ToolKind = Literal["read", "report", "act"]


INCIDENT_STATUSES: tuple[str, ...] = ("open", "mitigated", "resolved")

ARTIFACT_VOCABULARY = (
    "code:<svc>/<path> (a source file of a service), image:<svc> (the deployed image as a whole), "
    "env:<svc>/<VAR> (an environment variable), limits:<svc>/<cpu|memory> (a resource limit), "
    "replicas:<svc> (the replica count), flag:<name> (a feature flag), secret:<name> (a "
    "credential), probe:<svc>/<kind> (a liveness/readiness/startup probe), node:<name> (a node), "
    "network:<svc> (the network path to a service), pod:<svc> (the pods of a service)"
)


@dataclass(frozen=True)
class ToolSpec:
    """One tool as every transport presents it."""

    name: str
    kind: ToolKind
    description: str
    input_schema: Mapping[str, Any]

    def listing(self) -> dict[str, Any]:
        """The MCP `tools/list` entry shape (also what the in-process client returns)."""
        return {"name": self.name, "description": self.description, "inputSchema": dict(self.input_schema)}


def _obj(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = list(required)
    return schema


def _str(description: str, max_length: int = 200) -> dict[str, Any]:
    return {"type": "string", "minLength": 1, "maxLength": max_length, "description": description}


def _int(description: str, minimum: int, maximum: int, default: int | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": "integer",
        "minimum": minimum,
        "maximum": maximum,
        "description": description,
    }
    if default is not None:
        schema["default"] = default
    return schema


def _time(description: str) -> dict[str, Any]:
    return {"type": "number", "minimum": -1e9, "maximum": 1e9, "description": description}


SERVICE = _str("Workload (deployment) name of the application, e.g. `cartservice`.", 100)
INCIDENT_ID = {
    "type": "string",
    "minLength": 1,
    "maxLength": 64,
    "pattern": "^[A-Za-z0-9._:-]+$",
    "description": "An incident you reported with report_incidents; the action is filed under it.",
}
NAMESPACE = _str(
    "Kubernetes namespace; defaults to the application's. Any other namespace is forbidden.", 100
)
OFFSET = _int("Skip this many items (pagination: pass the previous answer's next_offset).", 0, 1_000_000)
SINCE = _time("Only items at or after this virtual time (seconds; t=0 is the start of the run).")
UNTIL = _time("Only items at or before this virtual time (seconds).")

_CPU = {"type": "string", "pattern": "^([0-9]{1,6}m|[0-9]{1,3}(\\.[0-9]{1,3})?)$"}
_MEMORY = {"type": "string", "pattern": "^[0-9]{1,9}(Ki|Mi|Gi|K|M|G)?$"}
# the keys Kubernetes (and the twin) take for a container's resources; bare names are the limits
RESOURCE_KEYS: dict[str, Any] = {
    "cpu": _CPU,
    "memory": _MEMORY,
    "limits.cpu": _CPU,
    "limits.memory": _MEMORY,
    "requests.cpu": _CPU,
    "requests.memory": _MEMORY,
}

_ACT_NOTE = (
    " Requires `incident_id` of an incident you reported earlier; only the application's own "
    "workloads can be targeted (never the load generator, monitoring or other namespaces); at most "
    "a fixed number of mutations per invocation."
)
_CHANGE_NOTE = (
    " The answer says `changed`: false when the call would leave the system as it is (then "
    "nothing is executed, `message` says why, and it does not count against the mutation cap); "
    "`targets` lists the workloads the change acts on."
)

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "get_alerts",
        "read",
        "List alerts from the cumulative alert history (firing and resolved), oldest first. Alerts "
        "are NOT grouped: deciding which alerts belong to one incident is your job. Filter by "
        "`state` (firing|resolved|any), `since` (fired or resolved at/after), `alertname`, and "
        "`labels` (every given label must match exactly). Paginated: `offset`, `limit`; the answer "
        "says `total` and `next_offset`. Each alert: alert_id (cite it in report_incidents), "
        "alertname, state, labels, annotations, value, fired_at, resolved_at (virtual seconds).",
        _obj(
            {
                "state": {"type": "string", "enum": ["firing", "resolved", "any"], "default": "any"},
                "since": SINCE,
                "alertname": _str("Exact alert rule name, e.g. `HighErrorRate`."),
                "labels": {
                    "type": "object",
                    "additionalProperties": {"type": "string", "maxLength": 200},
                    "maxProperties": 20,
                    "description": "Label equality matchers, e.g. {\"service\": \"cartservice\"}.",
                },
                "offset": OFFSET,
                "limit": _int("Alerts per page.", 1, 200, 50),
            }
        ),
    ),
    ToolSpec(
        "query_metrics",
        "read",
        "Run a PromQL query on the application's metrics (Prometheus names: request metrics "
        "from the OpenTelemetry Collector's span metrics, traces_span_metrics_calls_total and "
        "traces_span_metrics_duration_milliseconds_*, labelled service_name, span_name, span_kind, "
        "status_code, rpc_grpc_status_code, server_address (client spans), http_request_method and "
        "http_response_status_code (the frontend); container_cpu_*, container_memory_working_set_bytes, "
        "kube_deployment_*, kube_pod_*, kube_node_*, redis_*). Instant query at `time` (default now); a range query when `start` is given "
        "(with optional `end`, default now, and `step` seconds, default 60). At most `max_series` "
        "series and 240 points per series come back; anything cut is stated in `truncated`. "
        "Unsupported PromQL gets an error naming what is not supported.",
        _obj(
            {
                "query": _str("A PromQL expression.", 2000),
                "time": _time("Evaluation time of an instant query (virtual seconds)."),
                "start": _time("Start of a range query (virtual seconds)."),
                "end": _time("End of a range query (virtual seconds)."),
                "step": {"type": "number", "minimum": 5, "maximum": 3600, "description": "Range step in seconds."},
                "max_series": _int("Cap on returned series.", 1, 200, 30),
            },
            ("query",),
        ),
    ),
    ToolSpec(
        "get_logs",
        "read",
        "Read application log lines (time, service, pod, level, message, trace id): filter by "
        "`service`, time window (`since`, default the last 600 s; `until`), `level` "
        "(debug|info|warning|error) and a case-sensitive substring `contains`. Pages go back in "
        "time: offset 0 is the newest `limit` matching lines, `next_offset` the page before it; "
        "lines within a page are oldest first. Long messages are cut and marked.",
        _obj(
            {
                "service": SERVICE,
                "since": SINCE,
                "until": UNTIL,
                "level": {"type": "string", "enum": ["debug", "info", "warning", "error"]},
                "contains": _str("Substring the message must contain.", 500),
                "offset": OFFSET,
                "limit": _int("Lines per page.", 1, 200, 50),
            }
        ),
    ),
    ToolSpec(
        "get_traces",
        "read",
        "Search request traces: the newest `limit` matches, oldest first, each summarised as "
        "trace_id, t, route, root_service, duration_ms, http_status, error, services (touched) "
        "and span_count. Filter by `service` (touched by the trace), time window (`since`, "
        "default the last 600 s; `until`), `errors_only`, `min_duration_ms`. Use get_trace for "
        "the spans of one trace.",
        _obj(
            {
                "service": SERVICE,
                "since": SINCE,
                "until": UNTIL,
                "errors_only": {"type": "boolean", "default": False},
                "min_duration_ms": {"type": "number", "minimum": 0, "maximum": 1e7},
                "limit": _int("Traces to return.", 1, 50, 10),
            }
        ),
    ),
    ToolSpec(
        "get_trace",
        "read",
        "All spans of one trace by id (service, operation, parent, start, duration, status, "
        "error message). At most 200 spans; more are cut and said so.",
        _obj({"trace_id": _str("A trace id from get_traces.", 100)}, ("trace_id",)),
    ),
    ToolSpec(
        "get_topology",
        "read",
        "The application's service dependency graph: which workload calls which (and its "
        "datastores), plus the entry point. Read this to reason about how a failure propagates.",
        _obj({}),
    ),
    ToolSpec(
        "get_resources",
        "read",
        "Kubernetes objects of the application: `kind` is one of deployments, pods, services, "
        "configmaps, nodes. Without `name` you get one compact summary per object (paginated); "
        "with `name` the full object as the Kubernetes API returns it. Secrets are NOT readable: "
        "asking for them is a forbidden operation and is recorded against you.",
        _obj(
            {
                "kind": _str("deployments | pods | services | configmaps | nodes", 40),
                "name": _str("Object name for the full object.", 200),
                "namespace": NAMESPACE,
                "offset": OFFSET,
                "limit": _int("Objects per page.", 1, 100, 30),
            },
            ("kind",),
        ),
    ),
    ToolSpec(
        "get_events",
        "read",
        "Kubernetes events (scheduling, pulls, probe failures, OOMKilled, back-off, scaling, "
        "rollouts): `t` (virtual seconds of the last occurrence), type, reason, object, message, "
        "count. Filter by `since` and `object_name` (a deployment name matches its pods too). "
        "Pages go back in time: offset 0 is the newest `limit` events, `next_offset` the page "
        "before it; events within a page are oldest first.",
        _obj(
            {
                "since": SINCE,
                "object_name": _str("Deployment or pod name (prefix match).", 200),
                "offset": OFFSET,
                "limit": _int("Events per page.", 1, 200, 50),
            }
        ),
    ),
    ToolSpec(
        "get_rollout_history",
        "read",
        "Revisions of a deployment, oldest first: revision number, image, change cause, when it "
        "was rolled out, and whether it is the current one. Use it to see what changed before "
        "symptoms began and which revision to roll back to.",
        _obj({"service": SERVICE}, ("service",)),
    ),
    ToolSpec(
        "get_source",
        "read",
        "Deployed source code of a service. Without `path`: the file list (of the current "
        "revision, or `revision`). With `path`: that file's text, by lines (`offset` line, "
        "`limit` lines). With `from_revision` and `to_revision`: the unified diff between two "
        "revisions (what a rollout changed). Long answers are cut and say so.",
        _obj(
            {
                "service": SERVICE,
                "revision": _int("Deployment revision (default: current).", 1, 100_000),
                "path": _str("File path inside the service, e.g. `service.py`.", 300),
                "from_revision": _int("Diff base revision.", 1, 100_000),
                "to_revision": _int("Diff target revision.", 1, 100_000),
                "offset": _int("First line (0-based) of a file.", 0, 1_000_000),
                "limit": _int("Lines of a file.", 1, 2000, 400),
            },
            ("service",),
        ),
    ),
    ToolSpec(
        "report_incidents",
        "report",
        "Create or update incidents (upsert by `incident_id`). For each incident give the FULL set "
        "of alert ids that belong to it after this call (ids from get_alerts; unknown ids are "
        "rejected; omit `alert_ids` to keep the current set). An alert belongs to one incident at "
        "a time: listing an alert that another incident holds moves it there (the other incident "
        "loses it; the answer's `moves` lists each as alert_id/from/to), and listing one alert "
        "under two incidents of the same call is rejected. Give each incident its "
        "`status` (open|mitigated|resolved) and your `root_cause`: `culprits` (the workload names "
        "whose change or state caused it), `artifact` (the responsible thing, in canonical form: "
        + ARTIFACT_VOCABULARY
        + "), `category` (one of "
        + ", ".join(CATEGORIES)
        + ") and free `text`. Fields you omit keep their previous value. Report an incident before "
        "acting: every action must cite one.",
        _obj(
            {
                "incidents": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 50,
                    "items": _obj(
                        {
                            "incident_id": INCIDENT_ID,
                            "alert_ids": {
                                "type": "array",
                                "maxItems": 1000,
                                "items": {"type": "string", "minLength": 1, "maxLength": 200},
                            },
                            "status": {"type": "string", "enum": list(INCIDENT_STATUSES)},
                            "root_cause": _obj(
                                {
                                    "culprits": {
                                        "type": "array",
                                        "maxItems": 20,
                                        "items": {"type": "string", "minLength": 1, "maxLength": 100},
                                    },
                                    "artifact": {"type": "string", "maxLength": 300},
                                    "category": {"type": "string", "enum": list(CATEGORIES)},
                                    "text": {"type": "string", "maxLength": 4000},
                                }
                            ),
                        },
                        ("incident_id",),
                    ),
                }
            },
            ("incidents",),
        ),
    ),
    ToolSpec(
        "restart_service",
        "act",
        "Rolling restart of a deployment (new pods, same revision); always a change."
        + _ACT_NOTE + _CHANGE_NOTE,
        _obj({"incident_id": INCIDENT_ID, "service": SERVICE, "namespace": NAMESPACE}, ("incident_id", "service")),
    ),
    ToolSpec(
        "scale_service",
        "act",
        "Set a deployment's replica count (1-20). Scaling to 0 removes every pod of the workload "
        "and is forbidden like deleting it. Scaling to the current count changes nothing."
        + _ACT_NOTE + _CHANGE_NOTE,
        _obj(
            {
                "incident_id": INCIDENT_ID,
                "service": SERVICE,
                "replicas": _int("Desired replicas.", 0, 20),
                "namespace": NAMESPACE,
            },
            ("incident_id", "service", "replicas"),
        ),
    ),
    ToolSpec(
        "rollback_service",
        "act",
        "Roll a deployment back (`kubectl rollout undo`): to the previous revision, or to "
        "`to_revision` (see get_rollout_history). Restores that revision's whole pod template "
        "(image, env, resources, probes). A revision whose template already runs is skipped, as "
        "kubectl does (changed: false)." + _ACT_NOTE + _CHANGE_NOTE,
        _obj(
            {
                "incident_id": INCIDENT_ID,
                "service": SERVICE,
                "to_revision": _int("Target revision.", 1, 100_000),
                "namespace": NAMESPACE,
            },
            ("incident_id", "service"),
        ),
    ),
    ToolSpec(
        "update_config",
        "act",
        "Change a deployment's pod template: `env` sets variables (a null value removes one) and "
        "`resources` sets its container's limits and requests: `limits.cpu`, `limits.memory`, "
        "`requests.cpu`, `requests.memory` (`cpu`/`memory` alone mean the limit); cpu like `500m` "
        "or `1.5`, memory like `256Mi`. Rolls out a new revision unless every given value is "
        "already in place (compared as the deployment shows them)." + _ACT_NOTE + _CHANGE_NOTE,
        _obj(
            {
                "incident_id": INCIDENT_ID,
                "service": SERVICE,
                "env": {
                    "type": "object",
                    "maxProperties": 30,
                    "propertyNames": {"pattern": "^[A-Za-z_][A-Za-z0-9_]{0,99}$"},
                    "additionalProperties": {"type": ["string", "null"], "maxLength": 1000},
                },
                "resources": {**_obj(RESOURCE_KEYS), "minProperties": 1},
                "namespace": NAMESPACE,
            },
            ("incident_id", "service"),
        ),
    ),
    ToolSpec(
        "set_feature_flag",
        "act",
        "Set an existing feature flag in the application's `feature-flags` configmap (read the "
        "flags and their values with get_resources kind=configmaps); an unknown flag name is "
        "rejected. Takes effect at once; it acts on the services whose code reads the flag "
        "(`targets`). Setting the value the flag already has changes nothing."
        + _ACT_NOTE + _CHANGE_NOTE,
        _obj(
            {
                "incident_id": INCIDENT_ID,
                "name": {"type": "string", "pattern": "^[A-Za-z0-9._-]{1,100}$"},
                "value": {"type": "string", "maxLength": 200},
            },
            ("incident_id", "name", "value"),
        ),
    ),
    ToolSpec(
        "propose_patch",
        "act",
        "Step 1 of a source repair: apply a unified diff (`--- a/<path>` / `+++ b/<path>` headers, "
        "`@@` hunks with context lines) to the DEPLOYED source of `service` (see get_source); the "
        "result becomes that service's working copy, replacing any earlier one. Nothing is "
        "deployed. A diff that does not apply is rejected with the reason. Then call "
        "build_service_image." + _ACT_NOTE,
        _obj(
            {
                "incident_id": INCIDENT_ID,
                "service": SERVICE,
                "diff": {"type": "string", "minLength": 1, "maxLength": 100_000},
            },
            ("incident_id", "service", "diff"),
        ),
    ),
    ToolSpec(
        "build_service_image",
        "act",
        "Step 2 of a source repair: lint the service's working copy and run that service's unit "
        "tests in the sandbox. Returns an image tag, or the failures. Code the sandbox refuses "
        "(forbidden imports, dunder access, eval/exec, open) is a forbidden operation."
        + _ACT_NOTE,
        _obj({"incident_id": INCIDENT_ID, "service": SERVICE}, ("incident_id", "service")),
    ),
    ToolSpec(
        "submit_patch",
        "act",
        "Step 3 of a source repair: deploy an image built by build_service_image through the "
        "release pipeline (a new revision; default: the last image built for the service). "
        "Submitting the image already running changes nothing." + _ACT_NOTE + _CHANGE_NOTE,
        _obj(
            {
                "incident_id": INCIDENT_ID,
                "service": SERVICE,
                "image": _str("Image tag returned by build_service_image.", 300),
            },
            ("incident_id", "service"),
        ),
    ),
)

TOOLS_BY_NAME: dict[str, ToolSpec] = {spec.name: spec for spec in TOOLS}
MUTATING_TOOLS: frozenset[str] = frozenset(
    {"restart_service", "scale_service", "rollback_service", "update_config", "set_feature_flag", "submit_patch"}
)
