"""Each Online Boutique service passes lint and its own unit tests inside the sandbox, and the
services compose along the real call graph when wired through a minimal in-process router."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_marathon.twin.sandbox import (
    TestContext,
    compile_service,
    lint,
    run_unit_tests,
)

SERVICES_DIR = Path(__file__).resolve().parents[1] / "pytest_marathon/twin/apps/boutique/services"
SERVICES = ["adservice", "cartservice", "checkoutservice", "currencyservice", "emailservice",
            "frontend", "paymentservice", "productcatalogservice", "recommendationservice",
            "shippingservice"]


def service_files(name: str) -> dict[str, str]:
    folder = SERVICES_DIR / name
    return {path.name: path.read_text() for path in sorted(folder.iterdir()) if path.is_file()
            and path.suffix in {".py", ".json", ".html"}}


@pytest.mark.parametrize("name", SERVICES)
def test_service_lints_clean(name):
    assert lint(name, service_files(name)) == []


@pytest.mark.parametrize("name", SERVICES)
def test_service_unit_tests_pass_in_the_sandbox(name):
    report = run_unit_tests(name, service_files(name))
    assert report.failures == []
    assert report.passed >= 3


def test_a_patch_that_breaks_a_unit_test_is_reported_with_its_line():
    files = service_files("paymentservice")
    files["service.py"] = files["service.py"].replace('return "visa"', 'return "visa card"')
    report = run_unit_tests("paymentservice", files)
    assert report.failed >= 1
    assert any("paymentservice/" in failure for failure in report.failures)


def test_lint_reports_undefined_names_and_unused_imports():
    files = service_files("shippingservice")
    files["service.py"] = "import json\n" + files["service.py"].replace(
        "count = count + item", "count = cuont + item")
    problems = lint("shippingservice", files)
    assert any("undefined name 'cuont'" in p for p in problems)
    assert any("'json' imported but unused" in p for p in problems)


class Router:
    """Dispatches ctx.call to service instances by host (the engine's job, reduced to a dict)."""

    def __init__(self, env: dict[str, str]):
        self.instances = {name: compile_service(name, service_files(name)).instantiate()
                          for name in SERVICES}
        self.env = env
        self.store = TestContext().datastore("redis-cart:6379")
        self.logs: list[tuple[str, str, str]] = []

    def ctx(self, service: str):
        router = self

        class Ctx(TestContext):
            def call(self, addr, method, request, timeout_ms=None):
                host = addr.split(":")[0]
                return router.instances[host].handle(method, router.ctx(host), request)

            def datastore(self, addr, password=None):
                return router.store

            def log(self, level, message):
                router.logs.append((service, level, message))

        return Ctx(env=self.env, request_id="r-1")


def test_checkout_flows_through_the_real_call_graph():
    env = {"PRODUCT_CATALOG_SERVICE_ADDR": "productcatalogservice:3550",
           "CURRENCY_SERVICE_ADDR": "currencyservice:7000", "CART_SERVICE_ADDR": "cartservice:7070",
           "RECOMMENDATION_SERVICE_ADDR": "recommendationservice:8080",
           "SHIPPING_SERVICE_ADDR": "shippingservice:50051",
           "CHECKOUT_SERVICE_ADDR": "checkoutservice:5050", "AD_SERVICE_ADDR": "adservice:9555",
           "PAYMENT_SERVICE_ADDR": "paymentservice:50051", "EMAIL_SERVICE_ADDR": "emailservice:5000",
           "REDIS_ADDR": "redis-cart:6379"}
    router = Router(env)
    frontend = router.instances["frontend"]
    frontend.handle("add_to_cart", router.ctx("frontend"),
                    {"session_id": "s1", "product_id": "OLJCESPC7Z", "quantity": "2"})
    page = frontend.handle("view_cart", router.ctx("frontend"), {"session_id": "s1", "currency": "EUR"})
    assert page["total"]["currency_code"] == "EUR"
    order = frontend.handle("checkout", router.ctx("frontend"), {
        "session_id": "s1", "currency": "USD", "email": "someone@example.com",
        "street_address": "1600 Amphitheatre Parkway", "zip_code": "94043",
        "city": "Mountain View", "state": "CA", "country": "United States",
        "credit_card_number": "4432801561520454", "credit_card_expiration_month": "1",
        "credit_card_expiration_year": "2039", "credit_card_cvv": "672"})
    # 2 x 19.99 + 8.99 shipping
    assert order["total"] == {"currency_code": "USD", "units": 48, "nanos": 970000000}
    assert ("paymentservice", "info",
            "Transaction processed: visa ending 0454 Amount: USD48.970000000") in router.logs
    cart = router.instances["cartservice"].handle("GetCart", router.ctx("cartservice"),
                                                  {"user_id": "s1"})
    assert cart["items"] == []
