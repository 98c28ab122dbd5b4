"""The load generator: the application's Locust mix, seeded, in virtual time.

Each simulated user behaves like a Locust user: it runs `on_start`, then repeatedly picks a task by
weight, performs its steps back to back, and waits a uniform 1-10 s. Users are spawned one a
second from the start of the run (Locust's spawn rate).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from pytest_marathon.determinism import rng_for
from pytest_marathon.twin.appspec import LoadSpec


@dataclass
class UserTask:
    """One task of one user: its steps run in order at time `t`."""

    t: float
    user: int
    task: str
    steps: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


@dataclass
class _User:
    index: int
    session_id: str
    currency: str
    next_t: float
    started: bool = False


class LoadGenerator:
    def __init__(self, spec: LoadSpec, seed: int, users: int, start: float) -> None:
        if users < 0:
            raise ValueError(f"users must be >= 0, got {users}")
        self.spec = spec
        self.rng: random.Random = rng_for(seed, "load")
        ids = rng_for(seed, "load", "sessions")
        self.users = [
            _User(i, f"{ids.getrandbits(128):032x}", "USD", start + float(i)) for i in range(users)
        ]
        self._names = [t.name for t in spec.tasks]
        self._weights = [t.weight for t in spec.tasks]
        self._steps = {t.name: t.steps for t in spec.tasks}

    def tasks_between(self, t0: float, t1: float) -> list[UserTask]:
        """Every task a user starts in [t0, t1), in time order (ties by user)."""
        out: list[UserTask] = []
        low, high = self.spec.wait_seconds
        for user in self.users:
            while user.next_t < t1:
                at = max(user.next_t, t0)
                if not user.started:
                    user.started = True
                    steps = tuple(step for name in self.spec.on_start for step in self._steps[name])
                    out.append(self._task(user, at, "on_start", steps))
                else:
                    name = self.rng.choices(self._names, self._weights)[0]
                    out.append(self._task(user, at, name, self._steps[name]))
                user.next_t = at + self.rng.uniform(low, high)
        out.sort(key=lambda task: (task.t, task.user))
        return out

    def _task(self, user: _User, t: float, name: str, steps: tuple[str, ...]) -> UserTask:
        task = UserTask(t, user.index, name)
        product = self.rng.choice(self.spec.products)
        for step in steps:
            request: dict[str, Any] = {"session_id": user.session_id, "currency": user.currency}
            if step in ("product", "add_to_cart"):
                request["product_id"] = product
            if step == "add_to_cart":
                low, high = self.spec.quantity
                request["quantity"] = str(self.rng.randint(low, high))  # an HTML form value
            if step == "set_currency":
                user.currency = self.rng.choice(self.spec.currencies)
                request["currency_code"] = user.currency
            if step == "checkout":
                request.update(self.spec.checkout_form)
            task.steps.append((step, request))
        return task
