"""Resolving `--agent` specs and listing agents, through the public registry and CLI."""

from __future__ import annotations

import sys
import textwrap

import pytest
from pytest_marathon.agents import ENTRY_POINT_GROUP, list_agents, resolve_agent

from pytest_marathon.cli import main

BUILT_INS = {"noop", "oracle", "runbook", "keep-style", "codex", "claude-code"}

PLUGIN_SOURCE = textwrap.dedent(
    '''
    class QuietAgent:
        name = "quiet"
        description = "A plug-in agent that only reads alerts"

        def invoke(self, ctx):
            ctx.tools.call("get_alerts")
            return None

    def make_agent():
        return QuietAgent()

    NOT_AN_AGENT = 42
    '''
)


@pytest.fixture
def plugin_path(tmp_path, monkeypatch):
    """An importable module and an installed distribution advertising it as an entry point."""
    (tmp_path / "my_agents.py").write_text(PLUGIN_SOURCE)
    dist = tmp_path / "my_agents-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: my-agents\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\nquiet = my_agents:QuietAgent\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop("my_agents", None)


def test_every_built_in_is_listed_with_a_one_line_description():
    listed = dict(list_agents())
    assert set(listed) >= BUILT_INS
    for name in BUILT_INS:
        assert listed[name] and "\n" not in listed[name]


@pytest.mark.parametrize("name", ["noop", "oracle", "runbook", "keep-style"])
def test_built_ins_resolve_to_agents_named_as_listed(name):
    agent = resolve_agent(name)
    assert agent.name == name
    assert callable(agent.invoke)
    assert agent.needs_ground_truth is (name == "oracle")


def test_unknown_spec_names_the_choices():
    with pytest.raises(ValueError, match="unknown agent 'nonesuch'.*keep-style.*runbook.*module:Class"):
        resolve_agent("nonesuch")


@pytest.mark.parametrize(
    "spec, message",
    [
        ("no_such_module_xyz:Agent", "cannot import module"),
        ("my_agents:Missing", "has no attribute 'Missing'"),
        ("my_agents:NOT_AN_AGENT", "no invoke"),
    ],
)
def test_bad_module_specs_say_what_is_wrong(plugin_path, spec, message):
    with pytest.raises(ValueError, match=message):
        resolve_agent(spec)


def test_module_class_and_factory_specs(plugin_path):
    assert resolve_agent("my_agents:QuietAgent").name == "quiet"
    assert resolve_agent("my_agents:make_agent").name == "quiet"


def test_entry_point_agents_are_resolved_and_listed(plugin_path):
    assert resolve_agent("quiet").description == "A plug-in agent that only reads alerts"
    assert dict(list_agents())["quiet"] == "A plug-in agent that only reads alerts"


def test_cmd_spec_builds_a_command_agent():
    agent = resolve_agent('cmd:python -c "print(1)"')
    assert agent.needs_mcp
    assert agent.command[-1] == "print(1)"
    with pytest.raises(ValueError, match="empty command"):
        resolve_agent("cmd:   ")


def test_agents_command_prints_one_line_per_agent(capsys):
    assert main(["agents"]) == 0
    lines = capsys.readouterr().out.splitlines()
    names = {line.split()[0] for line in lines}
    assert names >= BUILT_INS
    assert any(line.startswith("module:Class") for line in lines)
    assert all(len(line.split(None, 1)) == 2 for line in lines)
