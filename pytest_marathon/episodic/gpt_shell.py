"""GPT-w-Shell: AIOpsLab's shell-only model agent (clients/gpt.py with the DOCS_SHELL_ONLY
template), rewritten: one chat per episode — the problem, the exec_shell and submit APIs, the
instructions — and each model reply handed back as the action, unchanged.

It asks the episode's metering proxy (an OpenAI-compatible endpoint on loopback, with a
placeholder key: the proxy holds the user's credentials and budget), so its tokens and dollars are
what the proxy measured, recorded per step in the episode bundle.
"""

from __future__ import annotations

import os

from pytest_marathon.metering.credentials import PLACEHOLDER_KEY

DEFAULT_MODEL = "gpt-4.1-mini"
SYSTEM = """\
Monitor and diagnose an application consisting of microservices, and submit the answer the task asks for.

Problem:
{problem}

You can run one kubectl command at a time against the cluster:
{shell}

When you are done, submit:
{submit}
"""


class GptShellAgent:
    name = "gpt-w-shell"
    uses_models = True

    def __init__(self, base_url: str, model: str | None = None) -> None:
        from openai import AsyncOpenAI

        self.model = model or (os.environ.get("MARATHON_MODEL") or "").strip() or DEFAULT_MODEL
        self.client = AsyncOpenAI(base_url=base_url, api_key=PLACEHOLDER_KEY, max_retries=0, timeout=60.0)
        self.history: list[dict[str, str]] = []

    def init_context(self, problem_desc: str, instructions: str, apis: dict[str, str]) -> None:
        shell = "\n".join(f"{k} -> {v}" for k, v in apis.items() if k.startswith("exec_shell"))
        submit = "\n".join(k for k in apis if k.startswith("submit"))
        self.history = [{"role": "system", "content": SYSTEM.format(problem=problem_desc, shell=shell, submit=submit)},
                        {"role": "user", "content": instructions}]

    async def get_action(self, state: str) -> str:
        self.history.append({"role": "user", "content": state})
        reply = await self.client.chat.completions.create(model=self.model, messages=self.history)  # type: ignore[arg-type]
        text = reply.choices[0].message.content or ""
        self.history.append({"role": "assistant", "content": text})
        return text

    async def close(self) -> None:
        await self.client.close()
