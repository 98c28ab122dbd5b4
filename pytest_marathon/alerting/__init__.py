"""Alerting: the Prometheus rule pack, a PromQL evaluator over the twin's store, and the
Prometheus alert lifecycle. See docs/internals.md ("Alerting")."""

from pytest_marathon.alerting.engine import AlertEngine, AlertEvaluationError
from pytest_marathon.alerting.promql import PromQLEngine, PromQLError
from pytest_marathon.alerting.rules import (
    Rule,
    RuleFileError,
    RulePack,
    load_rule_file,
    load_rule_pack,
)

__all__ = [
    "AlertEngine",
    "AlertEvaluationError",
    "PromQLEngine",
    "PromQLError",
    "Rule",
    "RuleFileError",
    "RulePack",
    "load_rule_file",
    "load_rule_pack",
]
