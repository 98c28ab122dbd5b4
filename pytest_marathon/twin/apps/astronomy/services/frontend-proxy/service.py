"""frontend-proxy: the Envoy entry (routes /images/ to image-provider, /flagservice/ to flagd, the
rest to the frontend).

Upstream: open-telemetry/opentelemetry-demo 2.2.0 src/frontend-proxy/envoy.tmpl.yaml (routes,
prefix rewrites, no retries, no route timeout set so Envoy's 15 s default applies, flagservice
`timeout: 0s`; the OpenTelemetry access log body). Local replies are Envoy's own texts: a refused
connection `upstream connect error or disconnect/reset before headers. reset reason: connection
failure, transport failure reason: delayed connect error: 111` (503, UF), a cluster without a
host `no healthy upstream` (503, UH), the route timeout `upstream request timeout` (504, UT), a
reset `... reset reason: connection termination` (503, UC).
"""

ROUTE_TIMEOUT_MS = 15000  # RouteAction.timeout default


def local_reply(kind):
    """(status, body, response flags, transport failure reason) Envoy answers for a failed upstream."""
    if kind == "refused":
        return (503, "upstream connect error or disconnect/reset before headers. reset reason: connection "
                     "failure, transport failure reason: delayed connect error: 111", "UF",
                "delayed_connect_error:_111")
    if kind == "nxdomain":
        return 503, "no healthy upstream", "UH", "-"
    if kind == "timeout":
        return 504, "upstream request timeout", "UT", "-"
    return (503, "upstream connect error or disconnect/reset before headers. reset reason: connection termination",
            "UC", "-")


def query_string(query):
    if not query:
        return ""
    return "?" + "&".join(f"{name}={value}" for name, value in query.items())


def access_log(ctx, request, status, flags, reason, cluster):
    ctx.log("info", f"\"{request.get('method', 'GET')} {request.get('path', '/')}{query_string(request.get('query'))} "
                    f"HTTP/1.1\" {status} {flags} \"{reason}\" {cluster}")


def forward(ctx, request, cluster, base, path, timeout_ms):
    url = base + path + query_string(request.get("query"))
    try:
        resp = ctx.http(request.get("method", "GET"), url, request.get("body"), timeout_ms=timeout_ms)
    except ctx.HttpError as err:
        status, body, flags, reason = local_reply(err.kind)
        access_log(ctx, request, status, flags, reason, cluster)
        return {"status": status, "body": body}
    access_log(ctx, request, resp["status"], "-", "-", cluster)
    return resp


def strip_prefix(path, prefix):
    """prefix_rewrite: "/" for the matched prefix."""
    return "/" + path[len(prefix):]


def images(ctx, request):
    base = f"http://{ctx.env('IMAGE_PROVIDER_HOST')}:{ctx.env('IMAGE_PROVIDER_PORT')}"
    return forward(ctx, request, "image-provider", base, strip_prefix(request.get("path", "/images/"), "/images/"),
                   ROUTE_TIMEOUT_MS)


def flagservice(ctx, request):
    base = f"http://{ctx.env('FLAGD_HOST')}:{ctx.env('FLAGD_PORT')}"
    return forward(ctx, request, "flagservice", base,
                   strip_prefix(request.get("path", "/flagservice/"), "/flagservice/"), None)


def frontend(ctx, request):
    base = f"http://{ctx.env('FRONTEND_HOST')}:{ctx.env('FRONTEND_PORT')}"
    return forward(ctx, request, "frontend", base, request.get("path", "/"), ROUTE_TIMEOUT_MS)
