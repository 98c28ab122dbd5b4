"""A cluster's SLI from span metrics (backends/kubernetes_sli.py) tracks the twin's own SLI.

The twin runs behind its Prometheus API; `PromQLSli` reads the entry service's span metrics from
it through `prometheus-api-client` exactly as it would from a cluster's Prometheus, and must see
what the twin's load generator saw: the same request rate when healthy, the failed share rising
while redis-cart is down (the cart pages answer 500) and falling after, nothing slow when
healthy. Rates are over one minute, so the comparison is over windows, not tick by tick.
"""

from __future__ import annotations

from statistics import mean
from typing import Any

import pytest

from pytest_marathon.apiserver.prom_format import TWIN_EPOCH_UNIX
from pytest_marathon.apiserver.prometheus import start_prometheus_api
from pytest_marathon.backends import create_backend
from pytest_marathon.backends.kubernetes_sli import PromQLSli

pytest.importorskip("prometheus_api_client", reason="prometheus-api-client is not installed (the `test` extra)")
from pytest_marathon.backends.kubernetes_promql import RemotePromQL  # noqa: E402

OUTAGE = (300.0, 600.0)
END = 900.0


@pytest.fixture(scope="module")
def measured() -> Any:
    twin = create_backend("boutique", 3)
    twin.advance_to(OUTAGE[0])
    handle = twin.chaos_start("datastore_outage", "redis-cart")
    twin.advance_to(OUTAGE[1])
    twin.chaos_stop(handle)
    twin.advance_to(END)
    api = start_prometheus_api(twin, rule_pack_app="boutique")
    try:
        sli = PromQLSli(RemotePromQL(api.url, time_base=float(TWIN_EPOCH_UNIX)), service="frontend",
                        slow_seconds=2.5, tick=5.0)
        yield twin.sli_samples(), sli.samples(None, twin.now), sli
    finally:
        api.close()


def _window(samples: list[Any], low: float, high: float, field: str) -> float:
    return mean(getattr(s, field) for s in samples if low < s.t <= high)


def test_samples_come_every_tick_up_to_the_lag(measured: Any) -> None:
    _twin, cluster, _sli = measured
    times = [s.t for s in cluster]
    assert times[0] == 5.0 and times[-1] == END - 30.0
    assert all(b - a == 5.0 for a, b in zip(times, times[1:]))


def test_the_rate_is_the_load_generators_when_healthy(measured: Any) -> None:
    twin, cluster, _sli = measured
    expected = _window(twin, 60.0, OUTAGE[0], "q")
    assert _window(cluster, 120.0, OUTAGE[0], "q") == pytest.approx(expected, rel=0.1)
    assert _window(cluster, 120.0, OUTAGE[0], "e") < 0.01
    assert _window(cluster, 120.0, OUTAGE[0], "l") == 0.0


def test_an_outage_raises_the_failed_share_as_the_twin_sees_it_and_recovery_lowers_it(measured: Any) -> None:
    twin, cluster, _sli = measured
    during_twin = _window(twin, OUTAGE[0] + 60.0, OUTAGE[1], "e")
    during = _window(cluster, OUTAGE[0] + 60.0, OUTAGE[1], "e")
    assert during_twin > 0.05
    assert during == pytest.approx(during_twin, rel=0.25)
    assert _window(cluster, OUTAGE[1] + 120.0, END - 30.0, "e") < during / 5


def test_nothing_is_reported_before_the_first_tick_or_twice(measured: Any) -> None:
    _twin, cluster, sli = measured
    assert sli.samples(END, END) == []
    later = sli.samples(cluster[-2].t, END)
    assert [s.t for s in later] == [cluster[-1].t]
