"""The load generator: the application's Locust mix, seeded, in virtual time.

Each simulated user behaves like a Locust user: it runs `on_start`, then repeatedly picks a task by
weight, performs its steps back to back, and waits a uniform 1-10 s. Users are spawned one a
second from the start of the run (Locust's spawn rate).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from pytest_marathon.determinism import rng_for
from pytest_marathon.twin.appspec import LoadSpec, RequestTemplate

#: the route name a request-template step carries: the entry point picks the route by its path
HTTP_STEP = "http"
_PLACEHOLDER = re.compile(r"\{([a-z_]+)(:int)?\}")


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
        # what a task that reads a flag (locust's flood_home, through flagd's OFREP) sees
        self.flag_value: Callable[[str], Any] = lambda name: 0

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
        if self.spec.requests:
            return self._request_task(user, t, name, steps)
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

    # --- request-template load mixes (apps whose locustfile sends HTTP paths) ----------------------
    def _request_task(self, user: _User, t: float, name: str, steps: tuple[str, ...]) -> UserTask:
        task = UserTask(t, user.index, name)
        names = [name] if name != "on_start" else list(self.spec.on_start)
        for task_name in names:
            templates = list(self.spec.requests[task_name])
            count = 1
            flag = self.spec.flag_of.get(task_name)
            if flag is not None:
                value = self.flag_value(flag)
                count = int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0
                if count <= 0:
                    continue
            plan: list[RequestTemplate] = templates * count
            values = self._draw(user)
            rep = self.spec.repeat.get(task_name)
            if rep is not None:
                low, high, first = rep
                plan = []
                for _ in range(self.rng.randint(low, high)):
                    values["product"] = self.rng.choice(self.spec.values["product"])
                    values["quantity"] = self.rng.choice(self.spec.values.get("quantity", (1,)))
                    plan.extend(fill(tmpl, values) for tmpl in templates[:first])
                task.steps.extend((HTTP_STEP, request_of(tmpl)) for tmpl in plan)
                plan = [fill(tmpl, values) for tmpl in templates[first:]]
            else:
                plan = [fill(tmpl, values) for tmpl in plan]
            task.steps.extend((HTTP_STEP, request_of(tmpl)) for tmpl in plan)
        return task

    def _draw(self, user: _User) -> dict[str, Any]:
        """One value of each list for this task, a fresh user id, and a checkout identity."""
        values: dict[str, Any] = {key: self.rng.choice(options) for key, options in sorted(self.spec.values.items())}
        values["user"] = _uuid(self.rng.getrandbits(128))
        values["session"] = user.session_id
        if self.spec.people:
            values["person"] = {**self.rng.choice(self.spec.people), "userId": values["user"]}
        return values


def _uuid(bits: int) -> str:
    h = f"{bits:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _fill_value(value: Any, values: dict[str, Any]) -> Any:
    if isinstance(value, str):
        whole = _PLACEHOLDER.fullmatch(value)
        if whole:
            got = values.get(whole.group(1), "")
            return int(got) if whole.group(2) else got
        return _PLACEHOLDER.sub(lambda m: str(values.get(m.group(1), "")), value)
    if isinstance(value, dict):
        return {k: _fill_value(v, values) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill_value(v, values) for v in value]
    return value


def fill(template: RequestTemplate, values: dict[str, Any]) -> RequestTemplate:
    """The template with its placeholders replaced by this task's values."""
    return RequestTemplate(template.method, _fill_value(template.path, values), _fill_value(template.body, values))


def request_of(template: RequestTemplate) -> dict[str, Any]:
    """The request the entry point receives: method, path, query, body (a copy), headers."""
    path, _, query = template.path.partition("?")
    body = json.loads(json.dumps(template.body)) if template.body is not None else None
    headers = {"content-type": "application/json"} if body is not None else {}
    return {"method": template.method, "path": path, "query": dict(parse_qsl(query)), "body": body,
            "headers": headers, "params": {}}
