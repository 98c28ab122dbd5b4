"""The twin's Online Boutique objects are upstream's manifests (Backend API only).

Pinned against GoogleCloudPlatform/microservices-demo v0.10.6 release/kubernetes-manifests.yaml
(each Deployment, Service and container spec there); the one deliberate extension, the redis
password, against the programs that would have to accept it (src/cartservice/src/Startup.cs,
StackExchange.Redis docs/Configuration.md, redis src/config.c). docs/fidelity.md, "Manifests",
lists the same rows and what the twin leaves out.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from pytest_marathon.backends import create_backend
from pytest_marathon.twin import envvars
from pytest_marathon.twin.engine import Twin

REGISTRY = "us-central1-docker.pkg.dev/online-boutique-ci/microservices-demo/"
SERVICES = ("adservice", "cartservice", "checkoutservice", "currencyservice", "emailservice", "frontend",
            "paymentservice", "productcatalogservice", "recommendationservice", "shippingservice")


@pytest.fixture(scope="module")
def twin() -> Twin:
    backend = create_backend("boutique", seed=5)
    backend.advance_to(180.0)
    return backend


def _container(twin: Twin, deployment: str) -> dict[str, Any]:
    return twin.resources("deployments", deployment)[0]["spec"]["template"]["spec"]["containers"][0]


def test_every_service_container_is_named_server_and_redis_redis(twin: Twin) -> None:
    """release/kubernetes-manifests.yaml: `- name: server` in every service Deployment, `- name:
    redis` in redis-cart; pods, their statuses and the kubelet's events carry that name."""
    names = {dep: _container(twin, dep)["name"] for dep in (*SERVICES, "redis-cart")}
    assert names == {**dict.fromkeys(SERVICES, "server"), "redis-cart": "redis"}
    for pod in twin.resources("pods"):
        expected = "redis" if pod["metadata"]["labels"]["app"] == "redis-cart" else "server"
        assert pod["spec"]["containers"][0]["name"] == expected
        assert pod["status"]["containerStatuses"][0]["name"] == expected
    created = {e["message"] for e in twin.events(limit=10_000) if e["reason"] == "Created"}
    assert created == {"Created container server", "Created container redis"}
    lines = twin.logs(service="cartservice", limit=5)
    assert lines and {line["container"] for line in lines} == {"server"}  # kubectl logs <pod> -c server


def test_container_label_is_server_on_every_cadvisor_and_kube_state_metrics_series(twin: Twin) -> None:
    """cAdvisor and kube-state-metrics label a container by its spec name (`server` upstream),
    never by its deployment: every per-container series of the app's services says `server`."""
    names = [n for n in twin.store.names() if n.startswith(("container_", "kube_pod_container_"))]
    assert {"container_cpu_usage_seconds_total", "container_memory_working_set_bytes",
            "kube_pod_container_status_restarts_total", "kube_pod_container_resource_limits"} <= set(names)
    seen = set()
    for name in names:
        for series in twin.store.series(name):
            app = series.labels["pod"].rsplit("-", 2)[0]
            assert series.labels["container"] == ("redis" if app == "redis-cart" else "server"), (name, series.labels)
            seen.add(app)
    assert set(SERVICES) <= seen


def test_images_are_the_upstream_release_images(twin: Twin) -> None:
    """`image: us-central1-docker.pkg.dev/online-boutique-ci/microservices-demo/<svc>:v0.10.6`;
    redis-cart runs `redis:alpine`."""
    for dep in SERVICES:
        assert _container(twin, dep)["image"] == f"{REGISTRY}{dep}:v0.10.6"
        assert twin.artifact_value(f"image:{dep}") == f"{REGISTRY}{dep}:v0.10.6"
    assert _container(twin, "redis-cart")["image"] == "redis:alpine"


def test_service_and_container_port_names_are_upstreams(twin: Twin) -> None:
    """Service ports are named `http` (frontend, frontend-external), `tcp-redis` (redis-cart) and
    `grpc` (every gRPC service); of the container ports only currencyservice's is named (`grpc`)."""
    names = {s["metadata"]["name"]: s["spec"]["ports"][0].get("name") for s in twin.resources("services")}
    assert names == {"frontend": "http", "frontend-external": "http", "redis-cart": "tcp-redis",
                     **{svc: "grpc" for svc in SERVICES if svc != "frontend"}}
    ports = {dep: _container(twin, dep)["ports"][0] for dep in (*SERVICES, "redis-cart")}
    assert {dep for dep, port in ports.items() if "name" in port} == {"currencyservice"}
    assert ports["currencyservice"]["name"] == "grpc"


def test_probes_are_upstreams(twin: Twin) -> None:
    """shippingservice's readiness probe runs every 5 s (its liveness at the default 10 s);
    redis-cart's liveness has no initialDelaySeconds; the frontend's probes send the
    `shop_session-id` cookie so they never mint a session (frontend handlers use cookieSessionID)."""
    shipping = _container(twin, "shippingservice")
    assert shipping["readinessProbe"]["periodSeconds"] == 5
    assert shipping["livenessProbe"]["periodSeconds"] == 10
    redis = _container(twin, "redis-cart")
    assert "initialDelaySeconds" not in redis["livenessProbe"] and "initialDelaySeconds" not in redis["readinessProbe"]
    frontend = _container(twin, "frontend")
    for kind in ("readiness", "liveness"):
        get = frontend[f"{kind}Probe"]["httpGet"]
        assert get["path"] == "/_healthz"
        assert get["httpHeaders"] == [{"name": "Cookie", "value": f"shop_session-id=x-{kind}-probe"}]


def test_termination_grace_periods_are_upstreams(twin: Twin) -> None:
    """`terminationGracePeriodSeconds: 5` on seven Deployments; frontend, checkoutservice,
    shippingservice and redis-cart set none (the API server's 30 s default)."""
    grace = {p["metadata"]["labels"]["app"]: p["spec"]["terminationGracePeriodSeconds"] for p in twin.resources("pods")}
    short = {"adservice", "cartservice", "currencyservice", "emailservice", "paymentservice",
             "productcatalogservice", "recommendationservice"}
    assert grace == {app: 5 if app in short else 30 for app in (*SERVICES, "redis-cart")}


def test_frontend_env_lists_the_shopping_assistant_address(twin: Twin) -> None:
    """The frontend maps SHOPPING_ASSISTANT_SERVICE_ADDR at start (src/frontend/main.go
    mustMapEnv); the manifest sets it though no such Service is deployed."""
    env = {e["name"]: e.get("value") for e in _container(twin, "frontend")["env"]}
    assert env["SHOPPING_ASSISTANT_SERVICE_ADDR"] == "shoppingassistantservice:80"
    assert "shoppingassistantservice" not in {s["metadata"]["name"] for s in twin.resources("services")}


def test_no_configmap_ships_with_the_app(twin: Twin) -> None:
    """Upstream ships no ConfigMap (nothing in Online Boutique reads feature flags)."""
    assert twin.resources("configmaps") == []
    assert all(twin.flag_readers(name) == [] for name in ("adsEnabled", "recommendationsEnabled"))


def test_load_generator_pays_with_the_upstream_card_number(twin: Twin) -> None:
    """16 digits, no separators: src/frontend/templates/cart.html's default value (its input
    pattern is `\\d{16}`), the form a browser submits."""
    card = twin.spec.load.checkout_form["credit_card_number"]
    assert re.fullmatch(r"\d{16}", card) and card == "4432801561520454"


def test_redis_runs_without_maxmemory(twin: Twin) -> None:
    """Upstream starts `redis:alpine` with no arguments but the password extension, so maxmemory
    keeps redis' default 0 (no limit, redis.conf), which redis_exporter reports as 0."""
    assert "maxmemory" not in twin.spec.deployments["redis-cart"].datastore
    [series] = twin.store.series("redis_memory_max_bytes")
    assert series.values[-1] == 0.0


def test_redis_password_reaches_both_ends_as_their_programs_take_it(twin: Twin) -> None:
    """The extension: redis-server gets `--requirepass $(REDIS_PASSWORD)` in its args; cartservice,
    which reads only REDIS_ADDR (Startup.cs), gets the password as the connection string's
    `password=` option, the Secret reference listed first so `$(REDIS_PASSWORD)` expands."""
    redis = _container(twin, "redis-cart")
    assert redis["args"] == ["--requirepass", "$(REDIS_PASSWORD)"]
    assert [e["name"] for e in redis["env"]] == ["REDIS_PASSWORD"]
    cart = [(e["name"], e.get("value"), "valueFrom" in e) for e in _container(twin, "cartservice")["env"]]
    assert cart == [("REDIS_PASSWORD", None, True), ("REDIS_ADDR", "redis-cart:6379,password=$(REDIS_PASSWORD)", False)]
    assert twin.probe({"kind": "request", "route": "view_cart"})


def test_an_address_without_the_password_option_is_refused_by_redis() -> None:
    """Dropping the option (the upstream value) sends no AUTH: redis answers NOAUTH."""
    backend = create_backend("boutique", seed=6)
    backend.advance_to(60.0)
    backend.release("cartservice", env={"REDIS_ADDR": "redis-cart:6379"}, change_cause="upstream address")
    backend.advance_to(240.0)
    failing = backend.logs(service="cartservice", contains="NOAUTH", limit=5)
    assert failing, "cartservice logs redis' NOAUTH once its new pod serves"


def test_a_replaced_entry_keeps_its_place_so_later_references_still_expand() -> None:
    """`kubectl set env` replaces an entry where it stands: an inlined password still comes before
    REDIS_ADDR, whose `$(REDIS_PASSWORD)` now expands to the literal (redis: WRONGPASS)."""
    backend = create_backend("boutique", seed=7)
    backend.advance_to(60.0)
    backend.release("cartservice", env={"REDIS_PASSWORD": "not-the-password"}, change_cause="inline")
    env = [e["name"] for e in _container(backend, "cartservice")["env"]]
    assert env == ["REDIS_PASSWORD", "REDIS_ADDR"]
    backend.advance_to(240.0)
    assert backend.logs(service="cartservice", contains="WRONGPASS", limit=5)


@pytest.mark.parametrize(
    ("value", "defined", "expected"),
    [
        ("redis-cart:6379,password=$(P)", {"P": "s3cret"}, "redis-cart:6379,password=s3cret"),
        ("$(LATER)", {}, "$(LATER)"),  # not defined before: left as written
        ("$$(P)", {"P": "x"}, "$(P)"),  # escaped
        ("a$$b", {}, "a$b"),
        ("$(P", {"P": "x"}, "$(P"),  # unterminated
        ("cost $5", {}, "cost $5"),
    ],
)
def test_dependent_env_expansion_follows_the_api_rules(value: str, defined: dict[str, str], expected: str) -> None:
    """k8s.io/api core/v1 EnvVar.value: `$(VAR)` of an earlier entry expands, an unresolvable
    reference stays as written, `$$` escapes."""
    assert envvars.expand(value, defined) == expected


def test_only_earlier_literals_expand() -> None:
    """Entries resolve in list order, and Secret data is never expanded."""
    resolved = envvars.resolve(["A", "B", "C"], {"A": "$(B)", "B": "b", "C": "$(A)/$(B)"}, {"A", "B", "C"})
    assert resolved == {"A": "$(B)", "B": "b", "C": "$(B)/b"}
    assert envvars.resolve(["S", "L"], {"S": "$(X)", "L": "$(S)"}, {"L"}) == {"S": "$(X)", "L": "$(X)"}
