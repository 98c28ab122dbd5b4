"""Calls to another Thrift service as socialNetwork's C++ clients make them (app.yaml `shared_code`:
built into every service that calls one, as upstream's shared sources are). ClientPool::Pop (DeathStarBench socialNetwork/src/ClientPool.h) connects a
pooled TSocket; a failed connect logs `Failed to connect <client type>` and rethrows Thrift's
TTransportException, which no handler catches: it leaves the server as a TApplicationException with
the same text (apache/thrift lib/cpp/src/thrift/transport/TSocket.cpp: `connect() failed` with the
errno's text, `Could not resolve host for client socket.`; a read past the client's timeout
`THRIFT_EAGAIN (timed out)`). A callee's own exception (a ServiceException) is caught by the
handler's `catch (...)`, which logs its line and rethrows it unchanged.

Thrift's server catches what a handler throws and answers with it, the process lives on; service
code says so with `ctx.fail("UNKNOWN", <message>)` (a raised exception would be an uncaught C++
exception, `terminate called`, in the twin)."""

REFUSED = "connect() failed: Connection refused"
NO_HOST = "Could not resolve host for client socket."
TIMED_OUT = "THRIFT_EAGAIN (timed out)"


def call(ctx, address_env, client_type, method, request, failed_log=""):
    try:
        return ctx.call(ctx.env(address_env), method, request)
    except ctx.RpcError as err:
        if err.code == "UNAVAILABLE":
            ctx.log("error", "Failed to connect " + client_type)
            ctx.fail("UNKNOWN", NO_HOST if "no such host" in err.message else REFUSED)
        if failed_log:
            ctx.log("error", failed_log)
        if err.code == "DEADLINE_EXCEEDED":
            ctx.fail("UNKNOWN", TIMED_OUT)
        ctx.fail("UNKNOWN", err.message)
