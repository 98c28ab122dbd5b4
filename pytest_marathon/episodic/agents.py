"""Agents of the episodic mode, in AIOpsLab's protocol (`async def get_action(state) -> str`,
optionally `init_context(problem_desc, instructions, apis)`: clients/gpt.py's shape).

`oracle` is handed the problem (as the marathon oracle is handed the schedule) and answers through
the ACI like any agent, mitigations included, with kubectl alone; `always-no` answers "No" to
every question, the cheapest detector, which must pass exactly the no-operation problems. Any other
`--agent=module:Class` is imported and built with no arguments.
"""

from __future__ import annotations

import json
from typing import Any

from pytest_marathon.episodic.problems import Problem

BUILT_IN = ("oracle", "always-no", "gpt-w-shell", "mksmc", "pdiagnose")


def _block(call: str) -> str:
    return f"```\n{call}\n```"


class OracleAgent:
    name = "oracle"

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        self.namespace = ""
        self.plan: list[str] = []

    def init_context(self, problem_desc: str, instructions: str, apis: dict[str, str]) -> None:
        for line in problem_desc.splitlines():
            if line.startswith("Namespace: "):
                self.namespace = line.removeprefix("Namespace: ").strip()
        self.plan = self._plan()

    def _plan(self) -> list[str]:
        p = self.problem
        if p.task == "detection":
            return [_block(f'submit("{"Yes" if p.expects_anomaly else "No"}")')]
        if p.task == "localization":
            return [_block(f"submit({json.dumps(list(p.faulty))})")]
        if p.task == "analysis":
            assert p.analysis is not None
            level, kind = p.analysis
            return [_block(f'submit({{"system_level": "{level}", "fault_type": "{kind}"}})')]
        return [_block(f'exec_shell("{command}")') for command in self._repairs()] + [_block("submit()")]

    def _repairs(self) -> list[str]:
        fault, ns = self.problem.fault, self.namespace
        if fault is None:
            return []
        if fault.kind == "flag":
            return [f"kubectl get configmap flagd-config -n {ns} -o json", "<flag patch>"]
        if fault.kind in ("chaos", "k8s"):
            return [command.replace("{ns}", ns) for command in fault.repairs]
        from pytest_marathon.faults import load_catalog

        entry = load_catalog(self.problem.app).get(fault.name)
        return [kubectl_for(step, ns) for step in entry.remedy or ()]

    async def get_action(self, state: str) -> str:
        step = self.plan.pop(0)
        if "<flag patch>" in step:
            step = _block(f"exec_shell('{self._flag_patch(state)}')")
        return step

    def _flag_patch(self, state: str) -> str:
        """The flag file as the last `kubectl get configmap -o json` printed it, the fault's flag
        back at its healthy variant, sent back as a merge patch."""
        assert self.problem.fault is not None
        configmap = json.loads(state.rsplit("\nPlease take the next action", 1)[0])
        key = next(iter(configmap["data"]))
        document = json.loads(configmap["data"][key])
        document["flags"][self.problem.fault.name]["defaultVariant"] = self.problem.fault.healthy
        patch = json.dumps({"data": {key: json.dumps(document)}})
        return f"kubectl patch configmap flagd-config -n {self.namespace} --type merge -p {shell_quote(patch)}"


def shell_quote(text: str) -> str:
    """Double-quoted for shlex (the command itself travels inside single quotes)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def kubectl_for(step: Any, namespace: str) -> str:
    """A catalog remedy step (a marathon tool call) as the kubectl command that does the same."""
    tool, args = step["tool"], step.get("args", {})
    target = f"deployment/{args['service']} -n {namespace}"
    if tool == "rollback_service":
        return f"kubectl rollout undo {target}"
    if tool == "restart_service":
        return f"kubectl rollout restart {target}"
    if tool == "scale_service":
        return f"kubectl scale {target} --replicas={int(args['replicas'])}"
    if tool == "update_config":
        words = []
        limits = [f"{k.split('.', 1)[1]}={v}" for k, v in sorted(args.get("resources", {}).items()) if k.startswith("limits.")]
        requests = [f"{k.split('.', 1)[1]}={v}" for k, v in sorted(args.get("resources", {}).items()) if k.startswith("requests.")]
        if limits or requests:
            words.append(f"kubectl set resources {target}"
                         + (f" --limits={','.join(limits)}" if limits else "")
                         + (f" --requests={','.join(requests)}" if requests else ""))
        env = args.get("env", {})
        if env:
            words.append(f"kubectl set env {target} " + " ".join(f"{k}={v}" for k, v in sorted(env.items())))
        if len(words) != 1:
            raise ValueError(f"update_config {args} is not one kubectl command")
        return words[0]
    raise ValueError(f"no kubectl command for the remedy tool {tool!r}")


class AlwaysNoAgent:
    """Says there is no anomaly, whatever the question."""

    name = "always-no"

    async def get_action(self, state: str) -> str:
        return _block('submit("No")')


def make_agent(spec: str, problem: Problem) -> Any:
    """A built-in agent (a user's module:Class runs in its own process: episodic/isolated.py)."""
    if spec == "oracle":
        return OracleAgent(problem)
    if spec == "always-no":
        return AlwaysNoAgent()
    if spec in ("mksmc", "pdiagnose"):
        from pytest_marathon.episodic.baselines import make_baseline

        return make_baseline(spec)
    raise ValueError(f"unknown episodic agent {spec!r}; choose {', '.join(BUILT_IN)} or module:Class "
                     "(a class with `async def get_action(self, state: str) -> str`)")
