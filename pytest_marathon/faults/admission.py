"""Admission validation (paper Appendix C): a fault enters the catalog only if, injected alone on
a fresh twin, it is observable, alerting, fair to repair, and cleanly recoverable.

One entry runs this timeline on its own backend (virtual seconds after a short warm-up):

    before window (5 min) | injected: after window (5 min) | reverted: recovery (10 min)
    | injected again: the recorded remedy applied through the agent actions, probe must heal

The second injection keeps the remedy check from masking the orchestrator's own recovery. The
measured affected scope (the workloads whose signals moved) is returned for storing in the entry.
Entries are independent, so the catalog is validated in parallel processes.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pytest_marathon.backends import create_backend
from pytest_marathon.backends.base import Backend, BackendError
from pytest_marathon.faults.alerts import AlertWatcher
from pytest_marathon.faults.catalog import CATEGORIES, Catalog, CatalogEntry, catalog_root
from pytest_marathon.faults.orchestrator import Orchestrator
from pytest_marathon.faults.scenario import Scenario
from pytest_marathon.faults.schedule import Schedule, ScheduledFault

WINDOW = 300.0
RECOVERY = 600.0  # a crash-looping pod may wait out a 300 s back-off before it comes back
WARMUP = 120.0
REMEDY_AFTER = 90.0  # how long the fault runs before the remedy is applied
REMEDY_GRACE = 240.0  # how long the remedy has to make the probe healthy
SAMPLE_EVERY = 15.0
ADMISSION_SEED = 1
MIN_SERVER_ERRORS_PER_MIN = 4.0
MIN_ERROR_LOGS_PER_MIN = 10.0
MAX_NO_REMEDY_SHARE = 0.15


@dataclass
class Verdict:
    """The outcome for one entry: admitted or not, why, and what was measured."""

    entry_id: str
    category: str
    target: str
    remedy_none: bool
    admitted: bool = False
    reasons: list[str] = field(default_factory=list)
    scope: list[str] = field(default_factory=list)
    measured: dict[str, Any] = field(default_factory=dict)


@dataclass
class CatalogReport:
    app: str
    verdicts: list[Verdict]

    @property
    def admitted(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.admitted]

    def catalog_rule_failures(self) -> list[str]:
        """The paper's catalog-level requirements on the admitted entries."""
        admitted = self.admitted
        failures = []
        if len(admitted) < 150:
            failures.append(f"{len(admitted)} admitted entries (need >= 150)")
        missing = [c for c in CATEGORIES if not any(v.category == c for v in admitted)]
        if missing:
            failures.append(f"no admitted entry in {', '.join(missing)}")
        code = [v for v in admitted if v.category == "code"]
        services = {v.target for v in code}
        if len(code) < 30 or len(services) < 8:
            failures.append(f"{len(code)} code faults on {len(services)} services (need 30 on 8)")
        if admitted:
            share = sum(v.remedy_none for v in admitted) / len(admitted)
            if share > MAX_NO_REMEDY_SHARE:
                failures.append(f"{share:.0%} of admitted entries have remedy none (max 15%)")
        return failures

    def passes_catalog_rules(self) -> bool:
        return not self.catalog_rule_failures()

    def summary(self, catalog_rules: bool = True) -> str:
        lines = [f"{len(self.admitted)} of {len(self.verdicts)} entries admitted"]
        if catalog_rules:
            lines += [f"catalog rule: {f}" for f in self.catalog_rule_failures()]
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        return {
            "app": self.app,
            "admitted": len(self.admitted),
            "total": len(self.verdicts),
            "catalog_rule_failures": self.catalog_rule_failures(),
            "entries": [asdict(v) for v in self.verdicts],
        }


def validate_catalog(
    catalog: Catalog,
    *,
    workers: int = 2,
    on_verdict: Callable[[Verdict], None] | None = None,
) -> CatalogReport:
    """Validate every entry, each alone on its own fresh backend, in `workers` processes.

    `on_verdict` hears of each entry as soon as it is judged (in completion order), because a
    whole catalog takes minutes; the report keeps the catalog's order."""
    entries = list(catalog)
    if workers <= 1 or len(entries) <= 1:
        verdicts = []
        for entry in entries:
            verdicts.append(validate_entry(entry))
            if on_verdict is not None:
                on_verdict(verdicts[-1])
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            futures = {pool.submit(validate_entry, entry): entry.id for entry in entries}
            by_id: dict[str, Verdict] = {}
            for future in as_completed(futures):
                verdict = future.result()
                by_id[futures[future]] = verdict
                if on_verdict is not None:
                    on_verdict(verdict)
            verdicts = [by_id[entry.id] for entry in entries]
    return CatalogReport(catalog.app, verdicts)


def validate_entry(entry: CatalogEntry, seed: int = ADMISSION_SEED) -> Verdict:
    """Run the admission timeline for one entry; never raises for a bad fault (it is rejected)."""
    verdict = Verdict(entry.id, entry.category, entry.target, entry.remedy is None)
    try:
        _Trial(entry, create_backend(entry.app, seed), verdict).run()
    except (BackendError, ValueError, KeyError, LookupError) as exc:
        verdict.reasons.append(f"could not run: {type(exc).__name__}: {exc}")
    verdict.admitted = not verdict.reasons
    return verdict


def store_scopes(app: str, report: CatalogReport, root: str | Path | None = None) -> int:
    """Write each admitted entry's measured scope into its YAML file (in place, keeping the rest
    of the file as written). Returns how many files changed."""
    folder = Path(root) if root is not None else Path(str(catalog_root(app)))
    changed = 0
    for verdict in report.admitted:
        path = folder / f"{verdict.entry_id}.yaml"
        text = path.read_text(encoding="utf-8")
        line = "scope: [" + ", ".join(verdict.scope) + "]\n"
        new = (
            re.sub(r"(?m)^scope:.*\n(?:- .*\n)*", line, text)
            if "\nscope:" in text
            else (text + line)
        )
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed += 1
    return changed


class _Trial:
    """One entry's admission run on one backend."""

    def __init__(self, entry: CatalogEntry, backend: Backend, verdict: Verdict) -> None:
        self.entry = entry
        self.backend = backend
        self.verdict = verdict
        self.alerts = AlertWatcher(backend)
        self.probe_log: list[tuple[float, bool]] = []
        topology = backend.topology()
        self.callers = _callers(topology, entry.target)
        self.entry_point = str(topology.get("entrypoint", {}).get("deployment", ""))
        self.workloads = backend.workloads()

    def fail(self, reason: str) -> None:
        self.verdict.reasons.append(reason)

    def run(self) -> None:
        e, b, m = self.entry, self.backend, self.verdict.measured
        start = b.now + WARMUP
        inject = start + WINDOW
        revert = inject + WINDOW
        recovered = revert + RECOVERY
        again = recovered + SAMPLE_EVERY
        remedy_at = again + REMEDY_AFTER
        end = remedy_at + REMEDY_GRACE
        before_value = None
        first = ScheduledFault("f01", e, inject, revert)
        second = ScheduledFault("f02", e, again, end)
        orchestrator = Orchestrator(b, _one_fault_schedule(e.app, (first, second)))
        try:
            self.advance(orchestrator, start)
            before = self.observe(start, inject)
            before_value = b.artifact_value(e.artifact)
            self.advance(orchestrator, revert - SAMPLE_EVERY)
            injected = [h for h in orchestrator.history() if h["fault_id"] == "f01"]
            if not injected or not injected[0]["ok"]:
                self.fail(
                    f"injection failed: {injected[0]['message'] if injected else 'never ran'}"
                )
                return
            after = self.observe(inject, revert)
            self.judge_effect(before, after, inject, revert)
            self.advance(orchestrator, recovered)
            self.judge_recovery(before_value, recovered)
            self.advance(orchestrator, remedy_at)
            self.judge_remedy(orchestrator, remedy_at, end)
        finally:
            orchestrator.finish()
        m["timeline"] = {"inject": inject, "revert": revert, "remedy": remedy_at, "end": end}

    # the clock ------------------------------------------------------------------------------
    def advance(self, orchestrator: Orchestrator, until: float) -> None:
        tick = self.backend.tick_seconds
        t = self.backend.now
        while t < until - 1e-9:
            t = min(until, t + tick)
            t = math.floor(t / tick + 1e-9) * tick if t < until else until
            orchestrator.step(t)
            self.backend.advance_to(t)
            if abs(t / SAMPLE_EVERY - round(t / SAMPLE_EVERY)) < 1e-9:
                self.alerts.evaluate(t)
                self.probe_log.append((t, bool(self.backend.probe(self.entry.probe))))

    # evidence -------------------------------------------------------------------------------
    def observe(self, since: float, until: float) -> dict[str, Any]:
        """Per-workload signal counts over one window."""
        b = self.backend
        minutes = (until - since) / 60.0
        errors = _server_errors(b, since, until, self.entry_point)
        logs = b.logs(since=since, until=until, level="error", limit=100_000)
        return {
            "message": self.message_count(since, until),
            "server_errors_per_min": {w: n / minutes for w, n in errors.items()},
            "error_logs_per_min": {
                w: sum(1 for line in logs if line.get("service") == w) / minutes
                for w in self.workloads
            },
            "restarted": _restarted(b, since, until),
            "sli": [s for s in b.sli_samples(since) if s.t <= until],
        }

    def message_count(self, since: float, until: float) -> int:
        """Occurrences of the recorded message in the emitting service's logs, or in events and
        pod states of the target (kubelet reports OOMKilled and probe failures there)."""
        e, b = self.entry, self.backend
        count = len(
            b.logs(
                service=e.log_service,
                since=since,
                until=until,
                contains=e.log_message,
                limit=100_000,
            )
        )
        for event in b.events(since=since, limit=100_000):
            if event.get("t", since) > until:
                continue
            involved = str(event.get("involvedObject", {}).get("name", ""))
            if involved.startswith(e.target) and e.log_message in str(event.get("message", "")):
                count += 1
        return count

    def judge_effect(
        self, before: dict[str, Any], after: dict[str, Any], since: float, until: float
    ) -> None:
        e, m = self.entry, self.verdict.measured
        m["message_before"], m["message_after"] = before["message"], after["message"]
        if e.log_service not in {e.target, *self.callers, *e.culprits}:
            self.fail(f"message emitter {e.log_service} is neither the target nor on a call path to it")
        if before["message"]:
            self.fail(f"message {e.log_message!r} already present before the change")
        if not after["message"]:
            self.fail(f"message {e.log_message!r} from {e.log_service} never appeared")
        served = [s for s in after["sli"] if s.q > 0]
        failed = sum(s.e for s in served) / len(served) if served else 1.0
        m["failed_fraction_after"] = round(failed, 4)
        if failed >= 0.95:
            self.fail(f"the app stopped serving (failed fraction {failed:.2f})")
        new_errors = sum(
            max(
                0.0,
                after["server_errors_per_min"].get(w, 0.0)
                - before["server_errors_per_min"].get(w, 0.0),
            )
            for w in self.workloads
        )
        new_logs = sum(
            max(0.0, after["error_logs_per_min"][w] - before["error_logs_per_min"][w])
            for w in self.workloads
        )
        restarted = sorted(after["restarted"] - before["restarted"])
        m["screening"] = {
            "server_errors_per_min": round(new_errors, 2),
            "error_logs_per_min": round(new_logs, 2),
            "restarted": restarted,
        }
        if (
            new_errors < MIN_SERVER_ERRORS_PER_MIN
            and new_logs < MIN_ERROR_LOGS_PER_MIN
            and not restarted
        ):
            self.fail(
                f"no screening criterion: {new_errors:.1f} server errors/min, "
                f"{new_logs:.1f} new error logs/min, no restart"
            )
        moved = {
            w
            for w in self.workloads
            if after["error_logs_per_min"][w] > before["error_logs_per_min"][w] + 0.5
            or after["server_errors_per_min"].get(w, 0.0)
            > before["server_errors_per_min"].get(w, 0.0) + 0.5
        }
        fired = self.alerts.workloads_fired(since, until + 60.0)
        scope = sorted(
            ({*e.culprits} | moved | set(restarted) | fired)
            & (set(self.workloads) | set(e.culprits))
        )
        self.verdict.scope = scope
        m["alerts"] = self.alerts.names_fired(since, until + 60.0)
        if not fired & set(scope):
            self.fail("no alert attributable to the fault fired")
        unhealthy = [t for t, ok in self.probe_log if since <= t <= until and not ok]
        m["probe_failed_samples"] = len(unhealthy)
        if not unhealthy:
            self.fail("the symptom probe never failed")

    def judge_recovery(self, before_value: str | None, at: float) -> None:
        e, b, m = self.entry, self.backend, self.verdict.measured
        now_value = b.artifact_value(e.artifact)
        if e.mechanism == "change" and now_value != before_value:
            self.fail(f"revert left {e.artifact} = {now_value!r} (was {before_value!r})")
        tail = at - 120.0
        if not b.probe({"kind": "deployment_ready", "deployment": _deployment(e, self.workloads)}):
            self.fail("target not ready after the revert")
        if not b.probe(e.probe):
            self.fail("symptom probe still failing after the revert")
        late = [s for s in b.sli_samples(tail) if s.q > 0]
        if late and sum(s.e for s in late) / len(late) > 0.05:
            self.fail("requests still failing after the revert")
        residue = self.message_count(tail, at)
        m["message_after_recovery"] = residue
        if residue:
            self.fail(f"message still logged {residue} times after the revert")

    def judge_remedy(self, orchestrator: Orchestrator, remedy_at: float, end: float) -> None:
        e = self.entry
        if e.remedy is None:
            self.verdict.measured["remedy"] = "none"
            return
        for step in e.remedy:
            result = apply_remedy(self.backend, step)
            if not result:
                self.fail(f"remedy step {step['tool']} was refused")
                return
        self.advance(orchestrator, end - SAMPLE_EVERY)
        tail = [ok for t, ok in self.probe_log if t >= end - 60.0]
        self.verdict.measured["remedy_probe_tail"] = tail
        if not tail or not all(tail):
            self.fail("the recorded remedy did not make the probe healthy")


def apply_remedy(backend: Backend, step: Mapping[str, Any]) -> bool:
    """Carry out one remedy step the way the agent tool of that name would."""
    args = dict(step.get("args", {}))
    actions: dict[str, Callable[[], Any]] = {
        "rollback_service": lambda: backend.rollback(args["service"], args.get("to_revision")),
        "restart_service": lambda: backend.restart(args["service"]),
        "scale_service": lambda: backend.scale(args["service"], int(args["replicas"])),
        "update_config": lambda: backend.update_config(
            args["service"],
            env=args.get("env"),
            resources=args.get("resources"),
            change_cause=args.get("change_cause", ""),
        ),
        "set_feature_flag": lambda: backend.set_feature_flag(args["name"], str(args["value"])),
    }
    if step["tool"] not in actions:
        return False
    return bool(actions[step["tool"]]().ok)


def _one_fault_schedule(app: str, faults: tuple[ScheduledFault, ...]) -> Schedule:
    last = max(f.revert_at for f in faults)
    scenario = Scenario("admission", "", 0.0, last, 0.0, len(faults), 1.0, 1.0, 1.0, 1.0, 1)
    return Schedule(app, scenario, ADMISSION_SEED, faults)


def _deployment(entry: CatalogEntry, workloads: list[str]) -> str:
    return entry.target if entry.target in workloads else entry.culprits[0]


def _callers(topology: Mapping[str, Any], target: str) -> set[str]:
    """The workloads on a call path to `target` from the backend's topology (edges caller ->
    callee). Not only direct callers: a service may return a dependency's error without logging
    it (Online Boutique's checkoutservice does), so the first log line is further up the path."""
    edges = [(str(edge.get("source", edge.get("from")) or ""), str(edge.get("target", edge.get("to")) or ""))
             for edge in topology.get("edges", [])]
    callers: set[str] = set()
    frontier = {target}
    while frontier:
        found = {source for source, dest in edges if dest in frontier and source and source not in callers}
        found.discard(target)
        callers |= found
        frontier = found
    return callers


def _server_errors(
    backend: Backend, since: float, until: float, entry_point: str
) -> dict[str, float]:
    """Failed server-side requests per workload in (since, until], from the span-metrics
    counters of server spans: a non-OK gRPC code, or a 5xx of the entry point's HTTP span."""
    store = backend.store
    out: dict[str, float] = {}
    if store is None:
        return out
    for name, code_label, is_error in (
        (
            "traces_span_metrics_calls_total",
            "rpc_grpc_status_code",
            lambda c: c not in ("", "0", "OK"),
        ),
        (
            "traces_span_metrics_calls_total",
            "http_response_status_code",
            lambda c: c.isdigit() and int(c) >= 500,
        ),
    ):
        for series in store.series(name):
            labels = series.labels
            if labels.get("span_kind") != "SPAN_KIND_SERVER":
                continue
            if not is_error(str(labels.get(code_label, ""))):
                continue
            times, values = series.window(since - SAMPLE_EVERY, until)
            if len(values) == 0:
                continue
            first = values[0] if times[0] <= since else 0.0
            increase = max(0.0, values[-1] - first)
            workload = labels.get("service_name") or entry_point
            out[workload] = out.get(workload, 0.0) + increase
    return out


def _restarted(backend: Backend, since: float, until: float) -> set[str]:
    """Workloads whose containers restarted in (since, until], from kube-state-metrics (pod
    objects alone lose the count when a rollout replaces the pod)."""
    store = backend.store
    out: set[str] = set()
    if store is None:
        return out
    for series in store.series("kube_pod_container_status_restarts_total"):
        times, values = series.window(since - SAMPLE_EVERY, until)
        if len(values) >= 2 and values[-1] > values[0]:
            pod = series.labels.get("pod", "")
            out.add("-".join(pod.split("-")[:-2]))
    return out
