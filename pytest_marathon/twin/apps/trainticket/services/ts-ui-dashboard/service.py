"""ts-ui-dashboard: OpenResty (openresty/openresty:trusty, its Dockerfile) serving the UI and proxying the API (FudanSELab/train-ticket
ts-ui-dashboard/nginx.conf: one prefix `location` per API path with `proxy_pass
http://ts-<svc>:<port>`; the longest matching prefix wins, as nginx picks among prefix locations;
anything else is the static UI under `location /`). No proxy timeouts are set, so nginx's 60 s
proxy_read_timeout applies. A failed upstream is nginx's own page: 502 for a refused connect
(`connect() failed (111: Connection refused) while connecting to upstream`), 504 for a read
timeout (`upstream timed out (110: Connection timed out) while reading response header from
upstream`), both logged at [error] (nginx src/http/ngx_http_upstream.c, ngx_http_special_response.c; the version in the page footer is
left out, docs/fidelity.md).
The upstream's own status and body pass through unchanged."""

READ_TIMEOUT_MS = 60000
LOCATIONS = [  # nginx.conf, the API locations
    ("/api/v1/travelservice/trips/left", "ts-travel-service:12346"),
    ("/api/v1/travel2service/trips/left", "ts-travel2-service:16346"),
    ("/api/v1/userservice/users", "ts-user-service:12342"),
    ("/api/v1/users/auth", "ts-auth-service:12340"),
    ("/api/v1/users/login", "ts-auth-service:12340"),
    ("/api/v1/verifycode/generate", "ts-verification-code-service:15678"),
    ("/api/v1/stationservice", "ts-station-service:12345"),
    ("/api/v1/trainservice", "ts-train-service:14567"),
    ("/api/v1/configservice", "ts-config-service:15679"),
    ("/api/v1/securityservice", "ts-security-service:11188"),
    ("/api/v1/executeservice/execute/execute", "ts-execute-service:12386"),
    ("/api/v1/executeservice/execute/collected", "ts-execute-service:12386"),
    ("/api/v1/contactservice/contacts", "ts-contacts-service:12347"),
    ("/api/v1/orderservice/order/refresh", "ts-order-service:12031"),
    ("/api/v1/orderOtherService/orderOther/refresh", "ts-order-other-service:12032"),
    ("/api/v1/preserveservice/preserve", "ts-preserve-service:14568"),
    ("/api/v1/preserveotherservice/preserveOther", "ts-preserve-other-service:14569"),
    ("/api/v1/inside_pay_service/inside_payment", "ts-inside-payment-service:18673"),
    ("/api/v1/rebookservice/rebook", "ts-rebook-service:18886"),
    ("/api/v1/cancelservice/cancel", "ts-cancel-service:18885"),
    ("/api/v1/assuranceservice/assurances/types", "ts-assurance-service:18888"),
    ("/api/v1/travelplanservice/travelPlan/cheapest", "ts-travel-plan-service:14322"),
    ("/api/v1/travelplanservice/travelPlan/quickest", "ts-travel-plan-service:14322"),
    ("/api/v1/travelplanservice/travelPlan/minStation", "ts-travel-plan-service:14322"),
    ("/api/v1/consignservice/consigns", "ts-consign-service:16111"),
    ("/api/v1/foodservice/foods", "ts-food-service:18856"),
    ("/getVoucher", "ts-voucher-service:16101"),
    ("/news-service/news", "ts-news-service:12862"),
    ("/office/getAll", "ts-ticket-office-service:16108"),
    ("/api/v1/adminbasicservice/adminbasic/contacts", "ts-admin-basic-info-service:18767"),
    ("/api/v1/adminbasicservice/adminbasic/stations", "ts-admin-basic-info-service:18767"),
    ("/api/v1/adminbasicservice/adminbasic/trains", "ts-admin-basic-info-service:18767"),
    ("/api/v1/adminbasicservice/adminbasic/prices", "ts-admin-basic-info-service:18767"),
    ("/api/v1/adminbasicservice/adminbasic/configs", "ts-admin-basic-info-service:18767"),
    ("/api/v1/adminorderservice/adminorder", "ts-admin-order-service:16112"),
    ("/api/v1/adminrouteservice/adminroute", "ts-admin-route-service:16113"),
    ("/api/v1/admintravelservice/admintravel", "ts-admin-travel-service:16114"),
    ("/api/v1/adminuserservice/users", "ts-admin-user-service:16115"),
    ("/api/v1/avatar", "ts-avatar-service:17001"),
]


def page(status, title):
    """ngx_http_special_response.c's error page."""
    return ("<html>\r\n<head><title>" + str(status) + " " + title + "</title></head>\r\n<body>\r\n<center><h1>" +
            str(status) + " " + title + "</h1></center>\r\n<hr><center>openresty</center>\r\n</body>\r\n</html>\r\n")


def upstream_of(path):
    best, chosen = -1, None
    for prefix, upstream in LOCATIONS:
        if path.startswith(prefix) and len(prefix) > best:
            best, chosen = len(prefix), upstream
    return chosen


def query_string(query):
    return "?" + "&".join(k + "=" + str(v) for k, v in query.items()) if query else ""


def proxy(ctx, request):
    path = request.get("path", "/")
    upstream = upstream_of(path)
    if upstream is None:
        return {"status": 200, "body": "<!DOCTYPE html><html><head><title>Train Ticket</title></head></html>"}
    method = request.get("method", "GET")
    url = "http://" + upstream + path + query_string(request.get("query"))
    try:
        return ctx.http(method, url, request.get("body"), timeout_ms=READ_TIMEOUT_MS)
    except ctx.HttpError as err:
        where = 'request: "' + method + " " + path + ' HTTP/1.1", upstream: "' + url + '", host: "ts-ui-dashboard:8080"'
        if err.kind == "timeout" or err.kind == "canceled":
            ctx.log("error", "upstream timed out (110: Connection timed out) while reading response header from "
                             "upstream, client: 10.244.0.1, server: localhost, " + where)
            return {"status": 504, "body": page(504, "Gateway Time-out")}
        if err.kind == "reset":
            ctx.log("error", "recv() failed (104: Connection reset by peer) while reading response header from "
                             "upstream, client: 10.244.0.1, server: localhost, " + where)
            return {"status": 502, "body": page(502, "Bad Gateway")}
        ctx.log("error", "connect() failed (111: Connection refused) while connecting to upstream, client: "
                         "10.244.0.1, server: localhost, " + where)
        return {"status": 502, "body": page(502, "Bad Gateway")}
