"""What an HTTP client library prints when a request gets no response, by the caller's language.

- go (net/http, `*url.Error`): `Post "http://shipping:8080/get-quote": dial tcp 10.12.0.14:8080:
  connect: connection refused` — the method in Go's capitalisation, the quoted URL, then the
  net.OpError (golang/go src/net/url/url.go `(*Error).Error`, src/net/net.go `(*OpError).Error`);
  an unresolvable host `dial tcp: lookup <host> on 10.96.0.10:53: no such host` (src/net/net.go
  `DNSError`); an ended request context `context canceled` / `context deadline exceeded`.
- nodejs (undici `fetch`, the Next.js frontend's shipping gateway): the rejection is
  `TypeError: fetch failed` whose `cause` carries the socket error (`connect ECONNREFUSED
  <ip>:<port>`, `getaddrinfo ENOTFOUND <host>`); Node prints the cause after the message.
- rust (awc 3, the shipping service's quote client): `awc::error::SendRequestError` Display,
  `Failed to connect to host: Connection refused (os error 111)`, `Failed resolving hostname:
  ...`, `Timeout while waiting for response` (actix/actix-web `awc/src/error.rs`).
- java (Spring 4.3 `RestTemplate` over the JDK 8 `HttpURLConnection`, Train Ticket's services):
  `RestTemplate.doExecute` wraps the IOException in `ResourceAccessException("I/O error on <METHOD>
  request for \"<url>\": <message>")`, whose `NestedRuntimeException` message appends `; nested
  exception is <cause>` (spring-projects/spring-framework 4.3.x `web/client/RestTemplate.java`,
  `core/NestedExceptionUtils.java`); JDK 8 words a refused connect `Connection refused (Connection
  refused)`, an unknown host by its name (`java.net.UnknownHostException`), a timeout `Read timed
  out`, a reset `Connection reset`.
- envoy: the proxy answers the client itself (503/504 bodies, `twin/apps/astronomy/services/
  frontend-proxy`); the text here is its upstream reset reason.
"""

from __future__ import annotations

from urllib.parse import urlsplit

DNS_SERVER = "10.96.0.10:53"  # kube-dns' ClusterIP in a kind cluster


def _go_method(method: str) -> str:
    return method[:1].upper() + method[1:].lower()


def failure(client: str, kind: str, method: str, url: str, ip: str = "", port: int = 0) -> str:
    """The message `client`'s library gives for a request that failed with `kind`."""
    host = urlsplit(url).hostname or ""
    if client == "go":
        detail = {
            "refused": f"dial tcp {ip}:{port}: connect: connection refused",
            "nxdomain": f"dial tcp: lookup {host} on {DNS_SERVER}: no such host",
            "timeout": f"dial tcp {ip}:{port}: i/o timeout",
            "reset": f"read tcp {ip}:{port}: read: connection reset by peer",
            "canceled": "context canceled",
        }[kind]
        return f'{_go_method(method)} "{url}": {detail}'
    if client == "nodejs":
        cause = {
            "refused": f"connect ECONNREFUSED {ip}:{port}",
            "nxdomain": f"getaddrinfo ENOTFOUND {host}",
            "timeout": "Connect Timeout Error",
            "reset": "other side closed",
            "canceled": "This operation was aborted",
        }[kind]
        return f"fetch failed (cause: {cause})"
    if client == "rust":
        return {
            "refused": "Failed to connect to host: Connection refused (os error 111)",
            "nxdomain": "Failed to connect to host: Failed resolving hostname: failed to lookup address information: Name does not resolve",
            "timeout": "Timeout while waiting for response",
            "reset": "Failed to connect to host: Connection reset by peer (os error 104)",
            "canceled": "Timeout while waiting for response",
        }[kind]
    if client == "java":
        cause = {
            "refused": "java.net.ConnectException: Connection refused (Connection refused)",
            "nxdomain": f"java.net.UnknownHostException: {host}",
            "timeout": "java.net.SocketTimeoutException: Read timed out",
            "reset": "java.net.SocketException: Connection reset",
            "canceled": "java.net.SocketTimeoutException: Read timed out",
        }[kind]
        detail = cause.split(": ", 1)[1]
        return (f'org.springframework.web.client.ResourceAccessException: I/O error on {method.upper()} request for '
                f'"{url}": {detail}; nested exception is {cause}')
    if client == "envoy":
        return {
            "refused": "upstream connect error or disconnect/reset before headers. reset reason: connection failure, "
                       "transport failure reason: delayed connect error: 111",
            "nxdomain": "no healthy upstream",
            "timeout": "upstream request timeout",
            "reset": "upstream connect error or disconnect/reset before headers. reset reason: connection termination",
            "canceled": "upstream request timeout",
        }[kind]
    return failure("go", kind, method, url, ip, port)
