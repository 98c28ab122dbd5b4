"""Loading and validating Prometheus alerting-rule files.

A rule pack is a standard Prometheus rule file (`groups: [{name, interval, rules: [...]}]`) so
it deploys unchanged on a real Prometheus. Validation happens once at load time: every
expression is compiled by our PromQL evaluator and every template parsed, so a broken pack fails
before a run starts, with an error naming the file, the group, the rule and the bad construct.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import promql_parser as pp
import yaml

from pytest_marathon import yamlio
from pytest_marathon.alerting.promql import PromQLError, compile_query
from pytest_marathon.alerting.templates import Template, TemplateError

PACK_PACKAGE = "pytest_marathon.alerting"
PACK_SUFFIX = ".rules.yaml"

_METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
_RULE_KEYS = {"alert", "expr", "for", "keep_firing_for", "labels", "annotations"}
_GROUP_KEYS = {"name", "interval", "rules", "limit"}
_RESERVED_LABELS = {"alertname", "__name__"}


class RuleFileError(ValueError):
    """A rule file that Prometheus would reject or that our evaluator cannot run."""

    def __init__(self, file: str, message: str, group: str | None = None, rule: str | None = None):
        where = file
        if group is not None:
            where += f": group {group!r}"
        if rule is not None:
            where += f": rule {rule!r}"
        super().__init__(f"{where}: {message}")
        self.file = file
        self.group = group
        self.rule = rule


@dataclass(frozen=True)
class Rule:
    """One alerting rule, with its templates parsed and durations in seconds (`for_` holds the
    rule file's `for:`, a Python keyword)."""

    name: str
    expr: str
    group: str
    interval: float
    for_: float = 0.0
    keep_firing_for: float = 0.0
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    label_templates: dict[str, Template] = field(default_factory=dict, repr=False, compare=False)
    annotation_templates: dict[str, Template] = field(
        default_factory=dict, repr=False, compare=False
    )


@dataclass(frozen=True)
class RulePack:
    """The validated rules of one application, in file order, and where they came from."""

    app: str
    source: str
    text: str
    rules: tuple[Rule, ...]

    @property
    def groups(self) -> list[str]:
        return list(dict.fromkeys(r.group for r in self.rules))

    def rule(self, name: str) -> Rule:
        for r in self.rules:
            if r.name == name:
                return r
        raise KeyError(f"no rule named {name!r} in the {self.app} pack")


def parse_duration(text: Any, where: str) -> float:
    """A Prometheus duration ("90s", "1m30s") in seconds."""
    if not isinstance(text, str) or not text:
        raise ValueError(f"{where}: duration must be a string like '1m', got {text!r}")
    try:
        return pp.parse_duration(text).total_seconds()
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{where}: invalid duration {text!r}: {exc}") from exc


def available_packs() -> list[str]:
    """Applications that ship a rule pack."""
    pack_dir = resources.files(PACK_PACKAGE) / "pack"
    return sorted(
        p.name[: -len(PACK_SUFFIX)] for p in pack_dir.iterdir() if p.name.endswith(PACK_SUFFIX)
    )


def rule_pack_files(app: str) -> list[tuple[str, Traversable]]:
    """The files of an application's shipped rule pack, as (`pack/<name>`, file), sorted: what
    `load_rule_pack` reads, and what a bundle's manifest records the digest of."""
    resource = resources.files(PACK_PACKAGE) / "pack" / f"{app}{PACK_SUFFIX}"
    if not resource.is_file():
        raise RuleFileError(
            f"pack/{app}{PACK_SUFFIX}",
            f"no rule pack for application {app!r} (available: {', '.join(available_packs())})",
        )
    return [(f"pack/{app}{PACK_SUFFIX}", resource)]


def load_rule_pack(app: str) -> RulePack:
    """The shipped, validated rule pack of an application."""
    [(source, resource)] = rule_pack_files(app)
    return parse_rule_text(resource.read_text(encoding="utf-8"), source=source, app=app)


def load_rule_file(path: str | Path, app: str | None = None) -> RulePack:
    """A rule file from disk (e.g. an operator's own pack)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RuleFileError(str(path), f"cannot read rule file: {exc}") from exc
    return parse_rule_text(text, source=str(path), app=app or path.name.split(".")[0])


def parse_rule_text(text: str, *, source: str, app: str) -> RulePack:
    try:
        document = yamlio.safe_load(text)
    except yaml.YAMLError as exc:
        raise RuleFileError(source, f"not valid YAML: {exc}") from exc
    if not isinstance(document, dict) or set(document) != {"groups"}:
        raise RuleFileError(source, "a rule file is a mapping with exactly one key, 'groups'")
    groups = document["groups"]
    if not isinstance(groups, list) or not groups:
        raise RuleFileError(source, "'groups' must be a non-empty list")
    rules: list[Rule] = []
    seen_groups: set[str] = set()
    seen_rules: set[str] = set()
    for index, group in enumerate(groups):
        rules.extend(_parse_group(source, index, group, seen_groups, seen_rules))
    return RulePack(app=app, source=source, text=text, rules=tuple(rules))


def _parse_group(
    source: str, index: int, group: Any, seen_groups: set[str], seen_rules: set[str]
) -> list[Rule]:
    if not isinstance(group, dict):
        raise RuleFileError(source, f"group #{index + 1} is not a mapping")
    name = group.get("name")
    if not isinstance(name, str) or not name:
        raise RuleFileError(source, f"group #{index + 1} has no name")
    unknown = sorted(set(group) - _GROUP_KEYS)
    if unknown:
        raise RuleFileError(source, f"unknown group field(s) {', '.join(unknown)}", group=name)
    if name in seen_groups:
        raise RuleFileError(source, "duplicate group name", group=name)
    seen_groups.add(name)
    try:
        interval = parse_duration(group.get("interval", "15s"), "interval")
    except ValueError as exc:
        raise RuleFileError(source, str(exc), group=name) from exc
    entries = group.get("rules")
    if not isinstance(entries, list) or not entries:
        raise RuleFileError(source, "'rules' must be a non-empty list", group=name)
    return [
        _parse_rule(source, name, interval, i, entry, seen_rules) for i, entry in enumerate(entries)
    ]


def _parse_rule(
    source: str, group: str, interval: float, index: int, entry: Any, seen: set[str]
) -> Rule:
    if not isinstance(entry, dict):
        raise RuleFileError(source, f"rule #{index + 1} is not a mapping", group=group)
    if "record" in entry:
        raise RuleFileError(
            source, "recording rules are not supported in a rule pack", group=group,
            rule=str(entry.get("record")),
        )
    name = entry.get("alert")
    if not isinstance(name, str) or not _METRIC_NAME.match(name):
        raise RuleFileError(
            source, f"rule #{index + 1}: 'alert' must be a valid name, got {name!r}", group=group
        )

    def fail(message: str) -> RuleFileError:
        return RuleFileError(source, message, group=group, rule=name)

    unknown = sorted(set(entry) - _RULE_KEYS)
    if unknown:
        raise fail(f"unknown rule field(s) {', '.join(unknown)}")
    if name in seen:
        raise fail("duplicate alert name in the pack")
    seen.add(name)
    expr = entry.get("expr")
    if not isinstance(expr, str) or not expr.strip():
        raise fail("'expr' must be a non-empty PromQL string")
    try:
        node = compile_query(expr)
    except PromQLError as exc:
        raise fail(f"bad expr: {exc}") from exc
    if node.kind != "vector":
        raise fail(f"expr must return an instant vector, not a {node.kind}")
    durations = {}
    for key in ("for", "keep_firing_for"):
        try:
            durations[key] = parse_duration(entry[key], key) if key in entry else 0.0
        except ValueError as exc:
            raise fail(str(exc)) from exc
    labels = _string_map(entry.get("labels"), "labels", fail)
    for label in labels:
        if not _LABEL_NAME.match(label) or label in _RESERVED_LABELS or label.startswith("__"):
            raise fail(f"invalid label name {label!r}")
    annotations = _string_map(entry.get("annotations"), "annotations", fail)
    label_templates = _templates(labels, "label", fail)
    annotation_templates = _templates(annotations, "annotation", fail)
    return Rule(
        name=name,
        expr=expr.strip(),
        group=group,
        interval=interval,
        for_=durations["for"],
        keep_firing_for=durations["keep_firing_for"],
        labels=labels,
        annotations=annotations,
        label_templates=label_templates,
        annotation_templates=annotation_templates,
    )


def _string_map(value: Any, what: str, fail: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise fail(f"'{what}' must be a mapping")
    out = {}
    for key, item in value.items():
        if not isinstance(key, str) or not isinstance(item, str | int | float):
            raise fail(f"'{what}' entries must be strings, got {key!r}: {item!r}")
        out[key] = str(item)
    return out


def _templates(values: dict[str, str], what: str, fail: Any) -> dict[str, Template]:
    out = {}
    for key, text in values.items():
        try:
            out[key] = Template(text)
        except TemplateError as exc:
            raise fail(f"{what} {key!r}: {exc}") from exc
    return out
