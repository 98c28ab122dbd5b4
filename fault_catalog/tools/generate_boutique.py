"""Write the templated Online Boutique catalog entries (configuration, deployment, dependency,
infrastructure, database/network, authentication) from the app definition.

Run from the repository root: `python fault_catalog/tools/generate_boutique.py`. It rewrites only
files it generates (their ids start with a category prefix and it keeps a manifest of them); code
faults are written by hand next to their patches and never touched. Each template yields a
distinct real fault: a different setting, service or service pair, not a re-labelled copy. The
measured `scope` of an existing file is kept, so admission results survive regeneration.
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import yaml
from catalog_common import entry_text, experiment, next_patch, restart, rollback
from twin_knowledge import dial_words, startup_failure, warned_calls

from pytest_marathon.twin.errors import go_code_name

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "pytest_marathon" / "twin" / "apps" / "boutique" / "app.yaml"
OUT = ROOT / "fault_catalog" / "boutique"
MANIFEST = OUT / "generated.txt"

# The user-facing request that exercises each service (frontend route names from app.yaml).
ROUTE_OF = {
    "frontend": "home",
    "productcatalogservice": "product",
    "currencyservice": "home",
    "cartservice": "view_cart",
    "recommendationservice": "view_cart",
    "shippingservice": "view_cart",
    "checkoutservice": "checkout",
    "paymentservice": "checkout",
    "emailservice": "checkout",
    "adservice": "home",
    "redis-cart": "view_cart",
}
# Services whose failure the frontend tolerates (it logs and renders the page without them), so
# their symptom is checked with a direct call instead of a page.
RPC_PROBE = {
    "adservice": ("GetAds", {"context_keys": ["clothing"]}),
    "recommendationservice": ("ListRecommendations", {"user_id": "synthetic-check", "product_ids": []}),
    "emailservice": (
        "SendOrderConfirmation",
        {
            "email": "someone@example.com",
            "order": {
                "order_id": "9f2c",
                "shipping_tracking_id": "KQ-1-2",
                "shipping_cost": {"currency_code": "USD", "units": 8, "nanos": 990000000},
                "shipping_address": {
                    "street_address": "1600 Amphitheatre Parkway",
                    "city": "Mountain View",
                    "country": "United States",
                    "zip_code": 94043,
                },
                "items": [
                    {
                        "item": {"product_id": "6E92ZMYYFZ", "quantity": 1},
                        "cost": {"currency_code": "USD", "units": 8, "nanos": 990000000},
                    }
                ],
            },
        },
    ),
}


# Callees whose failure their callers only log as a warning (ads on a page, recommendations on
# the product and cart pages - src/frontend/handlers.go "not critical" -, the confirmation email
# after an order): a wrong address to them is not an observable fault. The callers' modules name
# them (`WARNED_CALLS`).


def tolerated(app: dict[str, Any]) -> set[str]:
    """The services some caller only warns about when a call to them fails."""
    return {
        dep["env"][var].split(":")[0]
        for svc, dep in app["deployments"].items()
        if dep.get("kind") != "datastore"
        for var in warned_calls(svc)
    }


# Busiest request paths, where packet loss and a partition show at the entry point. Not
# paymentservice: only checkouts reach it and checkoutservice returns the failed charge unlogged,
# so its losses stay under admission's screening rates.
LOSSY = {
    "productcatalogservice",
    "currencyservice",
    "cartservice",
    "checkoutservice",
    "shippingservice",
}
PARTITIONS = [
    ("frontend", "cartservice"),
    ("checkoutservice", "paymentservice"),
    ("recommendationservice", "productcatalogservice"),
]
# Pairs whose callee has other callers, so the delay is on one path only. Without deadlines on
# the shop's calls a delay on one path only slows pages (no error, no restart), which admission's
# screening does not accept: not generated.
WITH_PAIR_LATENCY = False
LATENCY_PAIRS = [
    ("frontend", "productcatalogservice"),
    ("checkoutservice", "currencyservice"),
    ("frontend", "cartservice"),
]
# Services whose CPU starvation is admitted. A hog: not the ads (the frontend's ad call times out
# without a server error), not recommendations (a slow or failed call is only a warning on the
# page) nor the entry point (nothing calls it with a deadline, no error shows).
CPU_HOG_TARGETS = {
    "cartservice",
    "checkoutservice",
    "currencyservice",
    "emailservice",
    "paymentservice",
    "productcatalogservice",
    "shippingservice",
}
# A limit cut below the load starves only what the load keeps busy. The kubelet never sets a CFS
# quota under 10m (MilliCPUToQuota), so a mistyped 2m runs as 10m: only a service whose load
# exceeds that (productcatalogservice, ~17m at 10 users) is starved; cart, currency,
# recommendation and shipping (2-10m) are not, and checkout, payment and email serve the
# checkout share alone, so they are left out.
CPU_LIMIT_TARGETS = {
    "productcatalogservice",
}
# Only pods whose restart lands on a healthy node and heals the symptom (admission-checked).
NODE_TARGETS = ["checkoutservice"]
# A one-shot pod kill heals within seconds, so the experiment kills one pod every minute while it
# lasts (the service flaps); a second replica rides it out. Rejected by admission and left out:
# ads, recommendations and the confirmation email (their callers only warn: no screening
# criterion), checkout and
# payment (only the checkout share of the load reaches them: 1.4 and 2.8 errors/min, under the 4
# the screening asks), and the frontend (no workload calls it, so no caller logs its absence).
POD_KILL_TARGETS = {
    "cartservice",
    "currencyservice",
    "productcatalogservice",
    "shippingservice",
}


def probe_for(service: str, signature: list[str]) -> dict[str, Any]:
    """The request that exercises `service`, failing only on THIS fault's evidence (the lines a
    probe reads are in `pytest_marathon.twin.probes`): another live fault on the same path must
    not keep it failing once this one is repaired."""
    if service in RPC_PROBE:
        return direct_call(service, *RPC_PROBE[service], signature)
    return {"kind": "request", "route": ROUTE_OF[service], "signature": signature}


def direct_call(
    service: str, method: str, request: dict[str, Any], signature: list[str] | None = None
) -> dict[str, Any]:
    """A call straight to the service that holds the fault: a page request makes other calls
    first (the product lookup before a cart write), and a fault elsewhere on that path would fail
    the page before this fault's symptom could show."""
    probe = {"kind": "rpc", "service": service, "method": method, "request": request}
    return probe if signature is None else probe | {"signature": signature}


CART_READ = ("GetCart", {"user_id": "synthetic-check"})
CART_WRITE = ("AddItem", {"user_id": "synthetic-check", "item": {"product_id": "OLJCESPC7Z", "quantity": 1}})


def dialled(caller: str, address: str, datastore: bool) -> list[str]:
    """The evidence of a call from `caller` to exactly `address` failing: a redis client reports
    the address it could not reach, a gRPC client span names the address it dialled."""
    if datastore:
        return [f"UnableToConnect on {address}/"]
    return [f"{caller} -> {address}:"]


class Writer:
    def __init__(self, scopes: dict[str, list[str]]) -> None:
        self.written: list[str] = []
        self.scopes = scopes

    def entry(
        self, entry_id: str, body: dict[str, Any], chaos: dict[str, Any] | None = None
    ) -> None:
        path = OUT / f"{entry_id}.yaml"
        if chaos is not None:
            exp_path = OUT / "experiments" / f"{entry_id}.json"
            exp_path.write_text(json.dumps(chaos, indent=2, sort_keys=True) + "\n")
            body["injection"] = {"experiment": f"experiments/{entry_id}.json"}
        path.write_text(entry_text({"id": entry_id, **body}, self.scopes.get(entry_id)))
        self.written.append(entry_id)


def setting_base(
    caller: str, var: str, host: str, store: bool, new_value: str, *extra: str
) -> dict[str, Any]:
    """Fields shared by the faults of one `*_ADDR` setting: the request that goes through it,
    failing on a dial of the new value."""
    probe = probe_for(
        host if caller == "frontend" else caller, dialled(caller, new_value, store) + list(extra)
    )
    return {
        "category": "configuration",
        "mechanism": "change",
        "target": caller,
        "culprits": [caller],
        "probe": probe | ({"currency": "EUR"} if host == "currencyservice" else {}),
        "artifact": f"env:{caller}/{var}",
        "aliases": [],
    }


def address_of(app: dict[str, Any], service: str) -> str:
    """How callers dial `service` (host:port of its Service); the probe's own call uses it too."""
    for dep in app["deployments"].values():
        for var, value in dep.get("env", {}).items():
            if var.endswith("_ADDR") and value.split(":")[0] == service:
                return str(value)
    return f"{service}:{app['deployments'][service]['port']}"


def callers_of(app: dict[str, Any]) -> dict[str, list[tuple[str, str]]]:
    """callee -> [(caller, env var)] from the *_ADDR settings in the manifests."""
    out: dict[str, list[tuple[str, str]]] = {}
    for caller, dep in app["deployments"].items():
        for var, value in sorted(dep.get("env", {}).items()):
            if var.endswith("_ADDR") and ":" in value:
                out.setdefault(value.split(":")[0], []).append((caller, var))
    return out


def caller_of(callers: dict[str, list[tuple[str, str]]], svc: str) -> str:
    """The first service that dials `svc` (itself when nothing does, as for the entry point)."""
    return callers.get(svc, [(svc, "")])[0][0]


def unlogged_calls(app: dict[str, Any]) -> dict[str, set[str]]:
    """Callers that hand a dependency's error back without logging it -> the callees they log
    anyway (as warnings): the gRPC services that call other gRPC services return a failed call's
    error to their own caller (upstream checkoutservice main.go PlaceOrder returns the wrapped
    error and only warns about the confirmation email; recommendationservice raises), so the
    entry point's log is where it shows."""
    deps = app["deployments"]
    out: dict[str, set[str]] = {}
    for caller, dep in sorted(deps.items()):
        callees = {v.split(":")[0] for k, v in dep.get("env", {}).items() if k.endswith("_ADDR") and ":" in v}
        if dep.get("kind") == "grpc" and any(deps.get(c, {}).get("kind") == "grpc" for c in callees):
            out[caller] = {dep["env"][var].split(":")[0] for var in warned_calls(caller)}
    return out


APP_DOC = yaml.safe_load(APP.read_text())
# a refused dial as the log reading it words it: the frontend's and checkoutservice's grpc-go
REFUSED = dial_words("refused", "go")
TOLERATED = tolerated(APP_DOC)
UNLOGGED_CALLS = unlogged_calls(APP_DOC)


# What the reporter's log shows of a failed call when the caller drops the RPC error from its
# message (main.go prepOrderItems: `failed to get product #%q`, `failed to convert price of %q`).
CAUSE_DROPPED = {
    ("checkoutservice", "productcatalogservice"): "failed to get product #",
    ("checkoutservice", "currencyservice"): "failed to convert price of",
}


def reported(caller: str, callee: str, message: str) -> str:
    """The text `reporter(caller, callee)` logs for a failed call whose error reads `message`."""
    return CAUSE_DROPPED.get((caller, callee), message)


def failed_call_log(caller: str, callee: str, message: str) -> tuple[str, str]:
    """(service, text) of the log line that shows `caller`'s failed call to `callee`."""
    return reporter(caller, callee), reported(caller, callee, message)


def reporter(caller: str, callee: str) -> str:
    """The service whose log shows `caller`'s failed call to `callee`."""
    if caller in UNLOGGED_CALLS and callee not in UNLOGGED_CALLS[caller]:
        return "frontend"
    return caller


def configuration(w: Writer, app: dict[str, Any]) -> None:
    deps = app["deployments"]
    for caller, dep in sorted(deps.items()):
        for var, value in sorted(dep.get("env", {}).items()):
            if not var.endswith("_ADDR") or ":" not in value:
                continue
            # a redis address is a StackExchange.Redis configuration string: the endpoint, then
            # options (the password) that a changed host or port leaves as they were
            endpoint, comma, options = value.partition(",")
            host, port = endpoint.split(":")
            suffix = comma + options
            short = var.removesuffix("_ADDR").lower().replace("_", "-")
            # a service the manifests do not deploy (upstream's optional shopping assistant):
            # nothing dials it on the paths the probes and the load take
            if host in TOLERATED or host not in deps:
                continue
            store = deps.get(host, {}).get("kind") == "datastore"

            base = partial(setting_base, caller, var, host, store)

            dashed = host.replace("service", "-service") if "service" in host else f"{host}-primary"
            emitter = reporter(caller, host)
            client = "redis" if store else deps[caller].get("language", "go")
            w.entry(
                f"cfg-host-{caller}-{short}",
                {
                    **base(f"{dashed}:{port}"),
                    "log": {"service": emitter, "message": reported(caller, host, dial_words("nxdomain", client))},
                    "change_cause": f"Point {var} at the {dashed} alias from the service naming cleanup",
                    "injection": {"env": {var: f"{dashed}:{port}{suffix}"}},
                    "recovery": f"Restore {var}={value}",
                    "remedy": rollback(caller),
                },
            )
            w.entry(
                f"cfg-port-{caller}-{short}",
                {
                    **base(f"{host}:{int(port) + 1}"),
                    "log": {"service": emitter, "message": reported(caller, host, dial_words("timeout", client))},
                    "change_cause": f"Use the new {host} port in {var}",
                    "injection": {"env": {var: f"{host}:{int(port) + 1}{suffix}"}},
                    "recovery": f"Restore {var}={value}",
                    "remedy": rollback(caller),
                },
            )
            # an empty address stops the process at start (mustMapEnv in frontend and checkout,
            # recommendationservice's __main__); the new pod crash-loops while the old one serves.
            # cartservice without REDIS_ADDR silently keeps carts in memory: no symptom.
            stopped = startup_failure(caller, {**dep.get("env", {}), var: ""})
            if stopped:
                w.entry(
                    f"cfg-cleared-{caller}-{short}",
                    {
                        **base(""),
                        "probe": {"kind": "deployment_ready", "deployment": caller},
                        "log": {"service": caller, "message": stopped},
                        "change_cause": f"Move {var} to the shared service defaults",
                        "injection": {"env": {var: ""}},
                        "recovery": f"Restore {var}={value}",
                        "remedy": rollback(caller),
                    },
                )
            # the neighbouring line's address pasted in: it connects, but to the wrong API
            others = [
                v
                for k, v in sorted(dep.get("env", {}).items())
                if k.endswith("_ADDR")
                and ":" in v
                and k != var
                and deps.get(v.split(":")[0], {}).get("kind") == "grpc"
            ]
            # not on a page only checkouts take when the pasted service records no span: a small
            # share of requests fails with UNIMPLEMENTED from a service with no spans, which no rule
            # of the pack pages (frontend's CHECKOUT_SERVICE_ADDR)
            quiet = (caller == "frontend" and ROUTE_OF.get(host) == "checkout" and others
                     and not deps[others[0].split(":")[0]].get("traced", True))
            if others and host in deps and deps[host].get("kind") == "grpc" and not quiet:
                pasted = others[0]
                w.entry(
                    f"cfg-pasted-{caller}-{short}",
                    {
                        **base(pasted, "UNIMPLEMENTED"),
                        "log": {"service": emitter, "message": reported(caller, host, go_code_name("UNIMPLEMENTED"))},
                        "change_cause": f"Sync {var} with the service address list",
                        "injection": {"env": {var: pasted}},
                        "recovery": f"Restore {var}={value}",
                        "remedy": rollback(caller),
                    },
                )
    callers = callers_of(app)
    for svc, dep in sorted(deps.items()):
        if dep.get("kind") == "datastore":
            continue
        port = int(dep["port"])
        probes = dep.get("probes", {})
        # listener moved: PORT and probes agree on the new port, the Service still targets the old
        if "PORT" in dep.get("env", {}) and svc != "frontend" and svc not in TOLERATED:
            new_probes = {k: {**v, "port": port + 10} for k, v in probes.items()}
            caller = callers.get(svc, [("frontend", "")])[0][0]
            w.entry(
                f"cfg-listener-port-{svc}",
                {
                    "category": "configuration",
                    "mechanism": "change",
                    "target": svc,
                    "culprits": [svc],
                    "probe": probe_for(svc, [f"-> {address_of(app, svc)}", REFUSED]),
                    "artifact": f"env:{svc}/PORT",
                    "aliases": [f"probe:{svc}/readiness"],
                    "log": {"service": reporter(caller, svc), "message": reported(caller, svc, REFUSED)},
                    "change_cause": f"Serve {svc} on {port + 10} to free {port} for the metrics sidecar",
                    "injection": {"env": {"PORT": str(port + 10)}, "probes": new_probes},
                    "recovery": f"Restore PORT={port} and the probes on {port}",
                    "remedy": rollback(svc),
                },
            )
        base_mib = int(str(dep["base_memory"]).removesuffix("Mi"))
        trimmed = f"{base_mib * 3 // 4}Mi"
        w.entry(
            f"cfg-memory-limit-{svc}",
            {
                "category": "configuration",
                "mechanism": "change",
                "target": svc,
                "culprits": [svc],
                # the new pod is OOMKilled and crash-loops while the old one keeps serving
                "probe": {"kind": "deployment_ready", "deployment": svc},
                "artifact": f"limits:{svc}/memory",
                "aliases": [],
                "log": {"service": svc, "message": "Back-off restarting failed container"},
                "change_cause": f"Right-size the {svc} memory limit to {trimmed} from usage data",
                "injection": {"resources": {"limits.memory": trimmed}},
                "recovery": f"Restore the memory limit {dep['resources']['limits']['memory']}",
                "remedy": rollback(svc),
            },
        )
        cpu_limit = str(dep["resources"]["limits"]["cpu"])
        cut = f"{int(cpu_limit.removesuffix('m')) // 100}m"  # 200m typed as 2m: a units slip
        if svc in CPU_LIMIT_TARGETS:
            w.entry(
                f"cfg-cpu-limit-{svc}",
                {
                    "category": "configuration",
                    "mechanism": "change",
                    "target": svc,
                    "culprits": [svc],
                    # the new pod is throttled every CFS period: its handlers wait seconds, the
                    # kubelet's 1 s probes time out, and the rollout never completes
                    "probe": {"kind": "deployment_ready", "deployment": svc},
                    "artifact": f"limits:{svc}/cpu",
                    "aliases": [],
                    "log": {"service": svc, "message": "probe failed: timeout"},
                    "change_cause": f"Trim the {svc} CPU limit to {cut} to fit the smaller node pool",
                    # the API server rejects a limit under the request, so the slip is in both
                    "injection": {"resources": {"requests.cpu": cut, "limits.cpu": cut}},
                    "recovery": f"Restore the CPU limit {cpu_limit}",
                    "remedy": rollback(svc),
                },
            )
        # the cart store's credential pasted into the manifest where the Secret reference was
        # (a literal this cluster's redis rejects), or emptied by a move to shared defaults (the
        # client skips AUTH altogether): either replaces the reference
        for var, ref in sorted(dep.get("secret_env", {}).items() if svc == "cartservice" else ()):
            owner = next(n for n, d in deps.items() if ref in d.get("secret_env", {}).values()
                         and d.get("kind") == "datastore")
            short = owner.split("-")[0]
            literal = f"{app['secrets'][ref['secret']][ref['key']]}-staging"
            for entry_id, value, message, cause in (
                (f"cfg-password-{svc}-{short}", literal, "WRONGPASS",
                 f"Set {var} inline while the {ref['secret']} sync is migrated"),
                (f"cfg-cleared-{svc}-{short}-password", "", "NOAUTH",
                 f"Move {var} to the shared service defaults"),
            ):
                w.entry(
                    entry_id,
                    {
                        "category": "configuration",
                        "mechanism": "change",
                        "target": svc,
                        "culprits": [svc],
                        "probe": direct_call(svc, *CART_READ, [message]),
                        "artifact": f"env:{svc}/{var}",
                        "aliases": [],
                        "log": {"service": svc, "message": message},
                        "change_cause": cause,
                        "injection": {"env": {var: value}},
                        "recovery": f"Restore {var} from secret {ref['secret']}",
                        "remedy": rollback(svc),
                    },
                )
        if "liveness" in probes:
            bad = {**probes["liveness"], "port": port + 1}
            w.entry(
                f"cfg-liveness-{svc}",
                {
                    "category": "configuration",
                    "mechanism": "change",
                    "target": svc,
                    "culprits": [svc],
                    "probe": {"kind": "deployment_ready", "deployment": svc},
                    "artifact": f"probe:{svc}/liveness",
                    "aliases": [],
                    "log": {"service": svc, "message": "Liveness probe failed"},
                    "change_cause": f"Tighten the {svc} liveness check to the admin port",
                    "injection": {"probes": {"liveness": bad}},
                    "recovery": "Restore the liveness probe",
                    "remedy": rollback(svc),
                },
            )


def deployment(w: Writer, app: dict[str, Any]) -> None:
    deps = app["deployments"]
    names = [n for n, d in sorted(deps.items()) if d.get("kind") != "datastore"]
    callers = callers_of(app)
    for svc in names:
        if svc == "frontend":
            continue
        if svc not in TOLERATED:  # callers only warn about those: their outage shows nowhere
            missing_image_tag(w, app, svc, caller_of(callers, svc))
        # a manifest that ships a sibling's image: the pod starts and is ready, but serves the
        # wrong API, so every call to it fails as unimplemented
        sibling = names[(names.index(svc) + 1) % len(names)]
        if sibling == "frontend":
            sibling = names[(names.index(svc) + 2) % len(names)]
        caller = callers.get(svc, [("frontend", "")])[0][0]
        probe = probe_for(svc, [f"-> {address_of(app, svc)}", "UNIMPLEMENTED"])
        log = {"service": reporter(caller, svc), "message": reported(caller, svc, go_code_name("UNIMPLEMENTED"))}
        stopped = startup_failure(sibling, dict(deps[svc].get("env", {})))
        if not stopped and svc in TOLERATED and not deps[svc].get("traced", True):
            # its callers only warn and it records no span: a wrong API shows in no error log,
            # span or restart (adservice: upstream does not trace it)
            continue
        if stopped:
            # the sibling's main() wants addresses this manifest does not set: it stops at start,
            # the new pod crash-loops and the old one keeps serving
            probe = {"kind": "deployment_ready", "deployment": svc}
            log = {"service": svc, "message": stopped}
        w.entry(
            f"dep-wrong-image-{svc}",
            {
                "category": "deployment",
                "mechanism": "change",
                "target": svc,
                "culprits": [svc],
                "probe": probe,
                "artifact": f"image:{svc}",
                "aliases": [],
                "log": log,
                "change_cause": f"Bump {svc} to the v0.10.6 release image",
                "injection": {"image": deps[sibling]["image"]},
                "recovery": f"Restore the image {deps[svc]['image']}",
                "remedy": rollback(svc),
            },
        )


def missing_image_tag(w: Writer, app: dict[str, Any], svc: str, caller: str) -> None:
    """A release of a tag that was never published. Alone it only stalls a RollingUpdate (the
    old pod keeps serving); the same release also switches to Recreate, so the old pod is gone
    before the new one fails to pull its image and every call to the service finds no endpoint."""
    image = app["deployments"][svc]["image"]
    repo, _, tag = image.rpartition(":")
    w.entry(
        f"dep-image-tag-{svc}",
        {
            "category": "deployment",
            "mechanism": "change",
            "target": svc,
            "culprits": [svc],
            "probe": probe_for(svc, [f"-> {address_of(app, svc)}", REFUSED]),
            "artifact": f"image:{svc}",
            "aliases": [],
            "log": {"service": reporter(caller, svc), "message": reported(caller, svc, REFUSED)},
            "change_cause": f"Release {svc} {next_patch(tag)}; switch to Recreate so two versions never serve at once",
            "injection": {"image": f"{repo}:{next_patch(tag)}", "strategy": {"type": "Recreate"}},
            "recovery": f"Roll back to the image {image}",
            "remedy": rollback(svc),
        },
    )


def direct(w: Writer, app: dict[str, Any]) -> None:
    deps = app["deployments"]
    callers = callers_of(app)
    services = [n for n, d in sorted(deps.items()) if d.get("kind") != "datastore"]

    def unreachable(svc: str) -> list[str]:
        # a Service with no ready endpoint: kube-proxy's REJECT rule refuses the connection
        return [f"-> {address_of(app, svc)}", REFUSED]

    def add(
        entry_id: str,
        category: str,
        kind: str,
        target: str,
        title: str,
        *,
        log: tuple[str, str],
        artifact: str,
        remedy: Any,
        signature: list[str],
        culprits: list[str] | None = None,
        probe: Any = None,
        aliases: list[str] | None = None,
        **params: Any,
    ) -> None:
        w.entry(
            entry_id,
            {
                "category": category,
                "mechanism": "direct",
                "target": target,
                "culprits": culprits or [target],
                "probe": (probe | {"signature": signature} if signature else probe) if probe else probe_for(target, signature),
                "artifact": artifact,
                "aliases": aliases or [],
                "log": {"service": log[0], "message": log[1]},
                "recovery": f"Stop the {kind.replace('_', ' ')} on {target}",
                "remedy": remedy,
            },
            experiment(title, kind, target, **params),
        )

    for svc in services:
        limits = deps[svc]["resources"]["limits"]
        if svc in POD_KILL_TARGETS:
            add(
                f"infra-pod-kill-{svc}",
                "infrastructure",
                "pod_kill",
                svc,
                f"Kill {svc} pods",
                log=failed_call_log(caller_of(callers, svc), svc, REFUSED),
                signature=unreachable(svc),
                # the remedy corrects the single replica the kills exploit
                artifact=f"replicas:{svc}",
                aliases=[f"pod:{svc}"],
                remedy=[{"tool": "scale_service", "args": {"service": svc, "replicas": 2}}],
                count=1,
                interval=60,
            )
        if svc != "frontend":  # memory pressure on the entry point takes the whole shop down
            add(
                f"infra-memory-{svc}",
                "infrastructure",
                "memory_hog",
                svc,
                f"Memory pressure in {svc}",
                log=(svc, "Back-off restarting failed container"),
                signature=unreachable(svc),
                # the remedy corrects the limit the pressure exceeds
                artifact=f"limits:{svc}/memory",
                aliases=[f"pod:{svc}"],
                size=limits["memory"],
                remedy=[
                    {
                        "tool": "update_config",
                        "args": {"service": svc, "resources": {"limits.memory": "2Gi"}},
                    }
                ],
            )
        if svc in CPU_HOG_TARGETS:
            add(
                f"infra-cpu-hog-{svc}",
                "infrastructure",
                "cpu_hog",
                svc,
                f"CPU hog in {svc}",
                # throttled at its limit, the kubelet's health rpc waits behind the hog's backlog
                # longer than the probe's 1 s timeout (pkg/probe/grpc/grpc.go)
                log=(svc, "health rpc did not complete"),
                # throttled at its limit, every handler of svc waits behind the hog's backlog
                signature=[svc, "slow"],
                # the remedy raises the limit the hog saturates
                artifact=f"limits:{svc}/cpu",
                aliases=[f"pod:{svc}"],
                cores=2,
                remedy=[
                    {"tool": "update_config", "args": {"service": svc, "resources": {"limits.cpu": "4"}}}
                ],
            )
        if svc in TOLERATED:
            continue  # callers only log a warning: slowness of these is not observable
        add(
            f"dep-slow-{svc}",
            "dependency",
            "network_delay",
            svc,
            f"{svc} answers slowly",
            # no call waits with a deadline, but the kubelet's probes cross the delayed interface
            # too and fail after their 1 s timeout
            log=(svc, "context deadline exceeded"),
            # pages are slow only until the first probes time out; from then on, for as long as
            # the delay lasts, readiness keeps svc out of its Service and liveness restarts it
            # (CrashLoopBackOff), so a slow-hop signature would read healthy through the fault
            probe={"kind": "deployment_ready", "deployment": svc},
            signature=[],
            artifact=f"pod:{svc}",
            aliases=[f"network:{svc}"],
            remedy="none",
            delay_ms=4000,
        )
    for caller, callee in LATENCY_PAIRS if WITH_PAIR_LATENCY else ():
        add(
            f"net-latency-{caller}-{callee}",
            "database-network",
            "network_delay",
            callee,
            f"Network delay between {caller} and {callee}",
            culprits=[callee],
            log=(reporter(caller, callee), "context deadline exceeded"),
            signature=[f"{caller} -> {address_of(app, callee)}", "slow network"],
            artifact=f"network:{callee}",
            remedy="none",
            # the request that takes this path, in a currency that needs a conversion
            probe={
                "kind": "request",
                "route": "checkout" if caller == "checkoutservice" else ROUTE_OF[callee],
                "currency": "EUR",
            },
            delay_ms=3500,
            peer=caller,
        )
    for svc in sorted(LOSSY):
        add(
            f"net-loss-{svc}",
            "database-network",
            "network_loss",
            svc,
            f"Packet loss to {svc}",
            # TCP resends what is lost (calls are late, not reset); the kubelet's probes lose
            # their 1 s race often enough to restart the container
            log=(svc, "probe failed: timeout"),
            signature=[f"-> {address_of(app, svc)}", REFUSED],
            artifact=f"network:{svc}",
            remedy="none",
            loss=0.6,
        )
    for caller, callee in PARTITIONS:
        add(
            f"net-partition-{caller}-{callee}",
            "database-network",
            "partition",
            callee,
            f"Partition between {caller} and {callee}",
            # no deadline: the call hangs until the load generator gives up (60 s) and the
            # request's context is cancelled; the service that logs it is the one upstream's does
            log=failed_call_log(caller, callee, "context canceled"),
            signature=[f"{caller} -> {address_of(app, callee)}", "anceled" if caller != "recommendationservice" else "Cancelled"],
            artifact=f"network:{callee}",
            remedy="none",
            culprits=[callee],
            peer=caller,
        )
    add(
        "dep-redis-outage",
        "dependency",
        "datastore_outage",
        "redis-cart",
        "redis-cart outage",
        log=("cartservice", "UnableToConnect"),
        signature=["UnableToConnect on redis-cart:6379/", dial_words("refused", "redis")],
        artifact="pod:redis-cart",
        remedy="none",
    )
    # maxmemory lowered at runtime (CONFIG SET) below redis' own ~0.9 MB: every write is refused,
    # reads still work; cartservice's gRPC server logs the status it raises. A restart of
    # redis-cart starts a server with its configured maxmemory (and, emptyDir, no carts).
    add(
        "db-redis-maxmemory",
        "database-network",
        "redis_maxmemory",
        "redis-cart",
        "redis-cart maxmemory lowered",
        log=("cartservice", "OOM command not allowed"),
        signature=["OOM command not allowed"],
        probe=direct_call("cartservice", *CART_WRITE, ["OOM command not allowed"]),
        artifact="pod:redis-cart",
        remedy=restart("redis-cart"),
        maxmemory="512Ki",
    )
    nodes = [f"node:{n['name']}" for n in app["nodes"]]
    for svc in NODE_TARGETS:
        add(
            f"infra-node-{svc}",
            "infrastructure",
            "node_failure",
            svc,
            f"The node hosting {svc} fails",
            log=failed_call_log(caller_of(callers, svc), svc, REFUSED),
            signature=unreachable(svc),
            artifact=f"pod:{svc}",
            aliases=nodes,
            remedy=restart(svc),
        )
    def rotation(entry_id: str, stale: str, recovery: str, title: str, **params: Any) -> None:
        """A redis-cart password rotation half applied: `stale` is the side left holding the
        old value, the one to restart; cartservice's cart reads fail with WRONGPASS."""
        w.entry(
            entry_id,
            {
                "category": "authentication",
                "mechanism": "direct",
                "target": stale,
                "culprits": [stale],
                "probe": direct_call("cartservice", *CART_READ, ["WRONGPASS"]),
                "artifact": "secret:redis-cart-credentials",
                "aliases": [f"env:{stale}/REDIS_PASSWORD"],
                "log": {"service": "cartservice", "message": "WRONGPASS"},
                "recovery": recovery,
                "remedy": restart(stale),
            },
            experiment(title, "credential_rotation", "redis-cart", **params),
        )

    rotation(
        "auth-redis-rotated",
        "cartservice",
        "Restore the previous redis-cart password",
        "redis-cart password rotated",
        new_password="c4rt-2024-q3",
    )
    # the reloader restarts the clients with the new Secret, but redis-cart still runs with the
    # requirepass it read at its start
    rotation(
        "auth-redis-server-not-reloaded",
        "redis-cart",
        "Restore the previous redis-cart password (the reloader restarts cartservice)",
        "redis-cart password rotated, server not reloaded",
        new_password="c4rt-2024-q4",
        reload="clients",
    )

def main() -> None:
    app = yaml.safe_load(APP.read_text())
    (OUT / "experiments").mkdir(parents=True, exist_ok=True)
    scopes: dict[str, list[str]] = {}
    if MANIFEST.exists():  # remove what the previous run generated, so dropped templates go
        for entry_id in MANIFEST.read_text().split():
            old = OUT / f"{entry_id}.yaml"
            if old.exists() and (scope := yaml.safe_load(old.read_text()).get("scope")):
                scopes[entry_id] = scope
            (OUT / f"{entry_id}.yaml").unlink(missing_ok=True)
            (OUT / "experiments" / f"{entry_id}.json").unlink(missing_ok=True)
    w = Writer(scopes)
    configuration(w, app)
    deployment(w, app)
    direct(w, app)
    MANIFEST.write_text("\n".join(sorted(w.written)) + "\n")
    print(f"wrote {len(w.written)} entries")


if __name__ == "__main__":
    main()
