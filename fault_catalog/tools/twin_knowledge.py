"""What the catalog generator needs to know about how the twin's services fail, read from the twin
modules that define it, so that one edit of a service or of a client library's texts reaches the
catalog on the next regeneration instead of drifting from a copy.

- dial failure words per client library: `pytest_marathon.twin.rpctexts.DIAL_WORDS`;
- the line a service stops with at start: its own `init(ctx)`, run in the twin's sandbox with
  the environment in question (`REQUIRED_ADDRESSES` order and texts stay in the service code);
- calls whose failure a caller only warns about (`WARNED_CALLS` in a service's module, pinned
  against its handlers by the service's unit tests).
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

from pytest_marathon.twin.rpctexts import DIAL_WORDS
from pytest_marathon.twin.sandbox import compile_service
from pytest_marathon.twin.sandbox_testing import TestContext

ROOT = Path(__file__).resolve().parents[2]
SERVICES = ROOT / "pytest_marathon" / "twin" / "apps" / "boutique" / "services"


def dial_words(failure: str, client: str) -> str:
    """The words of a failed dial (`refused`, `nxdomain`, `timeout`) in `client`'s text (`go`,
    `python`, `redis`)."""
    return DIAL_WORDS[failure][client]


@cache
def _files(service: str) -> tuple[tuple[str, str], ...]:
    folder = SERVICES / service
    return tuple((p.name, p.read_text()) for p in sorted(folder.iterdir()) if p.is_file())


def startup_failure(service: str, env: dict[str, str]) -> str | None:
    """The message `service`'s code stops with at start in `env` (its `init` raising), or None
    when it starts."""
    compiled = compile_service(service, dict(_files(service)))
    try:
        compiled.instantiate(lambda: TestContext(env=env))
    except Exception as exc:  # noqa: BLE001 - whatever init raises is the start-up failure
        return str(exc)
    return None


def warned_calls(service: str) -> tuple[str, ...]:
    """The address variables whose failed calls `service` only logs as a warning (`WARNED_CALLS`
    at its module's top level; none when it has no such constant)."""
    source = dict(_files(service)).get("service.py", "")
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "WARNED_CALLS"
                                                for t in node.targets):
            return tuple(ast.literal_eval(node.value))
    return ()
