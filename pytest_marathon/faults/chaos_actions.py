"""Chaos Toolkit `provider: python` actions that reach the backend's fault API.

A Chaos Toolkit experiment names a module and function, not an object, so the orchestrator
registers its backend under a key and passes that key in the experiment's configuration. The
start action stores the backend's handle under (backend key, fault key) so the rollback action of
the same fault can stop exactly what it started, however many faults run at once.
"""

from __future__ import annotations

import threading
from typing import Any

from pytest_marathon.backends.base import Backend

_lock = threading.Lock()
_backends: dict[str, Backend] = {}
_handles: dict[tuple[str, str], list[str]] = {}


def register_backend(key: str, backend: Backend) -> None:
    """Make a backend reachable from experiments whose configuration carries `backend_key`."""
    with _lock:
        _backends[key] = backend


def unregister_backend(key: str) -> None:
    with _lock:
        _backends.pop(key, None)
        for handle_key in [k for k in _handles if k[0] == key]:
            del _handles[handle_key]


def start_fault(kind: str, target: str, configuration: dict[str, Any], **params: Any) -> str:
    """Action: start one direct fault on the backend named in the configuration."""
    backend, key = _resolve(configuration)
    handle = backend.chaos_start(kind, target, **params)
    with _lock:
        _handles.setdefault(key, []).append(handle)
    return handle


def stop_fault(configuration: dict[str, Any]) -> int:
    """Rollback: stop every direct fault the same experiment started; returns how many."""
    backend, key = _resolve(configuration)
    with _lock:
        handles = _handles.pop(key, [])
    for handle in reversed(handles):
        backend.chaos_stop(handle)
    return len(handles)


def _resolve(configuration: dict[str, Any]) -> tuple[Backend, tuple[str, str]]:
    backend_key = str(configuration.get("backend_key", ""))
    fault_key = str(configuration.get("fault_key", ""))
    with _lock:
        backend = _backends.get(backend_key)
    if backend is None:
        raise LookupError(f"no backend registered under {backend_key!r}")
    return backend, (backend_key, fault_key)
