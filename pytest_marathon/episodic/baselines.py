"""AIOpsLab's non-model baselines (§3.4: MKSMC for detection, PDiagnose for localization), written
from their papers as agents of the episodic interface: they read the exports get_metrics and
get_traces name (as AIOpsLab's baselines read its CSV exports) and submit.

* MKSMC (Çetin and Taşgın, "Anomaly detection with multivariate K-sigma score using Monte Carlo",
  UBMK 2020): each series is scored by its k-sigma distance from a reference window, the scores of
  one instant are averaged into a multivariate score, and the alarm threshold is the (1 - alpha)
  quantile of the largest score of Monte Carlo draws of reference instants; "Yes" when the recent
  window's largest score passes it.
* PDiagnose (Hou et al., "Diagnosing Performance Issues in Microservices with Heterogeneous Data
  Source", ISPA 2021): every data source votes for the services it finds anomalous — metrics by
  kernel density estimation against the reference window, traces by span latency and errors
  against the reference spans — and the services are ranked by votes, then by how far out they lie.

Windows: the exports cover the last ten minutes; the newest RECENT_S seconds are tested against
everything before them. Neither baseline knows when the fault came.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from typing import Any

from pytest_marathon.determinism import rng_for

EXPORT_MINUTES = 10
RECENT_S = 120.0
MC_DRAWS = 500
ALPHA = 0.01


def _block(call: str) -> str:
    return f"```\n{call}\n```"


def _export_path(state: str, api: str) -> str | None:
    found = re.search(rf'{api}\("([^"]+)"\)', state)
    return found.group(1) if found else None


def parse_metrics(text: str) -> tuple[dict[tuple[str, str], list[tuple[float, float]]], float]:
    series: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    newest = -math.inf
    for line in text.splitlines()[1:]:
        parts = line.split(",")
        if len(parts) != 4:
            continue
        t, service, metric, value = float(parts[0]), parts[1], parts[2], float(parts[3])
        series[(service, metric)].append((t, value))
        newest = max(newest, t)
    return dict(series), newest


def parse_spans(text: str) -> tuple[list[tuple[float, str, str, float, bool]], float]:
    spans = []
    newest = -math.inf
    for line in text.splitlines()[1:]:
        parts = line.split(",")
        if len(parts) < 7:
            continue
        t, service, kind = float(parts[0]), parts[2], parts[4]
        spans.append((t, service, kind, float(parts[5]), parts[6] == "1"))
        newest = max(newest, t)
    return spans, newest


def _mean_std(values: list[float]) -> tuple[float, float]:
    mean = sum(values) / len(values)
    return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


class _Reader:
    """The four reads both baselines start with; `plan` continues once the exports are in."""

    name = "baseline"

    def __init__(self) -> None:
        self.namespace = ""
        self.task = ""
        self.metrics_text = ""
        self.traces_text = ""
        self.turn = 0

    def init_context(self, problem_desc: str, instructions: str, apis: dict[str, str]) -> None:
        found = re.search(r"Namespace: (\S+)", problem_desc)
        self.namespace = found.group(1) if found else ""
        first = problem_desc.split("\n", 1)[0]
        self.task = next((task for word, task in (("detect", "detection"), ("localize", "localization"))
                          if word in first), "")

    async def get_action(self, state: str) -> str:
        self.turn += 1
        if self.turn == 1:
            return _block(f'get_metrics("{self.namespace}", {EXPORT_MINUTES})')
        if self.turn == 2:
            return _block(f'read_metrics("{_export_path(state, "read_metrics")}")')
        if self.turn == 3:
            self.metrics_text = state
            return _block(f'get_traces("{self.namespace}", {EXPORT_MINUTES})')
        if self.turn == 4:
            return _block(f'read_traces("{_export_path(state, "read_traces")}")')
        self.traces_text = state
        return self.submit()

    def submit(self) -> str:
        raise NotImplementedError


class MksmcAgent(_Reader):
    name = "mksmc"

    def __init__(self, seed: int = 1) -> None:
        super().__init__()
        self.seed = seed

    def anomalous(self) -> bool:
        series, newest = parse_metrics(self.metrics_text)
        cut = newest - RECENT_S
        scores: dict[float, list[float]] = defaultdict(list)
        for points in series.values():
            reference = [v for t, v in points if t <= cut]
            if len(reference) < 4:
                continue
            mean, std = _mean_std(reference)
            scale = std if std > 1e-9 else max(abs(mean) * 0.01, 1e-6)
            for t, v in points:
                scores[t].append(abs(v - mean) / scale)
        combined = {t: sum(s) / len(s) for t, s in scores.items() if s}
        past = [combined[t] for t in sorted(combined) if t <= cut]
        recent = [combined[t] for t in sorted(combined) if t > cut]
        if not past or not recent:
            return False
        rng = rng_for(self.seed, "mksmc")
        draws = [max(rng.choice(past) for _ in range(len(recent))) for _ in range(MC_DRAWS)]
        return max(recent) > _quantile(draws, 1.0 - ALPHA)

    def submit(self) -> str:
        if self.task == "detection":
            return _block(f'submit("{"Yes" if self.anomalous() else "No"}")')
        return _block("submit([])")


class PDiagnoseAgent(_Reader):
    name = "pdiagnose"

    def votes(self) -> list[tuple[str, int, float]]:
        """(service, votes, strength) ranked."""
        votes: dict[str, int] = defaultdict(int)
        strength: dict[str, float] = defaultdict(float)
        series, newest = parse_metrics(self.metrics_text)
        cut = newest - RECENT_S
        for (service, _metric), points in series.items():
            reference = [v for t, v in points if t <= cut]
            recent = [v for t, v in points if t > cut]
            if len(reference) < 4 or not recent:
                continue
            outlier = _kde_outlier(reference, recent)
            if outlier > 0.0:
                votes[service] += 1
                strength[service] += outlier
        spans, newest_span = parse_spans(self.traces_text)
        cut = newest_span - RECENT_S
        by_service: dict[str, tuple[list[float], list[float], int, int, int, int]] = {}
        for t, service, kind, ms, error in spans:
            if kind not in ("SPAN_KIND_SERVER", "SPAN_KIND_CONSUMER"):
                continue
            ref, rec, ref_err, rec_err, ref_n, rec_n = by_service.get(service, ([], [], 0, 0, 0, 0))
            if t <= cut:
                ref.append(ms)
                by_service[service] = (ref, rec, ref_err + error, rec_err, ref_n + 1, rec_n)
            else:
                rec.append(ms)
                by_service[service] = (ref, rec, ref_err, rec_err + error, ref_n, rec_n + 1)
        for service, (ref, rec, ref_err, rec_err, ref_n, rec_n) in by_service.items():
            if not rec_n:
                continue
            error_jump = rec_err / rec_n - (ref_err / ref_n if ref_n else 0.0)
            if error_jump > 0.05:
                votes[service] += 1
                strength[service] += error_jump * 10.0
            if len(ref) >= 10 and len(rec) >= 3 and _quantile(rec, 0.9) > 1.5 * _quantile(ref, 0.99):
                votes[service] += 1
                strength[service] += _quantile(rec, 0.9) / max(_quantile(ref, 0.99), 1e-6)
        return sorted(((s, votes[s], strength[s]) for s in votes), key=lambda x: (-x[1], -x[2], x[0]))

    def submit(self) -> str:
        if self.task == "localization":
            ranked = [service for service, _, _ in self.votes()[:3]]
            return _block(f"submit({ranked!r})".replace("'", '"'))
        if self.task == "detection":
            return _block(f'submit("{"Yes" if self.votes() else "No"}")')
        return _block("submit([])")


def _kde_outlier(reference: list[float], recent: list[float]) -> float:
    """How far the recent values lie outside the reference's density (0: inside): Gaussian KDE
    with Silverman's bandwidth; a recent value is out when its density is below the ALPHA
    quantile of the reference points' own densities."""
    mean, std = _mean_std(reference)
    n = len(reference)
    bandwidth = 1.06 * std * n ** -0.2 if std > 1e-9 else max(abs(mean) * 0.05, 1e-6)

    def density(x: float) -> float:
        return sum(math.exp(-0.5 * ((x - r) / bandwidth) ** 2) for r in reference) / (n * bandwidth)

    floor = _quantile([density(r) for r in reference], ALPHA)
    outside = [abs(v - mean) / (std if std > 1e-9 else bandwidth) for v in recent if density(v) < floor * 0.5]
    return sum(outside) / len(recent) if len(outside) * 2 >= len(recent) else 0.0


def make_baseline(spec: str) -> Any:
    return {"mksmc": MksmcAgent, "pdiagnose": PDiagnoseAgent}[spec]()
