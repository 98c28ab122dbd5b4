"""The status texts a gRPC call fails with, as the caller's and the callee's gRPC libraries word them.

The Online Boutique's gRPC clients are grpc-go (frontend, checkoutservice) and grpcio, the Python
wrapper of gRPC C-core (recommendationservice). Connection failures are worded by the client's
library; an unknown service or method by the server's. Texts are verbatim from:

* grpc-go v1.82.0 (the version in upstream ``src/frontend/go.mod``): ``ConnectionError.Error``
  (``connection error: desc = %q``) and ``transport: Error while dialing: %v`` in
  ``internal/transport``; ``name resolver error: produced zero addresses`` in
  ``balancer/pickfirst/pickfirst.go`` (the DNS resolver drops NXDOMAIN, ``handleDNSError`` in
  ``internal/resolver/dns/dns_resolver.go``, so the balancer sees zero addresses);
  ``error reading from server: EOF`` in ``http2_client.go``; ``unknown service %v`` and
  ``unknown method %v for service %v`` in ``server.go``.
* gRPC C-core (grpcio): ``failed to connect to all addresses; last error: UNKNOWN: ipv4:IP:PORT:
  Failed to connect to remote host: connect: Connection refused (111)``; the c-ares resolver's
  ``DNS resolution failed for HOST:PORT: C-ares status is not ARES_SUCCESS qtype=A name=HOST
  is_balancer=0: Domain name not found``; ``Method not found!`` (``grpc/_server.py``).
* grpc-js (``server.ts``): ``The server does not implement the method /SERVICE/METHOD``.
* grpc-js as a client (the OpenTelemetry demo's Next.js frontend, grpc-js 1.12): a refused dial is
  ``No connection established. Last error: connect ECONNREFUSED IP:PORT`` (``subchannel.ts``,
  ``load-balancer-pick-first.ts``; the library appends the time of the error, which the twin
  leaves out), an unresolvable name ``Name resolution failed for target dns:HOST:PORT``
  (``resolver-dns.ts``), a dial nothing answers ``... Last error: connect ETIMEDOUT IP:PORT``
  (Node's socket error), a dropped connection ``Connection dropped``, an ended call ``Deadline
  exceeded`` / ``Cancelled on client`` (``call-interface.ts``, ``deadline.ts``).
* ASP.NET Core gRPC (``ServerCallHandlerFactory``): ``Service is unimplemented.``
* grpc-java (``ServerImpl``): ``Method not found: SERVICE/METHOD``.

Go's net package prints the dialled address, which is the Service's ClusterIP and port (the DNS
answer for ``name:port``), not the pod behind it.
"""

from __future__ import annotations

# grpc-go's default minimum connect timeout (clientconn.go `minConnectTimeout`); a dial nothing
# answers (a blackholed ClusterIP port, a dead node) fails after it.
CONNECT_TIMEOUT_MS = 20_000.0

#: The address-free words that name a failed dial in each client's text, by failure (`refused`,
#: `nxdomain`, `timeout`: nothing answers) and client (`go`, `python`, and `redis` for
#: StackExchange.Redis): what a search of the caller's log for that failure matches. The texts
#: below are built around them.
DIAL_WORDS: dict[str, dict[str, str]] = {
    "refused": {"go": "connection refused", "python": "Connection refused", "redis": "Connection refused",
                "nodejs": "ECONNREFUSED"},
    "nxdomain": {"go": "produced zero addresses", "python": "DNS resolution failed",
                 "redis": "Name or service not known", "nodejs": "Name resolution failed"},
    "timeout": {"go": "i/o timeout", "python": "Timeout occurred", "redis": "ConnectTimeout",
                "nodejs": "ETIMEDOUT"},
}


def _go_dial(detail: str) -> str:
    return f'connection error: desc = "transport: Error while dialing: {detail}"'


def _c_core_connect(ip: str, port: int, detail: str) -> str:
    return (f"failed to connect to all addresses; last error: UNKNOWN: ipv4:{ip}:{port}: "
            f"Failed to connect to remote host: {detail}")


def refused(client: str, ip: str, port: int) -> str:
    if client == "nodejs":
        return f"No connection established. Last error: connect {DIAL_WORDS['refused']['nodejs']} {ip}:{port}"
    if client == "python":
        return _c_core_connect(ip, port, f"connect: {DIAL_WORDS['refused']['python']} (111)")
    return _go_dial(f"dial tcp {ip}:{port}: connect: {DIAL_WORDS['refused']['go']}")


def dial_timeout(client: str, ip: str, port: int) -> str:
    if client == "nodejs":
        # Node's socket error when nothing answers the SYN (not verified against grpc-js 1.12's
        # connect timeout, which may end the attempt first with the same wording)
        return f"No connection established. Last error: connect {DIAL_WORDS['timeout']['nodejs']} {ip}:{port}"
    if client == "python":
        return _c_core_connect(ip, port, f"{DIAL_WORDS['timeout']['python']}: FD Shutdown")
    return _go_dial(f"dial tcp {ip}:{port}: {DIAL_WORDS['timeout']['go']}")


def no_such_host(client: str, host: str, addr: str) -> str:
    if client == "nodejs":
        return f"{DIAL_WORDS['nxdomain']['nodejs']} for target dns:{addr}"
    if client == "python":
        return (f"{DIAL_WORDS['nxdomain']['python']} for {addr}: C-ares status is not ARES_SUCCESS qtype=A "
                f"name={host} is_balancer=0: Domain name not found")
    return f"name resolver error: {DIAL_WORDS['nxdomain']['go']}"


def redis_unable_to_connect(endpoint: str, failure: str) -> str:
    """StackExchange.Redis (cartservice, `src/cartservice/src/cartstore/RedisCartStore.cs`): a failed
    connect is `UnableToConnect on <endpoint>/Interactive`, then the socket error .NET gives on Linux
    for `failure` (a `DIAL_WORDS` kind)."""
    return ("It was not possible to connect to the redis server(s). "
            f"UnableToConnect on {endpoint}/Interactive, {DIAL_WORDS[failure]['redis']}")


def server_died(client: str) -> str:
    if client == "python":
        return "Socket closed"
    if client == "nodejs":
        return "Connection dropped"
    return "error reading from server: EOF"


def deadline(client: str) -> str:
    if client == "nodejs":
        return "Deadline exceeded"
    return "Deadline Exceeded" if client == "python" else "context deadline exceeded"


def canceled(client: str) -> str:
    if client == "nodejs":
        return "Cancelled on client"
    return "Cancelled" if client == "python" else "context canceled"


def unimplemented(server: str, rpc_service: str, method: str, served: str) -> str:
    """The callee's answer to a method it does not serve. `served` is the gRPC service the pod
    actually registers (a sibling's image serves another one)."""
    full = f"/{rpc_service}/{method}"
    if server == "go":
        if served != rpc_service:
            return f"unknown service {rpc_service}"
        return f"unknown method {method} for service {rpc_service}"
    if server == "nodejs":
        return f"The server does not implement the method {full}"
    if server == "csharp":
        return "Service is unimplemented."
    if server == "java":
        return f"Method not found: {rpc_service}/{method}"
    return "Method not found!"
