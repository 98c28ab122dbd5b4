"""`pytest-marathon serve`: the twin running live behind the Kubernetes (and Prometheus) APIs.

Starts one app's twin, serves its API on loopback, writes a kubeconfig pointing at it, prints
the addresses, and moves virtual time at `--speed`; Ctrl-C stops it cleanly. The Prometheus
API is served too when this installation has it (`pytest_marathon.apiserver.prometheus`).
"""

from __future__ import annotations

import argparse
import secrets
import threading
from pathlib import Path
from typing import Any

from pytest_marathon.apiserver.clock import ClockDriver
from pytest_marathon.apiserver.identity import OPERATOR
from pytest_marathon.apiserver.kubeconfig import write_kubeconfig
from pytest_marathon.apiserver.pair import serve_apis
from pytest_marathon.apiserver.resources import CLOCK_PATH
from pytest_marathon.run.stopping import StopSignals, Terminated


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="run an app's twin behind the Kubernetes API (kubectl works against it)",
        description="Run the twin live and serve the Kubernetes REST API over it on loopback; "
        "writes a kubeconfig for kubectl and the kubernetes client. What it serves and what it "
        "refuses: pytest-marathon docs kube-api.",
    )
    parser.add_argument("--app", default="boutique", help="application to run (default: boutique)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the twin (default: 1)")
    parser.add_argument("--port", type=int, default=0, help="port of the Kubernetes API (default: any free)")
    parser.add_argument("--speed", type=float, default=1.0,
                        help="virtual seconds per wall second (default 1; 0: time moves only through "
                        f"POST {CLOCK_PATH})")
    parser.add_argument("--kubeconfig", type=Path, default=Path("marathon-kubeconfig.yaml"),
                        help="where to write the kubeconfig (default: ./marathon-kubeconfig.yaml)")
    parser.add_argument("--operator-kubeconfig", type=Path, default=None,
                        help="also write a kubeconfig for the operator identity, which may read beyond the "
                        "app's namespace (`manifests | kubectl apply --dry-run=client -f -`); the API is then "
                        "served over HTTPS with a throwaway certificate, as kubectl sends tokens over TLS only")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from pytest_marathon.backends import create_backend

    if args.speed < 0:
        raise ValueError(f"--speed must be >= 0, got {args.speed}")
    backend = create_backend(args.app, args.seed)
    token = secrets.token_urlsafe(24) if args.operator_kubeconfig else None
    apis = serve_apis(backend, args.app, kube_port=args.port, operator_token=token, tls=token is not None)
    server, prometheus = apis.kube, apis.prometheus
    clock = ClockDriver(server, args.speed)
    try:
        ca = server.certificate.cert_pem if server.certificate else None
        # over TLS kubectl asks for a password unless the user has some credential: any token
        # but the operator's is the agent's
        path = write_kubeconfig(args.kubeconfig, server.url, backend.namespace, ca_pem=ca,
                                token="agent" if token else None)
        print(f"Kubernetes API: {server.url}  (namespace {backend.namespace})", flush=True)
        print(f"kubeconfig:     {path}  (kubectl --kubeconfig {path} get pods)", flush=True)
        if token:
            operator = write_kubeconfig(args.operator_kubeconfig, server.url, backend.namespace, token=token,
                                        user=OPERATOR, ca_pem=ca)
            print(f"operator:       {operator}  (reads beyond the app's namespace)", flush=True)
        print(f"Prometheus API: {prometheus.url}", flush=True)
        print(f"Jaeger API:     {apis.jaeger.url}  (query API v3: /api/v3/traces)", flush=True)
        print(f"clock:          {server.url}{CLOCK_PATH}  (virtual now {backend.now:g} s, "
              f"speed {args.speed:g}); Ctrl-C stops", flush=True)
        clock.start()
        with StopSignals():  # SIGTERM stops it as Ctrl-C does
            forever = threading.Event()
            while not forever.wait(0.5):
                pass
    except (KeyboardInterrupt, Terminated) as exc:
        name = "SIGTERM" if isinstance(exc, Terminated) else "SIGINT"
        print(f"pytest-marathon: serve stopped ({name})", flush=True)
    finally:
        clock.stop()
        apis.close()
    return 0

