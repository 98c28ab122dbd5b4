"""Which route of an HTTP service a request takes: method and path against `app.yaml` routes.

A route's `path` is a template (`/api/products/{productId}`: one segment per `{name}`) or a
prefix ending in `*` (`/images/*`, `/*`), as Envoy's prefix routes and nginx locations match;
`method` `*` takes any method. Routes are tried in the order `app.yaml` lists them, first match
wins (Envoy's route table). A trailing slash is dropped before matching: Next.js answers
`/api/data/` with a 308 to `/api/data` (`trailingSlash: false`, its default) and the load
generator's client follows it, so the twin serves the target directly (docs/fidelity.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _template_match(template: str, path: str) -> dict[str, str] | None:
    want = template.strip("/").split("/") if template != "/" else []
    got = path.strip("/").split("/") if path != "/" else []
    if len(want) != len(got):
        return None
    params: dict[str, str] = {}
    for part, value in zip(want, got, strict=True):
        if part.startswith("{") and part.endswith("}"):
            if not value:
                return None
            params[part[1:-1]] = value
        elif part != value:
            return None
    return params


def match(routes: Mapping[str, Any], method: str, path: str) -> tuple[str, dict[str, str]] | tuple[None, int]:
    """(route name, path parameters), or (None, 404/405) when nothing serves the request."""
    if len(path) > 1 and path.endswith("/"):
        path = path.rstrip("/") or "/"
    wrong_method = False
    for name, route in routes.items():
        template = route.path
        if template.endswith("*"):
            params: dict[str, str] | None = {} if path.startswith(template[:-1]) or path + "/" == template[:-1] else None
        else:
            params = _template_match(template, path)
        if params is None:
            continue
        if route.http_method not in ("*", method):
            wrong_method = True
            continue
        return name, params
    return None, 405 if wrong_method else 404
