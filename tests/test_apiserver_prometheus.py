"""The twin's Prometheus HTTP API answers real clients with the evaluator's own numbers.

One boutique twin runs a few virtual minutes behind the server (module scope); then the real
`promtool query` (instant, range, series, labels) and `prometheus_api_client.PrometheusConnect`
ask it the pack's rule expressions (and the left-hand sides of their threshold comparisons,
which are rarely empty) and must get exactly what `PromQLEngine.instant`/`range` give on the
same store at the same time. Shapes, error types and HTTP codes follow upstream
prometheus/prometheus web/api/v1/api.go; value text follows util/jsonutil/marshal.go.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import promql_parser as pp
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_marathon.alerting import AlertEngine, PromQLEngine, load_rule_pack
from pytest_marathon.apiserver.prom_format import (
    TWIN_EPOCH_UNIX,
    go_exponent,
    parse_duration,
    parse_time,
    rfc3339,
    sample_value,
    to_unix,
)
from pytest_marathon.apiserver.prometheus import start_prometheus_api
from pytest_marathon.backends import create_backend
from pytest_marathon.tsdb import is_stale

prometheus_api_client = pytest.importorskip(
    "prometheus_api_client", reason="prometheus-api-client is not installed (the `test` extra)"
)
from prometheus_api_client.exceptions import PrometheusApiClientException  # noqa: E402

SEED = 5
FAULT_AT = 120.0  # virtual seconds: redis-cart goes down
END = 300.0
EVERY = 15.0  # the pack's evaluation interval
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None, reason="promtool is not installed (Debian: apt-get install prometheus)"
)
_COMPARISONS = {">", "<", ">=", "<=", "==", "!="}


def _expressions() -> list[str]:
    """Every rule expression of the pack, plus the value side of each threshold comparison."""
    found: list[str] = []
    for rule in load_rule_pack("boutique").rules:
        found.append(rule.expr)
        tree = pp.parse(rule.expr)
        if isinstance(tree, pp.BinaryExpr) and str(tree.op) in _COMPARISONS:
            found.append(str(tree.lhs))
    return list(dict.fromkeys(found))


EXPRESSIONS = _expressions()
RATE = "sum by (service_name) (rate(traces_span_metrics_calls_total[1m]))"
CALLS = "sum by (service_name) (traces_span_metrics_calls_total)"


@dataclass
class Scene:
    backend: Any
    url: str
    reference: AlertEngine
    alerts_quiet: dict[str, Any] = field(default_factory=dict)
    future_before: dict[str, list[Any]] = field(default_factory=dict)
    future_after: dict[str, list[Any]] = field(default_factory=dict)
    future_t: float = 0.0


def _get(url: str, path: str, **params: Any) -> tuple[int, dict[str, Any]]:
    query = urllib.parse.urlencode(params, doseq=True)
    try:
        with urllib.request.urlopen(f"{url}{path}?{query}", timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def _post(url: str, path: str, **params: Any) -> tuple[int, dict[str, Any]]:
    body = urllib.parse.urlencode(params, doseq=True).encode()
    request = urllib.request.Request(f"{url}{path}", data=body, method="POST")
    request.add_header("Content-Type", "application/x-www-form-urlencoded")
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@pytest.fixture(scope="module")
def scene() -> Any:
    backend = create_backend("boutique", SEED)
    handle = start_prometheus_api(backend, rule_pack_app="boutique")
    # evaluated in step with the twin, as the runner does: what /api/v1/alerts must agree with
    reference = AlertEngine(load_rule_pack("boutique"), backend.store, backend.namespace)
    scene = Scene(backend, handle.url, reference)
    t = float(backend.now)

    def advance(until: float) -> float:
        now = t
        while now < until:
            now = round(now + backend.tick_seconds, 6)
            with handle.lock:
                backend.advance_to(now)
            if now % EVERY == 0:
                reference.evaluate(now)
        return now

    t = advance(FAULT_AT)
    scene.alerts_quiet = _get(handle.url, "/api/v1/alerts")[1]
    # a time the twin has not reached: answered from the data that exists, and nothing of it
    # may linger once the twin gets there
    scene.future_t = FAULT_AT + 60
    for expr in (RATE, CALLS):
        answer = _get(handle.url, "/api/v1/query", query=expr, time=to_unix(scene.future_t))[1]
        scene.future_before[expr] = answer["data"]["result"]
    backend.chaos_start("datastore_outage", "redis-cart")
    t = advance(END)
    for expr in (RATE, CALLS):
        answer = _get(handle.url, "/api/v1/query", query=expr, time=to_unix(scene.future_t))[1]
        scene.future_after[expr] = answer["data"]["result"]
    yield scene
    handle.close()


@pytest.fixture(scope="module")
def promql(scene: Scene) -> PromQLEngine:
    return PromQLEngine(scene.backend.store)


@pytest.fixture(scope="module")
def client(scene: Scene) -> Any:
    return prometheus_api_client.PrometheusConnect(url=scene.url, disable_ssl=True)


def _key(metric: dict[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(metric.items()))


def _same(api_text: str, value: float) -> bool:
    got = float(api_text)
    return got == value or (math.isnan(got) and math.isnan(value))


def _assert_vector(api: list[dict[str, Any]], engine: Any, t: float) -> None:
    assert isinstance(engine, list)
    expected = {_key(e["labels"]): e["value"] for e in engine}
    got = {_key(r["metric"]): r["value"] for r in api}
    assert got.keys() == expected.keys()
    for labels, (ts, text) in got.items():
        assert ts == pytest.approx(to_unix(t), abs=1e-3)
        assert _same(text, expected[labels]), (labels, text, expected[labels])


def _assert_matrix(api: list[dict[str, Any]], engine: list[dict[str, Any]]) -> None:
    expected = {_key(e["labels"]): e["values"] for e in engine}
    got = {_key(r["metric"]): r["values"] for r in api}
    assert got.keys() == expected.keys()
    for labels, points in got.items():
        want = expected[labels]
        assert [ts for ts, _ in points] == pytest.approx([to_unix(t) for t, _ in want], abs=1e-3)
        assert all(_same(text, v) for (_, text), (_, v) in zip(points, want, strict=True))


# --- prometheus-api-client -------------------------------------------------------------------


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(expr=st.sampled_from(EXPRESSIONS), t_ms=st.integers(-240_000, int(END * 1000)))
def test_custom_query_gives_the_evaluators_values(
    scene: Scene, promql: PromQLEngine, client: Any, expr: str, t_ms: int
) -> None:
    t = t_ms / 1000
    api = client.custom_query(expr, params={"time": f"{to_unix(t):.3f}"})
    _assert_vector(api, promql.instant(expr, t), t)


def test_rule_expressions_are_not_all_empty(scene: Scene, promql: PromQLEngine) -> None:
    """The comparison above means something only if most expressions have series."""
    answered = [e for e in EXPRESSIONS if promql.instant(e, END)]
    assert len(answered) >= len(EXPRESSIONS) // 2, answered


@pytest.mark.parametrize("expr", [RATE, *EXPRESSIONS[:6]])
def test_custom_query_range_gives_the_evaluators_values(
    scene: Scene, promql: PromQLEngine, client: Any, expr: str
) -> None:
    start, end = to_unix(-200.0), to_unix(END)
    api = client.custom_query_range(
        expr,
        start_time=datetime.fromtimestamp(start, tz=UTC),
        end_time=datetime.fromtimestamp(end, tz=UTC),
        step="15s",
    )
    _assert_matrix(api, promql.range(expr, -200.0, END, 15.0))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    expr=st.sampled_from(EXPRESSIONS),
    start_s=st.integers(-280, int(END)),
    span_s=st.integers(0, 400),
    step_ms=st.integers(1_000, 90_000),
)
def test_query_range_gives_the_evaluators_values(
    scene: Scene, promql: PromQLEngine, expr: str, start_s: int, span_s: int, step_ms: int
) -> None:
    """Any window, also one reaching past the twin's now, with a step in milliseconds."""
    start, end, step = float(start_s), float(start_s + span_s), step_ms / 1000
    status, body = _post(
        scene.url, "/api/v1/query_range", query=expr, start=to_unix(start), end=to_unix(end),
        step=f"{step_ms}ms",
    )
    assert status == 200, body
    _assert_matrix(body["data"]["result"], promql.range(expr, start, end, step))


def test_get_current_metric_value_reads_the_twins_now(
    scene: Scene, promql: PromQLEngine, client: Any
) -> None:
    api = client.get_current_metric_value(
        "kube_deployment_spec_replicas", label_config={"deployment": "frontend"}
    )
    expected = promql.instant('kube_deployment_spec_replicas{deployment="frontend"}', END)
    assert len(api) == 1
    _assert_vector(api, expected, END)


def test_the_client_finds_the_server_up(scene: Scene, client: Any) -> None:
    assert client.check_prometheus_connection()
    with urllib.request.urlopen(f"{scene.url}/-/ready", timeout=10) as answer:
        assert answer.read() == b"Prometheus Server is Ready.\n"


def test_all_metrics_lists_the_store(scene: Scene, client: Any) -> None:
    assert client.all_metrics() == scene.backend.store.names()


def test_bad_promql_raises_in_the_client(client: Any) -> None:
    with pytest.raises(PrometheusApiClientException, match="bad_data"):
        client.custom_query("sum(rate(")


# --- promtool --------------------------------------------------------------------------------


def _promtool(*args: str) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL is not None
    return subprocess.run(
        [PROMTOOL, "query", "-o", "json", *args], capture_output=True, text=True, timeout=60
    )


@needs_promtool
@pytest.mark.parametrize("expr", EXPRESSIONS[::4])
def test_promtool_query_instant(scene: Scene, promql: PromQLEngine, expr: str) -> None:
    t = 237.5
    done = _promtool("instant", "--time", str(to_unix(t)), scene.url, expr)
    assert done.returncode == 0, done.stderr
    _assert_vector(json.loads(done.stdout or "[]"), promql.instant(expr, t), t)


@needs_promtool
def test_promtool_query_range(scene: Scene, promql: PromQLEngine) -> None:
    done = _promtool(
        "range", "--start", str(to_unix(-100.0)), "--end", str(to_unix(END)), "--step", "20s",
        scene.url, RATE,
    )
    assert done.returncode == 0, done.stderr
    _assert_matrix(json.loads(done.stdout), promql.range(RATE, -100.0, END, 20.0))


@needs_promtool
def test_promtool_query_series_and_labels(scene: Scene) -> None:
    store = scene.backend.store
    done = _promtool("series", "--match", 'kube_pod_status_ready{condition="true"}', scene.url)
    assert done.returncode == 0, done.stderr
    expected = [
        s.labels for s in store.series("kube_pod_status_ready") if s.labels["condition"] == "true"
    ]
    assert expected
    assert sorted(json.loads(done.stdout), key=_key) == sorted(expected, key=_key)
    done = _promtool("labels", scene.url, "service_name")
    assert done.returncode == 0, done.stderr
    names = {s.labels["service_name"] for s in store if "service_name" in s.labels}
    assert json.loads(done.stdout) == sorted(names)


@needs_promtool
def test_promtool_reports_bad_promql(scene: Scene) -> None:
    done = _promtool("instant", scene.url, "sum by (")
    assert done.returncode != 0
    assert "bad_data" in done.stderr


# --- the API itself: envelope, errors, times ---------------------------------------------------


def test_bad_promql_is_400_bad_data(scene: Scene) -> None:
    for send in (_get, _post):
        status, body = send(scene.url, "/api/v1/query", query="rate(x[5m]")
        assert status == 400
        assert body["status"] == "error" and body["errorType"] == "bad_data"
        assert body["error"].startswith('invalid parameter "query"')


def test_a_failing_evaluation_is_422_execution(scene: Scene) -> None:
    status, body = _get(
        scene.url, "/api/v1/query", query="kube_pod_status_ready + on(namespace) kube_pod_status_ready"
    )
    assert (status, body["errorType"]) == (422, "execution"), body


def test_a_query_past_its_timeout_is_503(scene: Scene) -> None:
    status, body = _get(scene.url, "/api/v1/query", query=RATE, timeout="0.000001")
    assert (status, body["errorType"]) == (503, "timeout"), body
    assert _get(scene.url, "/api/v1/query", query=RATE, timeout="1m")[0] == 200


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"start": "10", "end": "5", "step": "1"}, "end timestamp must not be before start time"),
        ({"start": "0", "end": "5", "step": "0"}, "zero or negative query resolution step"),
        ({"start": "0", "end": "5", "step": "fast"}, 'cannot parse "fast" to a valid duration'),
        ({"start": "0", "end": "100000", "step": "1"}, "exceeded maximum resolution of 11,000"),
        ({"start": "yesterday", "end": "5", "step": "1"}, 'invalid parameter "start"'),
    ],
)
def test_query_range_refuses_bad_parameters(scene: Scene, params: dict[str, str], message: str) -> None:
    status, body = _get(scene.url, "/api/v1/query_range", query=RATE, **params)
    assert (status, body["errorType"]) == (400, "bad_data")
    assert message in body["error"]


def test_query_range_refuses_a_range_vector(scene: Scene) -> None:
    status, body = _get(
        scene.url, "/api/v1/query_range", query="kube_pod_status_ready[1m]", start=0, end=10, step=1
    )
    assert status == 400 and 'invalid expression type "range vector"' in body["error"]


def test_step_as_a_duration_string_or_seconds_and_rfc3339_times(
    scene: Scene, promql: PromQLEngine
) -> None:
    answers = [
        _post(scene.url, "/api/v1/query_range", query=RATE, start=to_unix(0), end=to_unix(60), step=s)
        for s in ("15", "15s", "15000ms")
    ]
    answers.append(
        _get(scene.url, "/api/v1/query_range", query=RATE, start=rfc3339(0), end=rfc3339(60), step="15s")
    )
    assert all(status == 200 for status, _ in answers)
    assert all(body == answers[0][1] for _, body in answers)
    _assert_matrix(answers[0][1]["data"]["result"], promql.range(RATE, 0.0, 60.0, 15.0))


def test_scalar_and_string_results(scene: Scene) -> None:
    assert _get(scene.url, "/api/v1/query", query="1/0", time=to_unix(5))[1]["data"] == {
        "resultType": "scalar", "result": [TWIN_EPOCH_UNIX + 5, "+Inf"],
    }
    nan = _get(scene.url, "/api/v1/query", query="0/0", time=to_unix(5))[1]["data"]["result"]
    assert nan == [TWIN_EPOCH_UNIX + 5, "NaN"]
    text = _get(scene.url, "/api/v1/query", query='"hello"', time=to_unix(5.5))[1]["data"]
    assert text == {"resultType": "string", "result": [TWIN_EPOCH_UNIX + 5.5, "hello"]}


def test_a_range_vector_holds_no_staleness_markers(scene: Scene, promql: PromQLEngine) -> None:
    """A series that went away ends in Prometheus' stale marker: a range vector skips it."""
    series = next(s for s in scene.backend.store if any(is_stale(v) for v in s.values))
    marked = next(t for t, v in zip(series.times, series.values) if is_stale(v))
    matchers = ",".join(f'{k}="{v}"' for k, v in series.key if k != "__name__")
    expr = f"{series.name}{{{matchers}}}[2m]"
    [raw] = promql.instant(expr, marked + 5)
    assert any(is_stale(v) for _, v in raw["values"])
    _, body = _get(scene.url, "/api/v1/query", query=expr, time=to_unix(marked + 5))
    [answer] = body["data"]["result"]
    assert answer["values"] == [
        [to_unix(t), sample_value(v)] for t, v in raw["values"] if not is_stale(v)
    ]


def test_a_query_without_time_is_at_the_twins_now(scene: Scene, promql: PromQLEngine) -> None:
    status, body = _get(scene.url, "/api/v1/query", query="time()")
    assert status == 200
    assert body["data"]["result"] == [to_unix(END), sample_value(END)]


def test_a_future_time_sees_only_what_exists_and_leaves_nothing_behind(
    scene: Scene, promql: PromQLEngine
) -> None:
    """Asked before the twin reached it, a time is answered as Prometheus answers a time it has
    no samples for yet: an instant selector gives the newest sample within the lookback window
    (the value at the twin's then-now), a rate over an empty window gives nothing; asked again
    once the twin got there, it is answered from the samples that arrived since."""
    t = scene.future_t
    assert scene.future_before[RATE] == []
    then = [{"labels": e["labels"], "value": e["value"]} for e in promql.instant(CALLS, FAULT_AT)]
    _assert_vector(scene.future_before[CALLS], then, t)
    for expr in (RATE, CALLS):
        assert scene.future_after[expr]
        _assert_vector(scene.future_after[expr], PromQLEngine(scene.backend.store).instant(expr, t), t)


def test_series_needs_a_match_and_a_real_selector(scene: Scene) -> None:
    assert _get(scene.url, "/api/v1/series") == (
        400, {"status": "error", "errorType": "bad_data", "error": "no match[] parameter provided"}
    )
    status, body = _get(scene.url, "/api/v1/series", **{"match[]": '{job=~".*"}'})
    assert status == 400 and "at least one non-empty matcher" in body["error"]


def test_series_and_labels_honour_the_time_range(scene: Scene) -> None:
    """Series and label values are those with a sample in [start, end]."""
    store = scene.backend.store
    start, end = 200.0, 210.0
    live = [s for s in store if any(start <= x <= end for x in s.times)]
    assert 0 < len(live) < len(store) or len(live) == len(store)
    _, body = _get(
        scene.url, "/api/v1/series", **{"match[]": '{__name__=~".+"}'}, start=to_unix(start), end=to_unix(end)
    )
    assert sorted(map(_key, body["data"])) == sorted(s.key for s in live)
    _, body = _get(scene.url, "/api/v1/label/__name__/values", start=to_unix(-1e6), end=to_unix(-1e5))
    assert body == {"status": "success", "data": []}


def test_buildinfo_and_unknown_paths(scene: Scene) -> None:
    status, body = _get(scene.url, "/api/v1/status/buildinfo")
    assert status == 200 and body["data"]["version"].startswith("2.")
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(f"{scene.url}/api/v1/nothing", timeout=10)
    assert missing.value.code == 404
    # web/api/v1/api.go Register: only query, query_range, series and labels take POST
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(urllib.request.Request(f"{scene.url}/api/v1/rules", data=b""), timeout=10)
    assert refused.value.code == 405


# --- rules and alerts --------------------------------------------------------------------------


def test_rules_lists_every_rule_of_the_pack_with_its_state(scene: Scene) -> None:
    status, body = _get(scene.url, "/api/v1/rules")
    assert status == 200
    pack = load_rule_pack("boutique")
    groups = body["data"]["groups"]
    assert [g["name"] for g in groups] == pack.groups
    rules = [r for g in groups for r in g["rules"]]
    assert [r["name"] for r in rules] == [r.name for r in pack.rules]
    for entry, rule in zip(rules, pack.rules, strict=True):
        assert entry["type"] == "alerting" and entry["health"] == "ok"
        assert entry["duration"] == rule.for_ and entry["query"] == rule.expr.strip()
        states = {a["state"] for a in entry["alerts"]}
        expected = "firing" if "firing" in states else "pending" if states else "inactive"
        assert entry["state"] == expected
    assert {r["state"] for r in rules} >= {"firing", "inactive"}
    assert all(g["lastEvaluation"] == rfc3339(END) for g in groups)


def test_rules_filters(scene: Scene) -> None:
    """web/api/v1/api.go rules: rule_name[], rule_group[], type, exclude_alerts."""
    pack = load_rule_pack("boutique")
    _, body = _get(scene.url, "/api/v1/rules", **{"rule_name[]": ["RedisDown", "PodOOMKilled"]})
    rules = [r for g in body["data"]["groups"] for r in g["rules"]]
    assert sorted(r["name"] for r in rules) == ["PodOOMKilled", "RedisDown"]
    group = pack.rule("RedisDown").group
    _, body = _get(scene.url, "/api/v1/rules", **{"rule_group[]": group}, exclude_alerts="true")
    [only] = body["data"]["groups"]
    assert only["name"] == group and all(r["alerts"] is None for r in only["rules"])
    assert next(r for r in only["rules"] if r["name"] == "RedisDown")["state"] == "firing"
    assert _get(scene.url, "/api/v1/rules", type="record")[1]["data"] == {"groups": []}
    assert _get(scene.url, "/api/v1/rules", exclude_alerts="maybe")[0] == 400


def test_alerts_are_quiet_before_the_fault_and_fire_after(scene: Scene) -> None:
    assert [a for a in scene.alerts_quiet["data"]["alerts"] if a["state"] == "firing"] == []
    _, body = _get(scene.url, "/api/v1/alerts")
    firing = [a for a in body["data"]["alerts"] if a["state"] == "firing"]
    assert "RedisDown" in {a["labels"]["alertname"] for a in firing}


def test_alerts_agree_with_an_engine_evaluated_live(scene: Scene) -> None:
    """The API evaluates the pack late, on demand; the states are those of live evaluation."""
    _, body = _get(scene.url, "/api/v1/alerts")
    expected = sorted(
        (_key(dict(a.labels)), a.state, rfc3339(a.active_at), go_exponent(a.value))
        for state in scene.reference.rule_states
        for a in state.active.values()
        if a.state != "inactive"
    )
    got = sorted(
        (_key(a["labels"]), a["state"], a["activeAt"], a["value"]) for a in body["data"]["alerts"]
    )
    assert got == expected and got


def test_an_engine_the_caller_evaluates_is_read_not_evaluated(scene: Scene) -> None:
    """The runner passes its own engine: the API reports its state and never evaluates it."""
    own = start_prometheus_api(scene.backend, rule_pack_app="boutique", alerts=scene.reference)
    try:
        last = scene.reference.last_evaluation
        assert _get(own.url, "/api/v1/alerts")[1] == _get(scene.url, "/api/v1/alerts")[1]
        groups = _get(own.url, "/api/v1/rules")[1]["data"]["groups"]
        assert {g["lastEvaluation"] for g in groups} == {rfc3339(END)}
        assert scene.reference.last_evaluation == last
    finally:
        own.close()


def test_clients_may_ask_while_the_twin_advances() -> None:
    """Requests and time steps take turns on the handle's lock."""
    import threading

    backend = create_backend("boutique", SEED + 1)
    handle = start_prometheus_api(backend, rule_pack_app="boutique")
    errors: list[BaseException] = []

    def advance() -> None:
        try:
            t = float(backend.now)
            while t < -200:
                t = round(t + backend.tick_seconds, 6)
                with handle.lock:
                    backend.advance_to(t)
        except BaseException as problem:  # noqa: BLE001 - reported by the test
            errors.append(problem)

    stepper = threading.Thread(target=advance)
    stepper.start()
    answers = []
    try:
        while stepper.is_alive():
            answers.append(_get(handle.url, "/api/v1/query", query=CALLS)[0])
            answers.append(_get(handle.url, "/api/v1/rules")[0])
            answers.append(_get(handle.url, "/api/v1/series", **{"match[]": "{namespace!=\"\"}"})[0])
    finally:
        stepper.join()
        handle.close()
    assert errors == [] and answers and set(answers) == {200}


# --- text forms (web/api/v1/api.go parseTime/parseDuration, util/jsonutil/marshal.go) ----------


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.0, "1"), (0.5, "0.5"), (-0.0, "-0"), (1e-5, "0.00001"), (1e-7, "1e-07"),
        (123456789012345678.0, "123456789012345680"), (1e21, "1e+21"), (math.nan, "NaN"),
        (math.inf, "+Inf"), (-math.inf, "-Inf"),
    ],
)
def test_sample_values_are_written_as_go_writes_them(value: float, text: str) -> None:
    assert sample_value(value) == text


@pytest.mark.parametrize(
    ("value", "text"), [(1.0, "1e+00"), (0.25, "2.5e-01"), (0.0, "0e+00"), (1234.5, "1.2345e+03")]
)
def test_alert_values_use_gos_exponent_form(value: float, text: str) -> None:
    assert go_exponent(value) == text


def test_request_times_and_durations() -> None:
    assert parse_time("2026-01-01T00:01:00Z") == 60.0
    assert parse_time("2025-12-31T23:55:00.5+00:00") == -299.5
    assert parse_time(str(TWIN_EPOCH_UNIX + 12.25)) == 12.25
    assert parse_duration("1m30s") == 90.0 and parse_duration("2.5") == 2.5
    for text in ("2026-01-01 00:00:00", "NaN", "inf"):
        with pytest.raises(ValueError):
            parse_time(text)
    with pytest.raises(ValueError):
        parse_duration("1.5m")


# --- side by side with a real Prometheus (the Debian `prometheus` package) ---------------------

PROMETHEUS = shutil.which("prometheus")

#: requests whose answer does not depend on stored data: a real, empty Prometheus must give the
#: same status, error type and (on success) the same data, to the character
SIDE_BY_SIDE: list[tuple[str, dict[str, str]]] = [
    ("/api/v1/query", {"query": "1/0", "time": "5"}),
    ("/api/v1/query", {"query": "-1/0", "time": "5"}),
    ("/api/v1/query", {"query": "0/0", "time": "5.25"}),
    ("/api/v1/query", {"query": '"hi"', "time": "5.5"}),
    ("/api/v1/query", {"query": "vector(1e-7)", "time": "1970-01-01T00:00:05.123Z"}),
    ("/api/v1/query", {"query": "vector(0.1+0.2)", "time": "5"}),
    ("/api/v1/query", {"query": "vector(123456789012345678)", "time": "5"}),
    ("/api/v1/query", {"query": "vector(1e21) * 10", "time": "5"}),
    ("/api/v1/query", {"query": "no_such_metric", "time": "5"}),
    ("/api/v1/query_range", {"query": "vector(2.5)", "start": "0", "end": "30", "step": "10s"}),
    ("/api/v1/query_range", {"query": "scalar(vector(3))", "start": "0.5", "end": "2", "step": "0.5"}),
    ("/api/v1/query", {"query": "rate(x[5m]"}),
    ("/api/v1/query", {"query": ""}),
    ("/api/v1/query", {"query": "1", "time": "abc"}),
    ("/api/v1/query", {"query": "1", "timeout": "soon"}),
    ("/api/v1/query_range", {"query": "1", "start": "10", "end": "5", "step": "1"}),
    ("/api/v1/query_range", {"query": "1", "start": "0", "end": "5", "step": "0"}),
    ("/api/v1/query_range", {"query": "1", "start": "0", "end": "5", "step": "fast"}),
    ("/api/v1/query_range", {"query": "1", "start": "0", "end": "100000", "step": "1"}),
    ("/api/v1/query_range", {"query": "1", "start": "yesterday", "end": "5", "step": "1"}),
    ("/api/v1/query_range", {"query": "x[1m]", "start": "0", "end": "10", "step": "1"}),
    ("/api/v1/series", {}),
    ("/api/v1/series", {"match[]": '{job=~".*"}'}),
    ("/api/v1/series", {"match[]": "nothing_here", "start": "0", "end": "10"}),
    ("/api/v1/label/__name__/values", {"start": "0", "end": "10"}),
    ("/api/v1/labels", {"start": "0", "end": "10"}),
    ("/api/v1/rules", {"type": "record"}),
    ("/api/v1/rules", {"type": "everything"}),
]


@pytest.fixture(scope="module")
def real_prometheus(tmp_path_factory: pytest.TempPathFactory) -> Any:
    if PROMETHEUS is None:
        pytest.skip("prometheus is not installed (Debian: apt-get install prometheus)")
    import socket
    import time

    folder = tmp_path_factory.mktemp("prometheus")
    (folder / "prometheus.yml").write_text("global:\n  scrape_interval: 15s\n")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [PROMETHEUS, f"--config.file={folder / 'prometheus.yml'}",
         f"--storage.tsdb.path={folder / 'data'}", f"--web.listen-address=127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                with urllib.request.urlopen(f"{url}/-/ready", timeout=1) as answer:
                    if answer.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.1)
        else:
            pytest.skip("prometheus did not become ready within 10 s")
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.mark.parametrize(("path", "params"), SIDE_BY_SIDE, ids=[f"{p} {q}" for p, q in SIDE_BY_SIDE])
def test_the_same_request_gets_the_same_answer_as_from_prometheus(
    scene: Scene, real_prometheus: str, path: str, params: dict[str, str]
) -> None:
    real_status, real = _get(real_prometheus, path, **params)
    twin_status, twin = _get(scene.url, path, **params)
    assert (twin_status, twin["status"], twin.get("errorType")) == (
        real_status, real["status"], real.get("errorType")
    ), (twin, real)
    assert twin.get("data") == real.get("data")
    if (path, params.get("query")) not in TEXTS_DIFFER:
        assert twin.get("error") == real.get("error")


#: where the error text may differ from the Debian 2.42 server's, and why
TEXTS_DIFFER = {
    # promql_parser reports no line:column position
    ("/api/v1/query", "rate(x[5m]"),
    # upstream main says "invalid time value" (2.42: "Invalid"), web/api/v1/api.go parseTimeParam
    ("/api/v1/query", "1"),
    # upstream main prefixes `invalid parameter "query": ` (NewRangeQuery's error)
    ("/api/v1/query_range", "x[1m]"),
}
