"""A minimal episodic agent program: reads its task, speaks MCP to the episode's ACI, submits.

Run by the `cmd:` agent with MARATHON_TASK (the task description and API list) and
MARATHON_MCP_URL set, inside the run's sandbox (nothing outside its workspace is writable), so
what it expects it checks itself: a failed expectation exits 3, which the episode's bundle records
as the process's crash. Its argument is its plan:

* `detect`: check the tools and the task, try a refused command, list the pods, then submit "Yes"
  when the `ad` service logs errors and "No" otherwise; then call once more, which
  must be refused (the episode is over);
* `loop`: list the pods until a call is refused (the step limit), never submitting.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

TOOLS = ["exec_shell", "get_logs", "get_metrics", "get_traces", "read_metrics", "read_traces", "submit"]


def expect(condition: bool, what: str) -> None:
    if not condition:
        print(f"expectation failed: {what}", file=sys.stderr)
        raise SystemExit(3)


async def main(plan: str) -> None:
    from mcp import Client

    task = Path(os.environ["MARATHON_TASK"]).read_text()
    namespace = task.split("Namespace: ", 1)[1].split("\n", 1)[0].strip()

    async with Client(os.environ["MARATHON_MCP_URL"]) as client:
        async def call(tool: str, **args: object) -> str:
            result = await client.call_tool(tool, args)
            text = result.content[0].text
            expect(bool(result.is_error) == text.startswith("Error"), f"is_error of {text[:80]!r}")
            return text

        listed = await client.list_tools()
        expect(sorted(t.name for t in listed.tools) == TOOLS, f"the tools: {[t.name for t in listed.tools]}")
        expect("get_logs(namespace: str, service: str)" in task and "call it once" in task, "the task's API list")
        expect(plan in ("detect", "loop"), f"a plan: {plan!r}")
        if plan == "loop":
            for _ in range(100):
                if (await call("exec_shell", command=f"kubectl get pods -n {namespace}")).startswith("Error: the episode is over"):
                    break
            return
        await call("exec_shell", command="kubectl edit deployment ad")
        pods = await call("exec_shell", command=f"kubectl get pods -n {namespace}")
        expect(pods.split("\n", 1)[0].split()[:2] == ["NAME", "READY"], f"kubectl's table: {pods[:80]!r}")
        logs = await call("get_logs", namespace=namespace, service="ad")
        errors = [line for line in logs.splitlines() if line.split(" ", 1)[0] in ("WARNING", "ERROR")]
        expect((await call("submit", solution="Yes" if errors else "No")).startswith("Submitted"), "submit")
        after = await call("get_logs", namespace=namespace, service="ad")
        expect(after.startswith("Error: the episode is over (submitted)"), f"a call after submit: {after[:80]!r}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
