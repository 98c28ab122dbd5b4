"""The Astronomy Shop pack's own rules (pack/astronomy.rules.yaml): each fires on an exporter-shaped
synthetic series set within 3 minutes of the break, names the workload to act on, and stays quiet
on a healthy one, including healthy values right at its threshold (so a changed threshold fails).

Series have the names and labels of `deploy/series.py` (collector kafkametrics receiver,
postgres_exporter, span metrics); the whole pack is evaluated every 15 s through `AlertEngine`, as
the runner does, with one scrape per evaluation.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pytest_marathon.alerting import AlertEngine, load_rule_pack
from pytest_marathon.alerting.promtool import build_unit_test, promtool_path, run_promtool
from pytest_marathon.tsdb import SeriesStore

NS = "astronomy"
STEP = 15.0
M = 60.0
BREAK = 10 * M  # every broken scenario breaks here
END = 20 * M
#: a broken service alerts within 3 minutes (the pack's header)
WITHIN = 3 * M
NEW_RULES = ("HttpServerErrorRatioHigh", "DatabaseClientErrorRatioHigh", "KafkaConsumerLagHigh",
             "KafkaConsumerGroupNoMembers", "PostgresDown")

Scrape = Callable[["_Store", float], None]


class _Store:
    """A series store fed like a scrape: gauges as given, counters accumulated per second."""

    def __init__(self) -> None:
        self.store = SeriesStore()
        self._counters: dict[tuple, float] = {}

    def gauge(self, t: float, name: str, value: float, **labels: str) -> None:
        self.store.append(name, labels, t, value)

    def counter(self, t: float, name: str, per_second: float, **labels: str) -> None:
        key = (name, tuple(sorted(labels.items())))
        self._counters[key] = self._counters.get(key, 0.0) + per_second * STEP
        self.gauge(t, name, self._counters[key], **labels)


def _run(scrape: Scrape) -> list[dict]:
    """Every alert instance the whole astronomy pack fired over the scenario."""
    feed = _Store()
    engine = AlertEngine(load_rule_pack("astronomy"), feed.store, NS)
    t = 0.0
    while t <= END:
        scrape(feed, t)
        engine.evaluate(t)
        t += STEP
    assert engine.errors == []
    return engine.history()


def _fired(history: list[dict], rule: str) -> list[dict]:
    return [a for a in history if a["alertname"] == rule]


def _assert_pages_in_time(history: list[dict], rule: str, **labels: str) -> dict:
    [alert] = [a for a in _fired(history, rule) if labels.items() <= a["labels"].items()]
    assert BREAK < alert["fired_at"] <= BREAK + WITHIN, alert
    return alert


# --- Kafka consumer lag -------------------------------------------------------------------------------------
def _kafka(feed: _Store, t: float, *, accounting: float, fraud: float, members: tuple[float, float] = (2, 2)) -> None:
    for group, lag, count in (("accounting", accounting, members[0]), ("fraud-detection", fraud, members[1])):
        feed.gauge(t, "kafka_consumer_group_lag", lag, group=group, topic="orders", partition="0")
        feed.gauge(t, "kafka_consumer_group_lag_sum", lag, group=group, topic="orders")
        feed.gauge(t, "kafka_consumer_group_members", count, group=group)
    feed.gauge(t, "kafka_brokers", 1.0)


def _healthy_lag(t: float) -> float:
    """A group that keeps up: a record or two in flight, and a busy stretch (minutes 4-12) where
    three records are always in flight (at the threshold, not above it)."""
    if 4 * M <= t < 12 * M:
        return 3.0
    return float(int(t / STEP) % 3)


def test_kafka_lag_stays_quiet_while_consumers_keep_up() -> None:
    history = _run(lambda feed, t: _kafka(feed, t, accounting=_healthy_lag(t), fraud=_healthy_lag(t + STEP)))
    assert history == []


def test_kafka_lag_pages_for_a_stopped_consumer_and_names_its_deployment() -> None:
    def scrape(feed: _Store, t: float) -> None:
        # accounting stops at BREAK while an order arrives every 15 s; fraud-detection stops at a
        # quiet moment and stays 4 records behind
        behind = (t - BREAK) // STEP + 1 if t >= BREAK else _healthy_lag(t)
        fraud = 4.0 if t >= BREAK else _healthy_lag(t)
        _kafka(feed, t, accounting=behind, fraud=fraud)

    history = _run(scrape)
    alert = _assert_pages_in_time(history, "KafkaConsumerLagHigh", group="accounting")
    assert alert["labels"]["deployment"] == "accounting" and alert["labels"]["topic"] == "orders"
    assert alert["annotations"]["summary"].startswith("Consumer group accounting lags")
    stuck = _assert_pages_in_time(history, "KafkaConsumerLagHigh", group="fraud-detection")
    assert stuck["labels"]["deployment"] == "fraud-detection" and stuck["value"] == 4.0


# --- Kafka consumer group without members -------------------------------------------------------------------
def test_a_group_with_one_member_left_or_none_known_is_quiet() -> None:
    def scrape(feed: _Store, t: float) -> None:
        # fraud-detection runs on one zone only for minutes 5-15 (the other pod restarting); after
        # minute 16 the broker restarted and lost every group (no series at all)
        if t < 16 * M:
            one_zone = 5 * M <= t < 15 * M
            _kafka(feed, t, accounting=0.0, fraud=0.0, members=(2, 1 if one_zone else 2))

    assert _run(scrape) == []


def test_an_empty_group_pages_and_names_the_consumer_deployment() -> None:
    def scrape(feed: _Store, t: float) -> None:
        _kafka(feed, t, accounting=1.0, fraud=1.0, members=(2, 0 if t >= BREAK else 2))

    history = _run(scrape)
    alert = _assert_pages_in_time(history, "KafkaConsumerGroupNoMembers")
    assert alert["labels"]["deployment"] == alert["labels"]["group"] == "fraud-detection"
    assert _fired(history, "KafkaConsumerLagHigh") == []  # lag stays at 1: not the same alert


# --- PostgreSQL ---------------------------------------------------------------------------------------------
def _postgres(feed: _Store, t: float, up: bool) -> None:
    target = {"namespace": NS, "job": "postgres_exporter", "instance": "postgresql:5432"}
    feed.gauge(t, "pg_up", 1.0 if up else 0.0, **target)
    if up:
        feed.gauge(t, "pg_stat_database_numbackends", 3.0, datname="otel", **target)
        feed.counter(t, "pg_stat_database_xact_rollback", 0.0, datname="otel", **target)


def test_postgres_up_is_quiet() -> None:
    assert _run(lambda feed, t: _postgres(feed, t, up=True)) == []


def test_postgres_down_pages_and_names_the_deployment() -> None:
    history = _run(lambda feed, t: _postgres(feed, t, up=t < BREAK))
    alert = _assert_pages_in_time(history, "PostgresDown")
    assert alert["labels"]["deployment"] == "postgresql"
    assert alert["labels"]["severity"] == "critical"
    assert alert["fired_at"] <= BREAK + M  # for: 30s, as RedisDown


# --- HTTP 5xx of the non-entry HTTP services ----------------------------------------------------------------
def _http(feed: _Store, t: float, service: str, route: str, per_second: float, error_share: float) -> None:
    for status, share in (("200", 1.0 - error_share), ("500", error_share)):
        labels = {"job": service, "service_name": service, "span_name": route, "span_kind": "SPAN_KIND_SERVER",
                  "status_code": "STATUS_CODE_ERROR" if status == "500" else "STATUS_CODE_UNSET",
                  "http_request_method": route.split()[0], "http_response_status_code": status}
        feed.counter(t, "traces_span_metrics_calls_total", per_second * share, **labels)
        for le in ("10", "50", "+Inf"):
            feed.counter(t, "traces_span_metrics_duration_milliseconds_bucket", per_second * share, le=le, **labels)


def _shop(feed: _Store, t: float, *, quote: float, shipping: float, proxy: float = 0.0) -> None:
    """The entry point and three HTTP services; `quote` etc. are the shares of 5xx answers."""
    _http(feed, t, "frontend-proxy", "GET /*", 2.0, proxy)
    _http(feed, t, "shipping", "POST /get-quote", 1.0, shipping)
    _http(feed, t, "quote", "POST /getquote", 1.0, quote)
    _http(feed, t, "email", "POST /send_order_confirmation", 0.25, 0.0)


def test_http_services_with_rare_errors_are_quiet() -> None:
    # quote answers 5xx to 4.5% of requests all along: below the 5% threshold
    history = _run(lambda feed, t: _shop(feed, t, quote=0.045, shipping=0.0))
    assert history == []


def test_http_5xx_pages_on_the_failing_service_and_route_not_on_the_entry_point() -> None:
    def scrape(feed: _Store, t: float) -> None:
        broken = t >= BREAK
        # shipping fails every quote (quote unreachable); quote's errors creep from 4.5% to 5.5%
        _shop(feed, t, quote=0.055 if broken else 0.045, shipping=1.0 if broken else 0.0)

    history = _run(scrape)
    shipping = _assert_pages_in_time(history, "HttpServerErrorRatioHigh", service_name="shipping")
    assert shipping["labels"]["span_name"] == "POST /get-quote"
    _assert_pages_in_time(history, "HttpServerErrorRatioHigh", service_name="quote")
    assert {a["labels"]["service_name"] for a in _fired(history, "HttpServerErrorRatioHigh")} == {"shipping", "quote"}
    # the entry point's rules read frontend-proxy only: a backend HTTP service is not "the frontend"
    assert _fired(history, "FrontendAvailabilityLow") == []


def test_entry_point_5xx_pages_frontend_availability_not_the_backend_rule() -> None:
    history = _run(lambda feed, t: _shop(feed, t, quote=0.0, shipping=0.0, proxy=0.5 if t >= BREAK else 0.0))
    alert = _assert_pages_in_time(history, "FrontendAvailabilityLow")
    assert alert["labels"]["service_name"] == "frontend-proxy"
    assert _fired(history, "HttpServerErrorRatioHigh") == []


# --- failing database statements ------------------------------------------------------------------------
def _statements(feed: _Store, t: float, service: str, per_second: float, error_share: float) -> None:
    for failed, share in ((False, 1.0 - error_share), (True, error_share)):
        labels = {"job": service, "service_name": service, "span_name": "INSERT accounting.order",
                  "span_kind": "SPAN_KIND_CLIENT", "server_address": "postgresql",
                  "status_code": "STATUS_CODE_ERROR" if failed else "STATUS_CODE_UNSET"}
        feed.counter(t, "traces_span_metrics_calls_total", per_second * share, **labels)


def test_rare_failed_statements_are_quiet() -> None:
    assert _run(lambda feed, t: _statements(feed, t, "accounting", 0.4, 0.045)) == []


def test_failing_writes_page_on_the_client_that_makes_them() -> None:
    history = _run(lambda feed, t: _statements(feed, t, "accounting", 0.4, 1.0 if t >= BREAK else 0.0))
    alert = _assert_pages_in_time(history, "DatabaseClientErrorRatioHigh", service_name="accounting")
    assert alert["labels"]["server_address"] == "postgresql"
    # 5.5% of failed statements crosses the 5% threshold as well
    assert _fired(_run(lambda feed, t: _statements(feed, t, "accounting", 0.4, 0.055 if t >= BREAK else 0.0)),
                  "DatabaseClientErrorRatioHigh")


@pytest.mark.parametrize("rule", NEW_RULES)
def test_every_new_rule_cites_why_the_real_system_shows_it(rule: str) -> None:
    source = load_rule_pack("astronomy").rule(rule).annotations["source"]
    assert "src/" in source or "values.yaml" in source


@pytest.mark.skipif(promtool_path() is None, reason="promtool not installed (Debian package 'prometheus')")
def test_promtool_fires_the_new_rules_exactly_as_our_engine(tmp_path) -> None:  # noqa: ANN001
    """Real Prometheus (promtool test rules) on the same series: the same alerts, labels and
    rendered annotations at every evaluation (the label_replace regexes are RE2's as well)."""

    def scrape(feed: _Store, t: float) -> None:
        broken = t >= BREAK
        _kafka(feed, t, accounting=(t - BREAK) // STEP + 1 if broken else _healthy_lag(t), fraud=1.0,
               members=(2, 0 if broken else 2))
        _postgres(feed, t, up=not broken)
        _shop(feed, t, quote=0.045, shipping=1.0 if broken else 0.0, proxy=0.5 if broken else 0.0)
        _statements(feed, t, "accounting", 0.4, 1.0 if broken else 0.0)

    feed = _Store()
    t = 0.0
    while t <= END:
        scrape(feed, t)
        t += STEP
    pack = load_rule_pack("astronomy")
    test = build_unit_test(pack, feed.store, rule_file="astronomy.rules.yaml", start=-5.0, end=END, namespace=NS)
    assert test.errors == []
    assert {name for name, n in test.firing_counts.items() if n} >= set(NEW_RULES) | {"FrontendAvailabilityLow"}
    ok, output = run_promtool(test, pack, tmp_path)
    assert ok, output[:4000]
