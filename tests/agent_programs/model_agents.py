"""A plug-in agent whose actions follow its model's answers, for the record/replay tests.

Each invocation with firing alerts it asks the model (Responses API) which workload is at fault,
then asks why in a streamed Chat Completions call, and files one incident naming that workload
with the streamed reason as its root cause text. So a replayed run reproduces the recorded run's
tool calls only if both answers, the stream included, come back as recorded.

`REPLAY_AGENT_VARIANT_AT=<n>` makes invocation n word its first question differently, as an
edited prompt would, so the request no longer matches the recording.
"""

from __future__ import annotations

import os
from typing import Any

import openai
from pytest_marathon.agents import InvocationContext

from pytest_marathon.vocabulary import workload_of

MODEL = "gpt-5-mini"  # in the built-in price table, so the dollars are checked too


class AsksTheModel:
    name = "asks-the-model"
    description = "asks a model which workload is at fault and files an incident naming it"

    def invoke(self, ctx: InvocationContext) -> None:
        firing = [a for a in ctx.alerts if a.get("state") == "firing"]
        if not firing:
            return
        workloads = sorted({workload_of(a.get("labels") or {}) or "unknown" for a in firing})
        client = openai.OpenAI(
            base_url=ctx.model_base_urls["openai"], api_key="any", max_retries=0
        )
        question = f"Invocation {ctx.n}. Alerts are firing on: {', '.join(workloads)}. Which one?"
        if os.environ.get("REPLAY_AGENT_VARIANT_AT") == str(ctx.n):
            question += " Answer in one word."
        culprit = client.responses.create(model=MODEL, input=question).output_text.strip()
        stream = client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": f"Why {culprit}?"}], stream=True
        )
        reason = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
        incident: dict[str, Any] = {
            "incident_id": f"inc-{culprit}",
            "alert_ids": sorted(str(a["alert_id"]) for a in firing),
            "status": "open",
            "root_cause": {
                "culprits": [culprit],
                "artifact": f"pod:{culprit}",
                "category": "infrastructure",
                "text": reason[:200],
            },
        }
        ctx.tools.call("report_incidents", incidents=[incident])
