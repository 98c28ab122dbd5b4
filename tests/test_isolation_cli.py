"""The Codex and Claude Code presets in the sandbox, driven by a scripted model that tries, before
its ordinary SRE work, to read the answers (an earlier bundle's schedule, the baseline cache, the
package's catalog, the user's home) and to write outside the workspace: Codex with its shell,
Claude Code with its Read and Write tools. Nothing it is shown contains the answers, nothing lands
outside, and the run scores as the same script without the attempt.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from isolation_support import comparable_score, need_sandbox
from model_double import Conversation, ModelDouble, SreScript, ToolCall, Turn
from model_double.script import CODE_TOOL
from test_agents_cli_presets import CLIS, TINY, model_env, needs

from pytest_marathon.isolation.paths import package_dirs
from pytest_marathon.scoring import score_bundle

INTRUDE = "// double: intrude"
MARKERS = ("HOME-SECRET-MARKER", "SCHEDULE-MARKER", "CACHE-MARKER")


@dataclass
class IntruderScript(SreScript):
    """The default script after one attempt: a shell command (Codex), or Read and Write calls
    (Claude Code). What the client passed back for them is kept in `seen`."""

    command: str = ""
    reads: list[str] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)
    seen: list[str] = field(default_factory=list)

    def _decide(self, conv: Conversation) -> Turn:
        if conv.tool_named("get_alerts") is None and CODE_TOOL not in conv.custom_tools:
            return super()._decide(conv)
        attempts = [c for c in conv.calls if self._is_attempt(c.name, c.arguments)]
        wanted = self._attempts(conv)
        if len(attempts) < len(wanted):
            return wanted[len(attempts)]
        self.seen.extend(c.result or "" for c in attempts if (c.result or "") not in self.seen)
        return super()._decide(conv)

    def _is_attempt(self, name: str, arguments: Any) -> bool:
        if str(arguments.get("input") or "").startswith(INTRUDE):
            return True
        path = str(arguments.get("file_path") or "")
        return name in ("Read", "Write") and path in [*self.reads, *self.writes]

    def _attempts(self, conv: Conversation) -> list[ToolCall]:
        if CODE_TOOL in conv.custom_tools:
            js = (f"{INTRUDE}\nconst answer = await tools.exec_command("
                  f"{json.dumps({'cmd': self.command})});\ntext(JSON.stringify(answer));\n")
            return [ToolCall(CODE_TOOL, {"input": js}, conv.tools.get(CODE_TOOL, ""), custom=True)]
        if conv.tool_named("Read") is not None:
            calls = [ToolCall("Read", {"file_path": p}, conv.tools["Read"]) for p in self.reads]
            calls += [ToolCall("Write", {"file_path": p, "content": "intruder"},
                               conv.tools["Write"]) for p in self.writes]
            return calls
        return []


def _plant(root: Path) -> dict[str, Any]:
    """An empty project folder with what earlier runs leave behind, a home with a secret, and
    where an intruder would read and write."""
    empty, home = root / "empty", root / "home"
    earlier = empty / ".marathon" / "bundles" / "boutique-earlier-seed1"
    cache = empty / ".marathon" / "noop" / "boutique-noop-seed1"
    for folder, marker in ((earlier, "SCHEDULE-MARKER"), (cache, "CACHE-MARKER")):
        folder.mkdir(parents=True)
        (folder / "schedule.jsonl").write_text(json.dumps({"fault_id": marker}) + "\n")
    home.mkdir(parents=True, exist_ok=True)
    (home / "secret.txt").write_text("HOME-SECRET-MARKER")
    catalog = next(package_dirs(["pytest_marathon.fault_catalog"])[0].glob("*/*.yaml"))
    tag = uuid.uuid4().hex[:8]
    reads = [str(earlier / "schedule.jsonl"), str(cache / "schedule.jsonl"),
             str(home / "secret.txt"), str(catalog)]
    writes = [str(empty / ".marathon" / "bundles" / f"probe-{tag}"), str(home / f"probe-{tag}"),
              f"/tmp/probe-{tag}"]
    command = "; ".join([*(f"cat {shlex.quote(p)}" for p in reads),
                         *(f"echo intruder > {shlex.quote(p)}" for p in writes), "echo done"])
    return {"empty": empty, "home": home, "earlier": earlier, "catalog": catalog,
            "reads": reads, "writes": writes, "command": command}


def _headline(preset: str, double: ModelDouble, place: dict[str, Any]) -> Path:
    env = model_env(double, place["home"])
    argv = [sys.executable, "-m", "pytest", "--marathon-app=boutique", f"--agent={preset}",
            f"--marathon-scenario={TINY}", "-p", "no:randomly", "-p", "no:cacheprovider",
            "--marathon-max-cost=none"]  # the attempt's extra model calls must not hit the budget
    done = subprocess.run(argv, cwd=place["empty"], env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    bundles = place["empty"] / ".marathon" / "bundles"
    [bundle] = [b for b in bundles.iterdir() if b.is_dir() and b != place["earlier"]]
    return bundle


@pytest.mark.slow
@pytest.mark.parametrize("preset", [pytest.param(p, marks=needs(p)) for p in CLIS])
def test_a_cli_intruder_sees_nothing_writes_nothing_and_scores_as_the_plain_script(
    preset: str, tmp_path: Path
) -> None:
    need_sandbox()
    with ModelDouble() as double:
        plain = _headline(preset, double, _plant(tmp_path / "plain"))
    place = _plant(tmp_path / "intruder")
    script = IntruderScript(command=place["command"], reads=place["reads"],
                            writes=place["writes"])
    with ModelDouble(script=script) as double:
        intruder = _headline(preset, double, place)

    assert script.seen, "the scripted model made its attempt"
    shown = "\n".join(script.seen)
    # the attempt ran: Codex's shell got to its end, Claude Code's tools answered
    assert ("done" in shown) if preset == "codex" else ("does not exist" in shown)
    for marker in MARKERS:
        assert marker not in shown
    assert place["catalog"].read_text()[:60] not in shown
    assert not [p for p in place["writes"] if os.path.exists(p)]
    manifest = json.loads((intruder / "manifest.json").read_text())
    assert manifest["agent_flags"]["isolation"] == "sandbox"
    Path(os.environ.get("INTRUDER_SEEN_LOG", os.devnull)).write_text(shown)
    # the same score; only the cost differs, by the model calls of the attempt itself
    scores = [
        {k: v for k, v in comparable_score(score_bundle(b)).items() if k != "cost"}
        for b in (intruder, plain)
    ]
    assert scores[0] == scores[1]
