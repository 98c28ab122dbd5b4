"""The one model client every model-based baseline uses (ReAct, RAG, Keep-agent, Orbit).

Why one client: the baselines must talk to any OpenAI-compatible endpoint the same way, through
the run's metering proxy only (`ctx.model_base_urls["openai"]`, a placeholder key: the proxy holds
the user's credentials and budget), and must survive the proxy refusing them. Chat Completions is
used because it is the wire format the most providers and local servers speak.

Failure rule: anything that keeps an answer from arriving (no proxy URL, the proxy refusing a call
because the run's budget is spent, an HTTP or transport error, the invocation's deadline) raises
`ModelUnavailable`; the agent catches it and degrades (publishes what it has) instead of crashing.

The token counters here serve only the agent's own ceilings (ReAct's 150k tokens); the tokens and
dollars recorded in the bundle are what the metering proxy measured.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from pytest_marathon.agents.protocol import InvocationContext, InvocationUsage

from pytest_marathon.metering.credentials import PLACEHOLDER_KEY

#: Used when MARATHON_MODEL is unset: a small, cheap model that supports tools and JSON mode.
DEFAULT_MODEL = "gpt-4.1-mini"
#: Seconds kept back from the invocation's deadline so the agent can still publish after a call.
DEADLINE_MARGIN_S = 2.0
#: A call is not worth starting with less time than this.
MIN_CALL_S = 1.0


class ModelUnavailable(Exception):
    """No answer from the model: no proxy, budget spent (proxy refused), HTTP/transport error, or
    no time left. The agent degrades; the invocation is still recorded.

    `budget_spent` (the proxy refused at the run's budget) and `out_of_time` (the invocation's
    deadline is too near for a call) are expected ends the paper's agents degrade through;
    anything else is a broken endpoint, which the invocation record shows as an error."""

    def __init__(self, message: str, *, budget_spent: bool = False, out_of_time: bool = False) -> None:
        super().__init__(message)
        self.budget_spent = budget_spent
        self.out_of_time = out_of_time

    @property
    def expected(self) -> bool:
        return self.budget_spent or self.out_of_time


@dataclass(frozen=True)
class ModelSettings:
    """Which model to ask. From MARATHON_MODEL (set by the user or by the run's model option)."""

    model: str

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ModelSettings:
        env = os.environ if env is None else env
        return cls(model=(env.get("MARATHON_MODEL") or "").strip() or DEFAULT_MODEL)


@dataclass(frozen=True)
class ToolRequest:
    """One tool call the model asked for. Arguments that are not a JSON object become `{}` and
    `note` says why, so the agent can answer the model with the problem instead of crashing."""

    id: str
    name: str
    arguments: dict[str, Any]
    note: str = ""


@dataclass(frozen=True)
class Reply:
    text: str
    tool_requests: list[ToolRequest]
    input_tokens: int
    output_tokens: int
    #: The assistant message to append to the conversation, as the endpoint expects it back.
    message: dict[str, Any] = field(default_factory=dict)
    finish_reason: str = ""


def _parse_arguments(raw: Any) -> tuple[dict[str, Any], str]:
    if isinstance(raw, dict):
        return raw, ""
    if not isinstance(raw, str) or not raw.strip():
        return {}, ""
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        return {}, f"arguments were not valid JSON ({exc.msg}); called with no arguments"
    if not isinstance(value, dict):
        return {}, "arguments were not a JSON object; called with no arguments"
    return value, ""


class ModelClient:
    """Chat Completions through the run's metering proxy, bounded by the invocation's deadline."""

    def __init__(self, ctx: InvocationContext, settings: ModelSettings) -> None:
        self.settings = settings
        self.tokens_used = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.calls = 0
        self._deadline = ctx.deadline
        self._base_url = (ctx.model_base_urls or {}).get("openai", "")
        self._client: Any = None
        self._missing = "" if self._base_url else "the run has no metering proxy"
        if self._base_url:
            try:
                import openai
            except ImportError:
                self._missing = MISSING_LIBRARY
            else:
                self._client = openai.OpenAI(
                    base_url=self._base_url, api_key=PLACEHOLDER_KEY, max_retries=0
                )

    @property
    def available(self) -> bool:
        return self._client is not None

    def close(self) -> None:
        """Release the HTTP connections (one client per invocation)."""
        if self._client is not None:
            self._client.close()

    def __enter__(self) -> ModelClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _timeout(self) -> float:
        remaining = self._deadline - time.monotonic() - DEADLINE_MARGIN_S
        if remaining < MIN_CALL_S:
            raise ModelUnavailable("no time left in this invocation for a model call", out_of_time=True)
        return remaining

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        *,
        json_object: bool = False,
        max_output_tokens: int | None = None,
    ) -> Reply:
        """One Chat Completions call; raises ModelUnavailable when no answer arrives."""
        if self._client is None:
            raise ModelUnavailable(f"no model endpoint: {self._missing}")
        import openai

        request: dict[str, Any] = {"model": self.settings.model, "messages": messages}
        if tools:
            request["tools"] = tools
        if json_object:
            request["response_format"] = {"type": "json_object"}
        if max_output_tokens is not None:
            request["max_completion_tokens"] = max_output_tokens
        timeout = self._timeout()
        self.calls += 1
        try:
            completion = self._client.chat.completions.create(**request, timeout=timeout)
        except openai.APIStatusError as exc:
            spent = exc.status_code == 429 and getattr(exc, "code", None) == "insufficient_quota"
            raise ModelUnavailable(
                f"model call refused: HTTP {exc.status_code}: {exc.message}", budget_spent=spent
            ) from exc
        except openai.APIError as exc:
            raise ModelUnavailable(f"model call failed: {type(exc).__name__}: {exc}") from exc
        except (OSError, ValueError) as exc:
            raise ModelUnavailable(f"model call failed: {type(exc).__name__}: {exc}") from exc
        return self._reply(completion)

    def usage(self, notes: Iterable[str] = (), *, failed: bool = False) -> InvocationUsage:
        """The invocation's own account (the proxy's measurement replaces the counts); `failed`
        marks a model that could not be reached for a reason other than the run's budget."""
        return InvocationUsage(
            model_calls=self.calls,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            status="error" if failed else "ok",
            detail="; ".join(notes)[:500],
        )

    def _reply(self, completion: Any) -> Reply:
        choices = getattr(completion, "choices", None) or []
        if not choices:
            raise ModelUnavailable("model answer had no choices")
        choice = choices[0]
        message = choice.message
        text = message.content or ""
        requests: list[ToolRequest] = []
        sent_calls: list[dict[str, Any]] = []
        for index, call in enumerate(message.tool_calls or []):
            function = getattr(call, "function", None)
            if function is None:  # a custom (non-function) tool call: nothing we offered
                continue
            call_id = call.id or f"call_{index}"
            arguments, note = _parse_arguments(function.arguments)
            requests.append(ToolRequest(call_id, function.name or "", arguments, note))
            sent_calls.append(
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": function.name or "", "arguments": function.arguments or ""},
                }
            )
        assistant: dict[str, Any] = {"role": "assistant", "content": text or None}
        if sent_calls:
            assistant["tool_calls"] = sent_calls
        usage = getattr(completion, "usage", None)
        input_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
        output_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
        self.tokens_used += input_tokens + output_tokens
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        return Reply(
            text=text,
            tool_requests=requests,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            message=assistant,
            finish_reason=str(choice.finish_reason or ""),
        )


MISSING_LIBRARY = "the openai package is missing (pip install 'pytest-marathon[llm]')"


def require_client_library(agent: str) -> None:
    """Refuse, when the agent is resolved and before any run starts, a model-based agent whose
    every call would fail for want of the client library (AgentUnavailable, one line)."""
    try:
        import openai  # noqa: F401 - only whether it imports
    except ImportError:
        from pytest_marathon.agents.external import AgentUnavailable

        raise AgentUnavailable(f"agent {agent!r} needs a model client: {MISSING_LIBRARY}") from None


def client_for(ctx: InvocationContext, settings: ModelSettings | None) -> ModelClient:
    """This invocation's client: with the agent's own settings, else the model the run chose
    (MARATHON_MODEL is read at each invocation, so `--marathon-model` reaches every agent)."""
    return ModelClient(ctx, settings or ModelSettings.from_env())


class ModelBaseline:
    """What a one-conversation-per-invocation baseline shares: the proxy is started for it, it
    never sees the ground truth, and each invocation gets a fresh client closed after it."""

    name = "model-baseline"
    needs_ground_truth = False
    uses_models = True

    def __init__(self, settings: ModelSettings | None = None) -> None:
        require_client_library(self.name)
        self.settings = settings

    def invoke(self, ctx: InvocationContext) -> InvocationUsage:
        with client_for(ctx, self.settings) as client:
            return self._invoke(ctx, client)

    def _invoke(self, ctx: InvocationContext, client: ModelClient) -> InvocationUsage:
        raise NotImplementedError


def function_tools(ctx: InvocationContext, names: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """Chat Completions tool schemas from the session's own tool listing (in its order), so the
    model sees exactly the tools and argument schemas the interface enforces."""
    wanted = None if names is None else set(names)
    tools = []
    for listing in ctx.tools.list_tools():
        name = listing.get("name")
        if not isinstance(name, str) or (wanted is not None and name not in wanted):
            continue
        tools.append(
            {
                "type": "function",
                "function": {
                    "name": name,
                    "description": str(listing.get("description", "")),
                    "parameters": dict(listing.get("inputSchema") or {"type": "object"}),
                },
            }
        )
    return tools


def load_prompt(agent: str, name: str) -> str:
    """A prompt kept as a data file beside the agents: `agents/prompts/<agent>/<name>.md`."""
    path = resources.files("pytest_marathon.agents").joinpath("prompts", agent, f"{name}.md")
    return path.read_text(encoding="utf-8")
