"""The shipped rule packs (one per application, `pack/<app>.rules.yaml`), rule-file validation and
the `rules` command."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from pytest_marathon import __version__
from pytest_marathon.alerting import rules as rules_module
from pytest_marathon.alerting.rules import RuleFileError, load_rule_file, load_rule_pack
from pytest_marathon.cli import main

WORKLOAD_LABELS = {"deployment", "service", "service_name", "container", "pod"}
#: every shipped pack, found on disk (not through the loader), with its number of rules: boutique's
#: 35, and the Astronomy Shop's 35 shared rules plus its 4 (HTTP 5xx, Kafka lag and empty group,
#: PostgreSQL down); Train Ticket's 30 (docs in its header)
PACKS = sorted(p.name.removesuffix(".rules.yaml")
               for p in (Path(rules_module.__file__).parent / "pack").glob("*.rules.yaml"))
RULE_COUNTS = {"boutique": 35, "astronomy": 40, "trainticket": 30}


def test_every_pack_on_disk_is_loadable_and_counted() -> None:
    assert PACKS == sorted(RULE_COUNTS) == rules_module.available_packs()


def test_the_astronomy_pack_keeps_every_boutique_rule_name_in_the_same_order() -> None:
    boutique = [r.name for r in load_rule_pack("boutique").rules]
    assert [r.name for r in load_rule_pack("astronomy").rules][: len(boutique)] == boutique


@pytest.mark.parametrize("app", PACKS)
def test_pack_has_its_rules_with_severity_templates_and_release(app: str) -> None:
    pack = load_rule_pack(app)
    assert len(pack.rules) == RULE_COUNTS[app]
    assert f"release {__version__}" in pack.text.splitlines()[0]
    for rule in pack.rules:
        assert rule.labels.get("severity") in {"critical", "warning", "info"}, rule.name
        assert {"summary", "description"} <= set(rule.annotations), rule.name
        assert rule.for_ <= 120, rule.name


@pytest.mark.parametrize("app", PACKS)
def test_every_workload_rule_keeps_a_workload_label(app: str) -> None:
    for rule in load_rule_pack(app).rules:
        if rule.name.startswith(("Node", "KubeNode")):
            continue
        grouping = re.findall(r"by \(([^)]*)\)", rule.expr)
        kept = set().union(*(set(g.replace(" ", "").split(",")) for g in grouping)) if grouping else None
        if kept is not None:  # label_replace adds its destination after the grouping
            kept |= set(re.findall(r'label_replace\(.*?"([a-z_]+)", "\$1"', rule.expr, re.S))
        if kept is not None:
            assert kept & WORKLOAD_LABELS, rule.name


BROKEN = {
    "bad promql": ("rate(x[5m]", "rule 'A'", "parse error"),
    "unsupported": ("rate(x[5m:1m])", "rule 'A'", "subqueries"),
    "scalar": ("1 + 1", "rule 'A'", "instant vector"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_bad_expressions_name_file_group_rule_and_construct(tmp_path: Path, case: str) -> None:
    expr, rule, construct = BROKEN[case]
    path = tmp_path / "mine.rules.yaml"
    path.write_text(f"groups:\n  - name: grp\n    rules:\n      - alert: A\n        expr: '{expr}'\n")
    with pytest.raises(RuleFileError) as info:
        load_rule_file(path)
    message = str(info.value)
    assert str(path) in message and "group 'grp'" in message and rule in message
    assert construct in message


@pytest.mark.parametrize(
    ("body", "construct"),
    [
        ("groups: [{name: g, rules: [{alert: A, expr: up, for: 5 minutes}]}]", "invalid duration"),
        ("groups: [{name: g, rules: [{alert: A, expr: up, annotations: {s: '{{ .Foo }}'}}]}]",
         "unsupported template construct"),
        ("groups: [{name: g, rules: [{alert: A, expr: up, labels: {__x: y}}]}]", "invalid label"),
        ("groups: [{name: g, rules: [{alert: A, expr: up, severity: x}]}]", "unknown rule field"),
        ("groups: [{name: g, rules: [{alert: A, expr: up}, {alert: A, expr: up}]}]", "duplicate"),
        ("groups: [{name: g, rules: [{record: r, expr: up}]}]", "recording rules"),
        ("groups: {name: g}", "non-empty list"),
        ("groups: [{name: g, rules: [{alert: A, expr: up}]", "not valid YAML"),
    ],
)
def test_malformed_rule_files_are_rejected(tmp_path: Path, body: str, construct: str) -> None:
    path = tmp_path / "bad.rules.yaml"
    path.write_text(body)
    with pytest.raises(RuleFileError, match=construct):
        load_rule_file(path)


def test_unknown_app_is_a_clear_error() -> None:
    with pytest.raises(RuleFileError, match="no rule pack for application 'nope'.*boutique"):
        load_rule_pack("nope")


@pytest.mark.parametrize("app", PACKS)
def test_rules_command_lists_and_exports(tmp_path: Path, capsys: pytest.CaptureFixture, app: str) -> None:
    assert main(["rules", "--app", app, "--list"]) == 0
    listing = capsys.readouterr().out
    assert f"{RULE_COUNTS[app]} rules" in listing and "KubePodCrashLooping" in listing
    assert main(["rules", "--app", app, "--export", str(tmp_path / "out")]) == 0
    exported = tmp_path / "out" / f"{app}.rules.yaml"
    assert load_rule_file(exported).rules == load_rule_pack(app).rules
    assert main(["rules", "--app", "nope", "--list"]) == 2


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed (Debian package 'prometheus')")
@pytest.mark.parametrize("app", PACKS)
def test_promtool_check_rules_accepts_the_export(tmp_path: Path, app: str) -> None:
    assert main(["rules", "--app", app, "--export", str(tmp_path)]) == 0
    proc = subprocess.run(
        ["promtool", "check", "rules", str(tmp_path / f"{app}.rules.yaml")],
        capture_output=True, text=True, check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"SUCCESS: {RULE_COUNTS[app]} rules found" in proc.stdout
