"""Pinned against open-telemetry/opentelemetry-demo 2.2.0 src/product-catalog/main.go."""

from testing import TestContext, TestSqlError, raises

import service

ENV = {"DB_CONNECTION_STRING": "postgres://otelu:otelp@postgresql/otel?sslmode=disable",
       "PRODUCT_CATALOG_PORT": "8080"}
ROWS = [
    {"id": "66VCHSJNUP", "name": "Starsense Explorer Refractor Telescope", "description": "d",
     "picture": "StarsenseExplorer.jpg", "price_currency_code": "USD", "price_units": 349,
     "price_nanos": 950000000, "categories": "telescopes"},
    {"id": "OLJCESPC7Z", "name": "National Park Foundation Explorascope", "description": "d",
     "picture": "NationalParkFoundationExplorascope.jpg", "price_currency_code": "USD",
     "price_units": 101, "price_nanos": 960000000, "categories": "telescopes, travel"},
]
REFUSED = TestSqlError("08006", "dial tcp 10.12.0.9:5432: connect: connection refused", kind="refused")


def catalog(rows=ROWS):
    def answer(params):
        return [r for r in rows if not params or r["id"] == params[0]]
    return {"FROM catalog.products": answer}


def test_list_products_reads_the_table_and_logs_the_count():
    ctx = TestContext(env=ENV, sql=catalog())
    products = service.ListProducts(ctx, {})["products"]
    assert [p["id"] for p in products] == ["66VCHSJNUP", "OLJCESPC7Z"]
    assert products[1]["price_usd"] == {"currency_code": "USD", "units": 101, "nanos": 960000000}
    assert products[1]["categories"] == ["telescopes", "travel"]
    assert "ORDER BY p.id" in ctx.statements[0][0]
    assert ctx.logged("info") == ["Found 2 products from database"]


def test_get_product_by_id():
    ctx = TestContext(env=ENV, sql=catalog())
    product = service.GetProduct(ctx, {"id": "66VCHSJNUP"})
    assert product["name"] == "Starsense Explorer Refractor Telescope"
    assert ctx.statements[0][1] == ("66VCHSJNUP",)
    assert ctx.logged("info") == ["Product Found"]


def test_unknown_product_is_not_found():
    ctx = TestContext(env=ENV, sql=catalog())
    with raises(ctx.RpcError) as err:
        service.GetProduct(ctx, {"id": "NOPE"})
    assert (err.value.code, err.value.message) == ("NOT_FOUND", "Product Not Found: NOPE")


def test_database_outage_is_not_found_for_get_product():
    ctx = TestContext(env=ENV, sql={"catalog.products": REFUSED})
    with raises(ctx.RpcError) as err:
        service.GetProduct(ctx, {"id": "66VCHSJNUP"})
    assert (err.value.code, err.value.message) == ("NOT_FOUND", "Product Not Found: 66VCHSJNUP")
    assert ctx.logs == []


def test_database_error_is_internal_for_list_with_the_pq_prefix():
    ctx = TestContext(env=ENV, sql={"catalog.products": TestSqlError(
        "42P01", 'relation "catalog.products" does not exist')})
    with raises(ctx.RpcError) as err:
        service.ListProducts(ctx, {})
    assert err.value.code == "INTERNAL"
    assert err.value.message == ('failed to load products: failed to query products: '
                                 'pq: relation "catalog.products" does not exist')


def test_connection_error_keeps_go_net_wording():
    ctx = TestContext(env=ENV, sql={"catalog.products": REFUSED})
    with raises(ctx.RpcError) as err:
        service.SearchProducts(ctx, {"query": "Scope"})
    assert err.value.message == ("failed to search products: failed to query products: "
                                 "dial tcp 10.12.0.9:5432: connect: connection refused")


def test_search_lowercases_the_pattern():
    ctx = TestContext(env=ENV, sql={"LIKE": ROWS[:1]})
    assert len(service.SearchProducts(ctx, {"query": "Star"})["results"]) == 1
    assert ctx.statements[0][1] == ("%star%",)


def test_failure_flag_only_hits_one_product():
    ctx = TestContext(env=ENV, sql=catalog(), flags={"productCatalogFailure": True})
    with raises(ctx.RpcError) as err:
        service.GetProduct(ctx, {"id": "OLJCESPC7Z"})
    assert (err.value.code, err.value.message) == (
        "INTERNAL", "Error: Product Catalog Fail Feature Flag Enabled")
    assert service.GetProduct(ctx, {"id": "66VCHSJNUP"})["id"] == "66VCHSJNUP"


def test_start_exits_when_the_ping_fails():
    ctx = TestContext(env=ENV, sql={"SELECT 1": REFUSED})
    with raises(ctx.Exit) as err:
        service.init(ctx)
    assert err.value.code == 1
    assert ctx.logged("error") == ["Error initializing database: failed to ping database: "
                                   "dial tcp 10.12.0.9:5432: connect: connection refused"]


def test_start_exits_without_a_connection_string():
    ctx = TestContext(env={})
    with raises(ctx.Exit):
        service.init(ctx)
    assert ctx.logged("error") == [
        "Error initializing database: DB_CONNECTION_STRING environment variable not set"]


def test_start_logs_the_port():
    ctx = TestContext(env=ENV, sql={"SELECT 1": [{"?column?": 1}]})
    service.init(ctx)
    assert ctx.logged("info") == ["Database connection established",
                                  "Product Catalog gRPC server started on port: 8080"]
