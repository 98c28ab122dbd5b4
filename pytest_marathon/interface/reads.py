"""The ten read tools: the agent's view of alerts, telemetry, Kubernetes state and source.

Every answer is compact and bounded (see `shaping`); benchmark infrastructure is filtered out of
what the backend returns so an agent observes only the application, as the paper requires.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pytest_marathon.backends.base import Backend
from pytest_marathon.interface.metrics import MetricsReader
from pytest_marathon.interface.policy import Policy
from pytest_marathon.interface.shaping import clip, page
from pytest_marathon.interface.summaries import RESOURCE_KINDS, summarise
from pytest_marathon.interface.verdicts import BadArguments

DEFAULT_LOOKBACK_S = 600.0
MESSAGE_CHARS = 500
MAX_SPANS = 200
SOURCE_CHARS = 40_000
DIFF_CHARS = 20_000
FETCH_CAP = 5_000

Args = Mapping[str, Any]


class Reads:
    def __init__(
        self,
        backend: Backend,
        alerts: Callable[[], list[dict[str, Any]]],
        policy: Policy,
        metrics: MetricsReader,
    ) -> None:
        self._backend = backend
        self._alerts = alerts
        self._policy = policy
        self._metrics = metrics

    def handlers(self) -> dict[str, Callable[[Args], dict[str, Any]]]:
        return {
            "get_alerts": self.get_alerts,
            "query_metrics": self.query_metrics,
            "get_logs": self.get_logs,
            "get_traces": self.get_traces,
            "get_trace": self.get_trace,
            "get_topology": self.get_topology,
            "get_resources": self.get_resources,
            "get_events": self.get_events,
            "get_rollout_history": self.get_rollout_history,
            "get_source": self.get_source,
        }

    # alerts and metrics ----------------------------------------------------------------------
    def get_alerts(self, args: Args) -> dict[str, Any]:
        state = args.get("state", "any")
        since = args.get("since")
        name = args.get("alertname")
        labels = args.get("labels") or {}
        chosen = []
        for alert in self._alerts():
            if state != "any" and alert.get("state") != state:
                continue
            if name is not None and alert.get("alertname") != name:
                continue
            alert_labels = alert.get("labels") or {}
            if any(alert_labels.get(k) != v for k, v in labels.items()):
                continue
            if since is not None and not _touches_since(alert, since):
                continue
            chosen.append(_alert_view(alert))
        chosen.sort(key=lambda a: (a["fired_at"] is None, a["fired_at"] or 0.0, a["alert_id"]))
        result = page(chosen, args.get("offset", 0), args.get("limit", 50), key="alerts")
        result["now"] = self._backend.now
        return result

    def query_metrics(self, args: Args) -> dict[str, Any]:
        return self._metrics.query(args, self._backend.now)

    # logs, traces ------------------------------------------------------------------------------
    def get_logs(self, args: Args) -> dict[str, Any]:
        service = self._known_service(args.get("service"))
        since = args.get("since", self._backend.now - DEFAULT_LOOKBACK_S)
        offset, limit = args.get("offset", 0), args.get("limit", 50)
        wanted = _fetch_size(offset, limit, "lines")
        lines = self._backend.logs(
            service=service,
            since=since,
            until=args.get("until"),
            level=args.get("level"),
            contains=args.get("contains"),
            limit=wanted,
        )
        hidden = set(self._backend.infrastructure())
        shown = [_log_view(line) for line in lines if line.get("service") not in hidden]
        return {"since": since, **_page_back_in_time(shown, offset, limit, len(lines) >= wanted, "lines")}

    def get_traces(self, args: Args) -> dict[str, Any]:
        service = self._known_service(args.get("service"))
        since = args.get("since", self._backend.now - DEFAULT_LOOKBACK_S)
        traces = self._backend.traces(
            service=service,
            since=since,
            until=args.get("until"),
            errors_only=bool(args.get("errors_only", False)),
            min_duration_ms=args.get("min_duration_ms"),
            limit=args.get("limit", 10),
        )
        return {"since": since, "traces": [_trace_summary(trace) for trace in traces]}

    def get_trace(self, args: Args) -> dict[str, Any]:
        trace = self._backend.trace(args["trace_id"])
        if trace is None:
            raise BadArguments(f"no trace with id {args['trace_id']!r} (ids come from get_traces)")
        view = _trace_summary(trace)
        spans = [_span_view(span) for span in trace.get("spans") or []]
        view["span_count"] = len(spans)
        view["spans"] = spans[:MAX_SPANS]
        if len(spans) > MAX_SPANS:
            view["truncated"] = f"{len(spans) - MAX_SPANS} of {len(spans)} spans cut"
        return view

    # cluster state -----------------------------------------------------------------------------
    def get_topology(self, args: Args) -> dict[str, Any]:
        return dict(self._backend.topology())

    def get_resources(self, args: Args) -> dict[str, Any]:
        kind = args["kind"]
        self._policy.check_resource_kind(kind)
        self._policy.check_namespace(args.get("namespace"))
        plural = kind.strip().lower()
        plural = plural if plural.endswith("s") else plural + "s"
        if plural not in RESOURCE_KINDS:
            raise BadArguments(f"unknown kind {kind!r}; readable kinds: {', '.join(RESOURCE_KINDS)}")
        hidden = set(self._backend.infrastructure())
        name = args.get("name")
        objects = [
            obj
            for obj in self._backend.resources(plural, name)
            if _workload_of(obj) not in hidden
        ]
        if name is not None:
            if not objects:
                raise BadArguments(f"no {plural[:-1]} named {name!r} (list them with get_resources kind={plural})")
            return {"kind": plural, "object": objects[0]}
        summaries = [summarise(plural, obj) for obj in objects]
        return {"kind": plural, **page(summaries, args.get("offset", 0), args.get("limit", 30))}

    def get_events(self, args: Args) -> dict[str, Any]:
        offset, limit = args.get("offset", 0), args.get("limit", 50)
        wanted = _fetch_size(offset, limit, "events")
        events = self._backend.events(since=args.get("since"), object_name=args.get("object_name"), limit=wanted)
        hidden = set(self._backend.infrastructure())
        shown = [_event_view(e) for e in events if _event_workload(e) not in hidden]
        return _page_back_in_time(shown, offset, limit, len(events) >= wanted, "events")

    def get_rollout_history(self, args: Args) -> dict[str, Any]:
        service = self._known_service(args["service"])
        return {"service": service, "revisions": self._backend.rollout_history(service)}

    def get_source(self, args: Args) -> dict[str, Any]:
        service = self._known_service(args["service"])
        low, high = args.get("from_revision"), args.get("to_revision")
        if (low is None) != (high is None):
            raise BadArguments("a diff needs both from_revision and to_revision")
        if low is not None and high is not None:
            diff = self._backend.source_diff(service, low, high)
            return {"service": service, "from_revision": low, "to_revision": high, "diff": clip(diff, DIFF_CHARS)}
        path = args.get("path")
        files = self._backend.source(service, revision=args.get("revision"), path=path)
        if path is None:
            listing = [{"path": p, "lines": len(text.splitlines()), "chars": len(text)} for p, text in sorted(files.items())]
            return {"service": service, "revision": args.get("revision"), "files": listing}
        if path not in files:
            raise BadArguments(f"{service} has no file {path!r} (list files with get_source service={service})")
        lines = files[path].splitlines()
        offset, limit = args.get("offset", 0), args.get("limit", 400)
        chunk = clip("\n".join(lines[offset : offset + limit]), SOURCE_CHARS)
        following = offset + limit
        return {
            "service": service,
            "path": path,
            "revision": args.get("revision"),
            "total_lines": len(lines),
            "offset": offset,
            "next_offset": following if following < len(lines) else None,
            "text": chunk,
        }

    def _known_service(self, service: str | None) -> str | None:
        if service is None:
            return None
        if "/" in service:  # `namespace/name`: reading outside the application is forbidden too
            namespace, _, service = service.partition("/")
            self._policy.check_namespace(namespace)
        workloads = self._backend.workloads()
        if service not in workloads:
            raise BadArguments(f"unknown service {service!r}; the application's workloads are: {', '.join(workloads)}")
        return service


def alert_id(alert: Mapping[str, Any]) -> str:
    """The id of an alert-history record (the alert engine spells it `id`, bundles `alert_id`)."""
    return str(alert.get("alert_id", alert.get("id")))


def _touches_since(alert: Mapping[str, Any], since: float) -> bool:
    fired, resolved = alert.get("fired_at"), alert.get("resolved_at")
    return (fired is not None and fired >= since) or (resolved is not None and resolved >= since) or (
        resolved is None and alert.get("state") == "firing"
    )


def _alert_view(alert: Mapping[str, Any]) -> dict[str, Any]:
    value = alert.get("value")
    return {
        "alert_id": alert_id(alert),
        "alertname": alert.get("alertname"),
        "state": alert.get("state"),
        "labels": dict(alert.get("labels") or {}),
        "annotations": {k: clip(str(v), MESSAGE_CHARS) for k, v in (alert.get("annotations") or {}).items()},
        "value": round(value, 6) if isinstance(value, float) else value,
        "fired_at": alert.get("fired_at"),
        "resolved_at": alert.get("resolved_at"),
    }


def _fetch_size(offset: int, limit: int, what: str) -> int:
    """How many of the newest items to ask the backend for: this page plus one to know if more exist."""
    wanted = offset + limit + 1
    if wanted > FETCH_CAP:
        raise BadArguments(
            f"offset {offset} reaches back more than {FETCH_CAP} {what}; narrow the time window "
            "(`since`/`until`) or the filters instead of paging that far"
        )
    return wanted


def _page_back_in_time(
    newest: list[dict[str, Any]], offset: int, limit: int, more_before: bool, key: str
) -> dict[str, Any]:
    """A page of the newest items (oldest first): offset 0 is the most recent, paging goes back.

    `newest` is the backend's answer (the newest matches, oldest first); `more_before` says whether
    it was cut, i.e. whether older matches exist beyond it.
    """
    end = max(len(newest) - offset, 0)
    chunk = newest[max(end - limit, 0) : end]
    older = more_before or end - limit > 0
    return {"offset": offset, "next_offset": offset + limit if older and chunk else None, key: chunk}


def _rounded(value: Any) -> Any:
    return round(value, 3) if isinstance(value, float) else value


def _log_view(line: Mapping[str, Any]) -> dict[str, Any]:
    view = {key: _rounded(value) for key, value in line.items()}
    if isinstance(view.get("message"), str):
        view["message"] = clip(view["message"], MESSAGE_CHARS)
    return view


def _trace_summary(trace: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _rounded(v) for k, v in trace.items() if k != "spans"}


def _span_view(span: Mapping[str, Any]) -> dict[str, Any]:
    """A span without what its trace already says (the trace id), messages cut."""
    view = {k: _rounded(v) for k, v in span.items() if k != "trace_id"}
    if isinstance(view.get("status_message"), str):
        view["status_message"] = clip(view["status_message"], MESSAGE_CHARS)
    return view


def _event_view(event: Mapping[str, Any]) -> dict[str, Any]:
    """Virtual time of the last occurrence (`t`), as every other answer counts time."""
    involved = event.get("involvedObject") or {}
    return {
        "t": _rounded(event.get("t")),
        "type": event.get("type"),
        "reason": event.get("reason"),
        "object": f"{involved.get('kind', '')}/{involved.get('name', '')}",
        "message": clip(str(event.get("message", "")), MESSAGE_CHARS),
        "count": event.get("count", 1),
    }


def _event_workload(event: Mapping[str, Any]) -> str:
    """The workload an event is about: pod names are `<deployment>-<hash>-<suffix>`."""
    involved = event.get("involvedObject") or {}
    name = str(involved.get("name", ""))
    strip = {"Pod": 2, "ReplicaSet": 1}.get(str(involved.get("kind")), 0)
    parts = name.split("-")
    return "-".join(parts[:-strip]) if strip and len(parts) > strip else name


def _workload_of(obj: Mapping[str, Any]) -> str:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return labels.get("app") or (obj.get("metadata") or {}).get("name", "")

