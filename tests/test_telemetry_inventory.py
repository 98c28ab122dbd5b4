"""The series the twin emits are the series a real cluster's exporters and the shipped collector
configuration produce, and every alert rule reads only those.

Inventory: `pytest_marathon/deploy/series.py`; collector: `pytest_marathon/deploy/otel-collector.yaml`
(opentelemetry-collector-contrib `connector/spanmetricsconnector` README and `factory.go`
defaults: namespace `traces.span.metrics`, unit ms); exporters: kubernetes/kube-state-metrics
`internal/store/pod.go`, `deployment.go`, `utils.go`; oliver006/redis_exporter
`exporter/exporter.go`, `exporter/info.go`.
"""

from __future__ import annotations

import re

import pytest
import yaml

from pytest_marathon.alerting import PromQLEngine
from pytest_marathon.alerting.rules import available_packs, load_rule_pack
from pytest_marathon.alerting.series_check import missing_series
from pytest_marathon.backends import create_backend
from pytest_marathon.deploy import collector_config_text
from pytest_marathon.deploy.series import SERIES, labels_of
from pytest_marathon.twin import instrumentation, spanmetrics
from pytest_marathon.twin.errors import GRPC_CODES

#: every rule of every shipped pack (`pack/<app>.rules.yaml`), by (app, rule name)
RULES = {(app, rule.name): rule for app in available_packs() for rule in load_rule_pack(app).rules}


@pytest.mark.parametrize(("app", "name"), sorted(RULES))
def test_every_rule_reads_only_series_the_shipped_exporters_produce(app: str, name: str) -> None:
    assert missing_series(RULES[app, name].expr, labels_of) == []


@pytest.mark.parametrize(
    ("expr", "problem"),
    [
        ("rate(rpc_server_call_duration_seconds_count[2m]) > 0", "no exporter produces rpc_server_call_duration_seconds_count"),
        ('redis_up{service="redis-cart"} == 0', "redis_up has no label service"),
        ("sum by (namespace, service_name) (rate(traces_span_metrics_calls_total[2m])) > 0", "sum by (namespace)"),
        ("histogram_quantile(0.9, sum by (service_name) (rate(traces_span_metrics_duration_milliseconds_bucket[2m])))",
         "histogram_quantile (le)"),
        ("redis_memory_used_bytes / on (service) redis_memory_max_bytes > 0.9", "on (service)"),
        ('label_replace(redis_up, "deployment", "$1", "pod", "(.+)")', "label_replace source (pod)"),
    ],
)
def test_the_check_names_what_no_exporter_produces(expr: str, problem: str) -> None:
    assert any(p.startswith(problem) for p in missing_series(expr, labels_of)), missing_series(expr, labels_of)


def test_label_replace_and_grouping_carry_labels_through() -> None:
    expr = ('label_replace(sum by (namespace, instance) (rate(redis_errors_total[2m])) > 0, '
            '"deployment", "$1", "instance", "redis://([^:]+):.*")')
    assert missing_series(expr, labels_of) == []


@pytest.fixture(scope="module")
def faulted():
    """Ten minutes of the twin with a rotated redis password, a crash loop and a bad image."""
    backend = create_backend("boutique", 5)
    backend.advance_to(120.0)
    backend.chaos_start("credential_rotation", "redis-cart", reload="server")
    backend.release("emailservice", image="emailservice:v9.9.9", change_cause="bump emailservice")
    backend.advance_to(600.0)
    return backend


def test_the_twin_emits_only_inventoried_series(faulted) -> None:
    for name in faulted.store.names():
        known = labels_of(name)
        assert known is not None, f"{name} is in no exporter's inventory"
        for series in faulted.store.series(name):
            assert set(series.labels) - {"__name__"} <= known, (name, series.labels)


def test_collector_config_produces_the_span_metric_labels_the_twin_emits() -> None:
    """Connector dimensions (span attributes of semconv v1.37.0) become the Prometheus labels of
    the inventory; the default namespace and unit give the metric names."""
    config = yaml.safe_load(collector_config_text())
    connector = config["connectors"]["span_metrics"]
    dimensions = tuple(d["name"] for d in connector["dimensions"])
    assert dimensions == spanmetrics.DIMENSIONS
    assert "namespace" not in connector and "unit" not in connector.get("histogram", {})
    defaults = {"job", "service_name", "span_name", "span_kind", "status_code"}
    expected = defaults | {spanmetrics.prom_label(d) for d in dimensions}
    for name, (source, labels) in SERIES.items():
        if source == "collector":
            assert labels - {"le"} == expected, name
            assert name.startswith(("traces_span_metrics_calls_total", "traces_span_metrics_duration_milliseconds_"))
    pipelines = config["service"]["pipelines"]
    assert pipelines["traces"]["exporters"] == ["span_metrics", "otlp/jaeger"]
    # the spans go on to the Jaeger the monitoring stack deploys (deploy/monitoring.py)
    assert config["exporters"]["otlp/jaeger"]["endpoint"] == "jaeger.monitoring.svc:4317"
    assert pipelines["metrics"]["receivers"] == ["span_metrics"]
    assert pipelines["metrics"]["exporters"] == ["prometheus"]
    assert "logs" not in pipelines and "count" not in config["connectors"]  # no log-derived metric


def test_kube_state_metrics_waiting_reason_is_the_current_one_with_value_1(faulted) -> None:
    """pod.go: one series per waiting container, its current reason, value 1; none once it runs."""
    waiting = [s for s in faulted.store.series("kube_pod_container_status_waiting_reason")
               if s.labels["pod"].startswith("emailservice-") and s.values[-1] == s.values[-1]]
    assert {s.labels["reason"] for s in waiting} == {"ImagePullBackOff"}
    assert {s.values[-1] for s in waiting} == {1.0}
    promql = PromQLEngine(faulted.store)
    assert promql.instant("kube_pod_container_status_waiting_reason == 0", faulted.now) == []


def test_deployment_conditions_carry_their_reason_and_pod_ready_has_unknown(faulted) -> None:
    """deployment.go `kube_deployment_status_condition{reason,condition,status}`; pod.go
    `kube_pod_status_ready` over utils.go `conditionStatuses` (true, false, unknown)."""
    promql = PromQLEngine(faulted.store)
    available = promql.instant('kube_deployment_status_condition{deployment="frontend", condition="Available", '
                               'status="true"}', faulted.now)
    assert [a["labels"]["reason"] for a in available] == ["MinimumReplicasAvailable"]
    ready = promql.instant('kube_pod_status_ready{condition="unknown"}', faulted.now)
    assert ready and {r["value"] for r in ready} == {0.0}


def test_redis_auth_failures_are_acl_denials_and_errorstats_not_rejected_connections(faulted) -> None:
    """redis_exporter: `acl_access_denied_auth` -> redis_acl_access_denied_auth_total
    (exporter.go), errorstats -> redis_errors_total{err} and commandstats ->
    redis_commands_failed_calls_total{cmd} (info.go); no `service` label."""
    promql = PromQLEngine(faulted.store)
    denied = promql.instant("redis_acl_access_denied_auth_total", faulted.now)
    assert denied and denied[0]["value"] > 0
    assert set(denied[0]["labels"]) == {"__name__", "namespace", "job", "instance"}
    assert denied[0]["labels"]["instance"] == "redis://redis-cart:6379"
    errors = promql.instant('redis_errors_total{err="WRONGPASS"}', faulted.now)
    failed = promql.instant('redis_commands_failed_calls_total{cmd="auth"}', faulted.now)
    assert errors and failed and errors[0]["value"] == failed[0]["value"] == denied[0]["value"]
    [rejected] = promql.instant("redis_rejected_connections_total", faulted.now)
    assert rejected["value"] == 0.0


def test_no_frontend_pod_leaves_no_http_series() -> None:
    """With no frontend pod nothing runs otelhttp's handler: no 5xx series appears (whatever
    answers the user is not the frontend's instrumentation)."""
    backend = create_backend("boutique", 5)
    backend.advance_to(60.0)
    backend.scale("frontend", 0)
    backend.advance_to(300.0)
    promql = PromQLEngine(backend.store)
    assert promql.instant('traces_span_metrics_calls_total{http_response_status_code=~"5.."}', backend.now) == []


def test_span_metric_labels_copy_the_status_and_code_the_instrumentation_set() -> None:
    """The connector copies a span's status and its `rpc.grpc.status_code` attribute; which status
    a code gives is the instrumentation's (tests/test_twin_instrumentation.py): a Go server span
    answering INVALID_ARGUMENT stays UNSET (otelgrpc `serverStatus`), the client span is an error."""
    server = {"service": "shippingservice", "name": "hipstershop.ShippingService/GetQuote", "kind": "SPAN_KIND_SERVER",
              "status": instrumentation.grpc_span_status("SPAN_KIND_SERVER", "INVALID_ARGUMENT", "go"),
              "attributes": instrumentation.grpc_attributes("INVALID_ARGUMENT", "go")}
    client = {**server, "service": "frontend", "kind": "SPAN_KIND_CLIENT", "peer": "shippingservice:50051",
              "status": instrumentation.grpc_span_status("SPAN_KIND_CLIENT", "INVALID_ARGUMENT", "go")}
    assert dict(spanmetrics.grpc_labels(server))["status_code"] == "STATUS_CODE_UNSET"
    assert dict(spanmetrics.grpc_labels(server))["rpc_grpc_status_code"] == "3"
    labels = dict(spanmetrics.grpc_labels(client))
    assert labels["status_code"] == "STATUS_CODE_ERROR" and labels["server_address"] == "shippingservice"
    card = {**server, "service": "paymentservice", "status": "STATUS_CODE_ERROR",
            "attributes": instrumentation.grpc_attributes("Code(400)", "nodejs")}
    assert dict(spanmetrics.grpc_labels(card))["rpc_grpc_status_code"] == "400"


def test_the_collector_gives_go_spans_the_status_number_the_rules_read() -> None:
    """Go's otelgrpc v0.69.0 (microservices-demo v0.10.6 `src/frontend/go.mod`) sets only the
    string `rpc.response.status_code` (opentelemetry-go-contrib `otelgrpc/stats_handler.go`
    `canonicalString`: the name, or `CODE(n)`); the shipped `transform/rpc_status` processor maps
    every name to its number before the span metrics are derived, and a number outside the table
    through its `CODE(n)` form. The twin's Go spans carry both, Python's and Node's the number."""
    config = yaml.safe_load(collector_config_text())
    assert config["service"]["pipelines"]["traces"]["processors"][-1] == "transform/rpc_status"
    statements = config["processors"]["transform/rpc_status"]["trace_statements"][0]["statements"]
    mapped = {}
    for statement in statements:
        found = re.fullmatch(r'set\(attributes\["rpc\.grpc\.status_code"\], (\d+)\) '
                             r'where attributes\["rpc\.response\.status_code"\] == "([A-Z_]+)"', statement)
        if found:
            mapped[found.group(2)] = int(found.group(1))
    assert mapped == GRPC_CODES
    pattern = re.search(r'ExtractPatterns\(attributes\["rpc\.response\.status_code"\], "(.+?)"\)', " ".join(statements))
    assert pattern is not None
    regex = pattern.group(1).replace("\\\\", "\\")  # the OTTL string literal unescaped
    code = re.fullmatch(regex, instrumentation.canonical_status("Code(400)"))
    assert code is not None and int(code.group("rpc_status_number")) == 400
    assert instrumentation.grpc_attributes("Code(400)", "go") == {
        "rpc.grpc.status_code": 400, "rpc.response.status_code": "CODE(400)"}
    assert instrumentation.grpc_attributes("UNAVAILABLE", "go")["rpc.response.status_code"] == "UNAVAILABLE"
    assert instrumentation.grpc_attributes("UNAVAILABLE", "python") == {"rpc.grpc.status_code": 14}


def test_go_spans_in_the_twins_traces_carry_otelgrpcs_status_name(faulted) -> None:
    languages = {"frontend": "go", "checkoutservice": "go", "recommendationservice": "python",
                 "currencyservice": "nodejs"}
    seen = set()
    for trace in faulted.traces(limit=20):
        for span in faulted.trace(trace["trace_id"])["spans"]:
            language = languages.get(span["service"])
            if language is None or "rpc.grpc.status_code" not in span.get("attributes", {}):
                continue
            has_name = "rpc.response.status_code" in span["attributes"]
            assert has_name == (language == "go"), span
            seen.add(language)
    assert "go" in seen and len(seen) >= 2, seen


def test_the_synthetic_parity_cluster_is_shaped_like_the_inventory() -> None:
    from alert_synthetic import synthetic_store

    store = synthetic_store(minutes=2.0)
    for name in store.names():
        known = labels_of(name)
        assert known is not None, name
        for series in store.series(name):
            assert set(series.labels) - {"__name__"} <= known, (name, series.labels)
