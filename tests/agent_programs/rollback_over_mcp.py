"""A minimal external agent: reads the alert file, talks MCP to the live session, rolls back.

Run by the `cmd:` agent once per invocation with MARATHON_MCP_URL and MARATHON_ALERTS set and its
workspace as cwd. For each workload that starts alerting, if the workload's current revision was
rolled out during the run, it reports an incident and rolls the change back. It keeps its memory in
`state.json` in its workspace, because every invocation is a fresh process.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

STATE = Path("state.json")
WORKLOAD_LABELS = ("deployment", "service", "service_name")


def workload_of(labels: dict) -> str | None:
    for key in WORKLOAD_LABELS:
        if labels.get(key):
            return labels[key]
    pod = labels.get("pod")
    return "-".join(pod.split("-")[:-2]) if pod and pod.count("-") >= 2 else None


async def call(client, tool: str, **args) -> dict:
    result = await client.call_tool(tool, args)
    return json.loads(result.content[0].text)


async def act(url: str, alerts_by_workload: dict[str, list[str]], state: dict) -> None:
    from mcp import Client  # imported only when there is work: most invocations see nothing new

    async with Client(url) as client:
        for workload, alert_ids in sorted(alerts_by_workload.items()):
            history = (await call(client, "get_rollout_history", service=workload)).get("revisions", [])
            current = next((r for r in history if r["current"]), None)
            if current is None or current["revision"] in state["acted"].get(workload, []):
                continue
            if current["revision"] == 1 or current["created_at"] < 0:
                continue  # not changed during the run: nothing to roll back
            incident = f"cmd-{workload}-r{current['revision']}"
            root_cause = {"culprits": [workload], "artifact": f"image:{workload}", "text": "changed, then alerted"}
            await call(client, "report_incidents", incidents=[
                {"incident_id": incident, "alert_ids": alert_ids, "status": "open", "root_cause": root_cause}
            ])
            answer = await call(client, "rollback_service", incident_id=incident, service=workload)
            after = (await call(client, "get_rollout_history", service=workload)).get("revisions", [])
            done = [r["revision"] for r in after if r["current"]]
            state["acted"].setdefault(workload, []).extend([current["revision"], *done])
            state["log"].append({"incident": incident, "rollback": "error" not in answer})


def main() -> None:
    state = json.loads(STATE.read_text()) if STATE.exists() else {"seen": [], "acted": {}, "log": []}
    alerts = json.loads(Path(os.environ["MARATHON_ALERTS"]).read_text())
    fresh = [a for a in alerts if a["state"] == "firing" and a["alert_id"] not in state["seen"]]
    by_workload: dict[str, list[str]] = {}
    for alert in fresh:
        workload = workload_of(alert.get("labels") or {})
        if workload:
            by_workload.setdefault(workload, []).append(alert["alert_id"])
    if by_workload:
        import anyio

        anyio.run(act, os.environ["MARATHON_MCP_URL"], by_workload, state)
    state["seen"].extend(a["alert_id"] for a in fresh)
    STATE.write_text(json.dumps(state))


if __name__ == "__main__":
    main()
