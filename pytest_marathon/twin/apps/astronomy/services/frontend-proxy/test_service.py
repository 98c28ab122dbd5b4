"""Pinned against open-telemetry/opentelemetry-demo 2.2.0 src/frontend-proxy/envoy.tmpl.yaml."""

from testing import TestContext, TestHttpError

import service

ENV = {"FRONTEND_HOST": "frontend", "FRONTEND_PORT": "8080", "IMAGE_PROVIDER_HOST": "image-provider",
       "IMAGE_PROVIDER_PORT": "8081", "FLAGD_HOST": "flagd", "FLAGD_PORT": "8013"}


def req(path, method="GET", query=None, body=None):
    return {"method": method, "path": path, "query": query or {}, "params": {}, "body": body, "headers": {}}


def test_forwards_to_frontend_with_query_and_15s():
    ctx = TestContext(env=ENV, http={"GET /api/cart": {"status": 200, "body": {"items": []}}})
    assert service.frontend(ctx, req("/api/cart", query={"sessionId": "u"})) == {"status": 200, "body": {"items": []}}
    assert ctx.requests[0]["url"] == "http://frontend:8080/api/cart?sessionId=u"
    assert ctx.requests[0]["timeout_ms"] == 15000


def test_images_prefix_rewritten():
    ctx = TestContext(env=ENV, http={"GET /products/x.jpg": {"status": 200, "body": ""}})
    service.images(ctx, req("/images/products/x.jpg"))
    assert ctx.requests[0]["url"] == "http://image-provider:8081/products/x.jpg"


def test_refused_is_envoy_503():
    ctx = TestContext(env=ENV, http={"GET /": TestHttpError("refused", "connection refused")})
    reply = service.frontend(ctx, req("/"))
    assert reply["status"] == 503 and reply["body"].endswith("transport failure reason: delayed connect error: 111")
    assert " 503 UF " in ctx.logged("info")[0]


def test_timeout_and_no_host():
    ctx = TestContext(env=ENV, http={"GET /": TestHttpError("timeout", "timeout")})
    assert service.frontend(ctx, req("/")) == {"status": 504, "body": "upstream request timeout"}
    ctx = TestContext(env=ENV, http={"GET /": TestHttpError("nxdomain", "no host")})
    assert service.frontend(ctx, req("/")) == {"status": 503, "body": "no healthy upstream"}


def test_upstream_500_passes_through():
    ctx = TestContext(env=ENV, http={"POST /api/checkout": {"status": 500, "body": "Internal Server Error"}})
    assert service.frontend(ctx, req("/api/checkout", "POST", body={}))["status"] == 500
