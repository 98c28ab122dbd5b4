"""Backends: the `Backend` protocol (base.py) and `create_backend`, the one way to get one."""

from __future__ import annotations

from typing import Any

from pytest_marathon.backends.base import (
    ActionResult,
    Backend,
    BackendError,
    BuildResult,
    SliSample,
)

BACKENDS = ("twin", "kubernetes")

__all__ = ["ActionResult", "Backend", "BackendError", "BuildResult", "SliSample", "create_backend"]


def create_backend(app: str, seed: int, backend: str = "twin", **options: Any) -> Backend:
    """A live system for `app` driven by `seed` (options: `users` for the twin's load).

    `kubernetes`: with `kubeconfig` (and `context`, `prometheus_url`, `jaeger_url`, `registry`) a cluster;
    without one, a twin of `seed` behind its own Kubernetes and Prometheus APIs, driven over HTTP."""
    if backend == "twin":
        from pytest_marathon.twin.engine import Twin

        return Twin(app=app, seed=seed, **options)
    if backend == "kubernetes":
        from pytest_marathon.backends import kubernetes_twin

        if options.get("kubeconfig") or options.get("context"):
            return kubernetes_twin.from_kubeconfig(
                app, kubeconfig=options.get("kubeconfig"), context=options.get("context"),
                prometheus_url=options.get("prometheus_url"), registry=options.get("registry"),
                jaeger_url=options.get("jaeger_url"))
        return kubernetes_twin.twin_behind_apis(app, seed, options.get("users"))
    raise BackendError(f"unknown backend {backend!r}; available: {', '.join(BACKENDS)}")
