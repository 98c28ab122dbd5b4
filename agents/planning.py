"""The model's half shared by RAG and Keep-agent: one prompt, one call, one plan.

Paper, Appendix G: Keep-agent adds "one model call per invocation with RAG's prompt, telemetry
retrieval, and plan format, unchanged", and "the prompt lists Keep's incidents as fixed". So the
prompt is built here once: RAG's system and user texts (`prompts/rag/`), and, for Keep-agent
only, an extra paragraph and two extra sections appended (`prompts/keep-agent/`), never a rewrite.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_marathon.agents.briefing import fill, line, render_alerts, render_incidents
from pytest_marathon.agents.labels import alert_id_of
from pytest_marathon.agents.llm import ModelClient, ModelUnavailable, load_prompt
from pytest_marathon.agents.plan import REPAIR_TOOLS, Plan, PlanRejected, parse_plan
from pytest_marathon.agents.protocol import InvocationContext
from pytest_marathon.agents.retrieval import bm25_rank, query_of, render_documents, retrieve

from pytest_marathon.interface.tools import ARTIFACT_VOCABULARY
from pytest_marathon.vocabulary import CATEGORIES


@dataclass(frozen=True)
class FixedGrouping:
    """Keep-agent's addition: the rule engine's incidents and the alerts no rule placed."""

    incidents: Sequence[Mapping[str, Any]]
    unassigned: Sequence[Mapping[str, Any]]


def repair_tool_lines(ctx: InvocationContext) -> str:
    """The act tools as the interface lists them (name, description, argument schema)."""
    lines = []
    for listing in ctx.tools.list_tools():
        if listing.get("name") in REPAIR_TOOLS:
            schema = listing.get("inputSchema") or {}
            lines.append(
                line(
                    {
                        "name": listing["name"],
                        "description": listing.get("description", ""),
                        "arguments": schema,
                    }
                )
            )
    return "\n".join(lines)


def plan_messages(
    ctx: InvocationContext,
    earlier: Sequence[Mapping[str, Any]],
    documents_text: str,
    fixed: FixedGrouping | None = None,
) -> list[dict[str, Any]]:
    system = fill(
        load_prompt("rag", "system"),
        artifacts=ARTIFACT_VOCABULARY,
        categories=", ".join(CATEGORIES),
        repair_tools=repair_tool_lines(ctx),
    )
    user = fill(
        load_prompt("rag", "user"),
        n=str(ctx.n),
        t=f"{ctx.t:g}",
        alerts=render_alerts(ctx.alerts),
        incidents=render_incidents(earlier),
        documents=documents_text,
    )
    if fixed is not None:
        system += load_prompt("keep-agent", "system")
        user += fill(
            load_prompt("keep-agent", "user"),
            fixed=render_incidents(fixed.incidents),
            unassigned=render_alerts(fixed.unassigned),
        )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


@dataclass(frozen=True)
class PlanOutcome:
    """What the one call produced: a plan, or why there is none (`note`)."""

    plan: Plan | None
    note: str = ""
    model_failed: bool = False
    budget_spent: bool = False


def ask_for_plan(
    ctx: InvocationContext,
    client: ModelClient,
    earlier: Sequence[Mapping[str, Any]],
    fixed: FixedGrouping | None = None,
) -> PlanOutcome:
    """Retrieve, rank, make the one model call, read the plan. Never raises for the model's
    failures: no answer or no plan is a no-op with a note."""
    documents = bm25_rank(retrieve(ctx.tools, ctx.alerts, ctx.deadline), query_of(ctx.alerts))
    messages = plan_messages(ctx, earlier, render_documents(documents), fixed)
    try:
        reply = client.complete(messages, json_object=True)
    except ModelUnavailable as exc:
        return PlanOutcome(None, f"model unavailable: {exc}", True, exc.budget_spent)
    known = {alert_id_of(a) for a in ctx.alerts}
    try:
        plan = parse_plan(reply.text, known)
    except PlanRejected as exc:
        return PlanOutcome(None, f"plan rejected, nothing run: {exc}")
    return PlanOutcome(plan)


def journal(ctx: InvocationContext, name: str, record: Mapping[str, Any]) -> None:
    """Append one line to the agent's journal in its workspace (what it planned and refused)."""
    ctx.workspace.mkdir(parents=True, exist_ok=True)
    with (ctx.workspace / name).open("a", encoding="utf-8") as handle:
        handle.write(json.dumps({"n": ctx.n, "t": ctx.t, **record}, sort_keys=True) + "\n")
