"""The alert engine: a rule pack evaluated over a series store in virtual time.

The runner calls `evaluate(t)` every evaluation interval; each call runs every rule at t (sharing
one sub-expression cache), advances each rule's Prometheus state machine, and returns the
firing/resolved transitions as bundle records. `history()` is what agents see through
`get_alerts`: every instance that ever fired, with its state.
"""

from __future__ import annotations

from typing import Any

from pytest_marathon.alerting.lifecycle import AlertInstance, AlertLabels, RuleState
from pytest_marathon.alerting.promql import NAME, PromQLEngine, PromQLError
from pytest_marathon.alerting.rules import Rule, RulePack
from pytest_marathon.tsdb import SeriesStore

#: Rendered samples kept per rule before its memo starts over (values that never repeat would
#: otherwise grow it for the whole run).
_RENDERED_CAP = 4096


class AlertEvaluationError(RuntimeError):
    """A rule whose expression failed at evaluation time (Prometheus marks the rule unhealthy
    and leaves its alerts as they were; so do we, and record the error)."""


class AlertEngine:
    """Evaluates a `RulePack` against a `SeriesStore`.

    `namespace` is the application's namespace: alerts that carry a different `namespace`
    label (another tenant on a shared Prometheus) are never reported.
    """

    def __init__(
        self, pack: RulePack, store: SeriesStore | None, namespace: str, interval: float = 15.0,
        *, promql: Any = None,
    ) -> None:
        """`promql`: an evaluator with `vector(query, t)` to use instead of one over `store`
        (a remote Prometheus, when the backend has no store)."""
        if interval <= 0:
            raise ValueError(f"evaluation interval must be positive, got {interval}")
        mismatched = sorted({r.group for r in pack.rules if r.interval != interval})
        if mismatched:
            raise ValueError(
                f"rule groups {', '.join(mismatched)} of {pack.source} declare an interval other "
                f"than the engine's {interval:g}s"
            )
        self.pack = pack
        self.namespace = namespace
        self.interval = interval
        if promql is None and store is None:
            raise ValueError("the alert engine needs a series store or a PromQL evaluator")
        self.promql = promql if promql is not None else PromQLEngine(store)
        self._states = [RuleState(rule) for rule in pack.rules]
        self._fired: list[AlertInstance] = []
        self._last_t: float | None = None
        self.errors: list[dict[str, Any]] = []
        # per rule: (sample labels, value bits) -> (alert labels, annotations) already rendered
        self._rendered: dict[int, dict[tuple[Any, str], tuple[AlertLabels, dict[str, str]]]] = {}

    def evaluate(self, t: float) -> list[dict[str, Any]]:
        """Run every rule at t; the alert state changes at t as `alerts.jsonl` records."""
        if self._last_t is not None and t <= self._last_t:
            raise ValueError(f"evaluation times must increase: {t} after {self._last_t}")
        self._last_t = t
        events: list[dict[str, Any]] = []
        for state in self._states:
            try:
                results = self._rule_results(state.rule, t)
            except (PromQLError, AlertEvaluationError) as exc:
                self.errors.append({"t": t, "alertname": state.rule.name, "error": str(exc)})
                continue
            for kind, alert in state.advance(t, results):
                if not self._ours(alert):
                    continue
                if kind == "firing":
                    self._fired.append(alert)
                events.append(alert.event(t, kind))
        return events

    def history(self) -> list[dict[str, Any]]:
        """Every alert instance that ever fired, ordered by fired_at then id."""
        ordered = sorted(self._fired, key=lambda a: (a.fired_at, a.id))
        return [a.summary() for a in ordered]

    @property
    def rule_states(self) -> list[RuleState]:
        """Each rule with its active (pending or firing) alerts, in pack order: what an API
        listing rules and alerts reports, as Prometheus' /api/v1/rules does."""
        return list(self._states)

    @property
    def last_evaluation(self) -> float | None:
        """The time of the newest evaluation, None before the first."""
        return self._last_t

    def firing(self) -> list[dict[str, Any]]:
        """The instances firing now, in history order."""
        return [a for a in self.history() if a["state"] == "firing"]

    # ------------------------------------------------------------------------------------------
    def _ours(self, alert: AlertInstance) -> bool:
        namespace = dict(alert.labels).get("namespace")
        return namespace is None or namespace == self.namespace

    def _rule_results(
        self, rule: Rule, t: float
    ) -> dict[AlertLabels, tuple[float, dict[str, str]]]:
        results: dict[AlertLabels, tuple[float, dict[str, str]]] = {}
        memo = self._rendered.get(id(rule))
        if memo is None or len(memo) > _RENDERED_CAP:
            memo = self._rendered[id(rule)] = {}
        for sample_labels, value in self.promql.vector(rule.expr, t):
            # Templates are pure functions of a sample's labels and value, and most samples
            # repeat both from one evaluation to the next: render each pair once. The value's
            # bits are in the key, so 0.0 and -0.0 (equal as numbers) render apart; NaNs are
            # rendered every time.
            memo_key = (sample_labels, value.hex()) if type(value) is float and value == value else None
            done = memo.get(memo_key) if memo_key is not None else None
            if done is not None:
                key, annotations = done
                if key in results:
                    raise AlertEvaluationError(
                        "vector contains metrics with the same labelset after applying alert labels"
                    )
                results[key] = (value, dict(annotations))
                continue
            template_labels = dict(sample_labels)
            labels = {k: v for k, v in sample_labels if k != NAME}
            for name, template in rule.label_templates.items():
                expanded = template.render(template_labels, value)
                if expanded:
                    labels[name] = expanded
                else:
                    labels.pop(name, None)
            labels["alertname"] = rule.name
            key = tuple(sorted(labels.items()))
            if key in results:
                raise AlertEvaluationError(
                    "vector contains metrics with the same labelset after applying alert labels"
                )
            annotations = {
                name: template.render(template_labels, value)
                for name, template in rule.annotation_templates.items()
            }
            results[key] = (value, annotations)
            if memo_key is not None:
                memo[memo_key] = (key, dict(annotations))
        return results
