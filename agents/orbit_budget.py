"""Orbit's budget ladder: how much of the decision loop the run's remaining dollars still buy.

Paper, Appendix G, Orbit: "a budget ladder reduces it to triage only as the budget runs out". The
paper gives no rungs; ours, by the share of the run's model budget (`--marathon-max-cost`) left:

| rung | share left | steps | mutations | source-fix subagent |
| --- | --- | --- | --- | --- |
| `full` | more than 50 % (or no budget) | 10 | 3 | yes |
| `lean` | 20-50 % | 5 | 2 | no |
| `read-only` | up to 20 % | 2 | 0 | no |
| `triage` | nothing left, or a call was refused | no model call: merge, publish, tentative causes |

How Orbit learns what is left: the metering proxy answers `GET <proxy>/budget` itself (never
forwarded) with `max_cost_usd`, `spent_usd` and `remaining_usd`. When that route is missing (an
endpoint that is not the project's proxy) the budget is unknown and the top rung applies until a
call is refused. A refusal for budget (the proxy answers OpenAI's 429 `insufficient_quota`, which
the model client reports as `ModelUnavailable.budget_spent`) is remembered in the checkpoint: a
run's budget never grows back, so every later invocation is triage only without asking the model again. The proxy's numbers come from metered
answers only, so the rung, like everything else, is the same in two runs given the same answers.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

PROXY_SUFFIX = "/openai/v1"
READ_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class Rung:
    name: str
    steps: int
    mutations: int
    subagent: bool

    @property
    def uses_model(self) -> bool:
        return self.steps > 0


FULL = Rung("full", 10, 3, True)
LEAN = Rung("lean", 5, 2, False)
READ_ONLY = Rung("read-only", 2, 0, False)
TRIAGE = Rung("triage", 0, 0, False)


@dataclass(frozen=True)
class BudgetReading:
    max_cost_usd: float | None
    spent_usd: float

    @property
    def share_left(self) -> float | None:
        if self.max_cost_usd is None:
            return None
        if self.max_cost_usd <= 0:
            return 0.0
        return max(0.0, (self.max_cost_usd - self.spent_usd) / self.max_cost_usd)

    def as_prompt(self) -> dict[str, Any]:
        left = None if self.max_cost_usd is None else round(max(0.0, self.max_cost_usd - self.spent_usd), 6)
        return {"run_budget_usd": self.max_cost_usd, "spent_usd": round(self.spent_usd, 6), "left_usd": left}


def budget_url(base_urls: Mapping[str, str]) -> str | None:
    """The proxy's budget route, from its OpenAI base URL (`.../<token>/openai/v1`)."""
    openai = (base_urls or {}).get("openai", "")
    if not openai.endswith(PROXY_SUFFIX):
        return None
    return openai[: -len(PROXY_SUFFIX)] + "/budget"


def read_budget(base_urls: Mapping[str, str]) -> BudgetReading | None:
    """What the proxy says is left, or None when it cannot say (no route, no proxy)."""
    url = budget_url(base_urls)
    if url is None:
        return None
    try:
        with urllib.request.urlopen(url, timeout=READ_TIMEOUT_S) as answer:  # noqa: S310 - loopback proxy
            data = json.loads(answer.read())
    except (urllib.error.URLError, OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("spent_usd"), (int, float)):
        return None
    limit = data.get("max_cost_usd")
    return BudgetReading(float(limit) if isinstance(limit, (int, float)) else None, float(data["spent_usd"]))


def rung_for(reading: BudgetReading | None, refused_before: bool) -> Rung:
    if refused_before:
        return TRIAGE
    share = reading.share_left if reading is not None else None
    if share is None or share > 0.5:
        return FULL
    if share > 0.2:
        return LEAN
    if share > 0.0:
        return READ_ONLY
    return TRIAGE

