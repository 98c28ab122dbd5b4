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

BACKENDS = ("twin",)

__all__ = ["ActionResult", "Backend", "BackendError", "BuildResult", "SliSample", "create_backend"]


def create_backend(app: str, seed: int, backend: str = "twin", **options: Any) -> Backend:
    """A live system for `app` driven by `seed` (options: `users` for the twin's load)."""
    if backend == "twin":
        from pytest_marathon.twin.engine import Twin

        return Twin(app=app, seed=seed, **options)
    raise BackendError(f"unknown backend {backend!r}; available: {', '.join(BACKENDS)}")
