"""Parity with real Prometheus: `promtool test rules` files from recorded series.

`build_unit_test` replays a series store through our `AlertEngine` and writes a promtool unit
test that expects, at every evaluation, exactly the alerts (labels and rendered annotations) our
engine has firing. If promtool passes the test, Prometheus' own rule engine agrees with ours on
that data. Sample times must not fall on the evaluation grid: Prometheus 2.x range selectors are
closed on the left and 3.x (and our store) open, so samples on range boundaries would make the
comparison depend on the version rather than on the rules.
"""

from __future__ import annotations

import math
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pytest_marathon import yamlio
from pytest_marathon.alerting.engine import AlertEngine
from pytest_marathon.alerting.rules import RulePack
from pytest_marathon.tsdb import SeriesStore, is_stale


@dataclass
class UnitTest:
    """A promtool unit-test document and what it checks."""

    document: dict[str, Any]
    evaluations: int
    firing_counts: dict[str, int] = field(default_factory=dict)
    errors: list[dict[str, Any]] = field(default_factory=list)
    annotations: bool = True


def promtool_path() -> str | None:
    return shutil.which("promtool")


def _series_text(values: list[float | None]) -> str:
    """Promtool's series notation, with runs of missing samples as `_xN`."""
    out: list[str] = []
    gap = 0
    for v in values:
        if v is None:
            gap += 1
            continue
        if gap:
            out.append("_" if gap == 1 else f"_x{gap}")
            gap = 0
        if is_stale(v):
            out.append("stale")
        elif math.isnan(v):
            out.append("NaN")
        elif math.isinf(v):
            out.append("+Inf" if v > 0 else "-Inf")
        else:
            out.append(repr(v))
    return " ".join(out)


def _selector(labels: tuple[tuple[str, str], ...]) -> str:
    name = dict(labels)["__name__"]
    rest = ", ".join(
        f'{k}="{v.replace(chr(92), chr(92) * 2).replace(chr(34), chr(92) + chr(34))}"'
        for k, v in labels
        if k != "__name__"
    )
    return f"{name}{{{rest}}}"


def build_unit_test(
    pack: RulePack,
    store: SeriesStore,
    *,
    rule_file: str,
    start: float,
    end: float,
    interval: float = 15.0,
    resolution: float = 5.0,
    namespace: str = "boutique",
    annotations: bool = True,
) -> UnitTest:
    """Evaluate `pack` on `store` at start, start+interval, …, end and build the promtool test.

    Promtool time 0 is `start`; input samples are placed on a `resolution` grid, so every sample
    time minus `start` must be a multiple of it and must not be a multiple of `interval`.

    With `annotations=False` only the firing alert sets are compared (promtool then gets the pack
    without annotations): promtool loads series in random order, so sums over long real runs can
    differ from ours in the last bit and flip a rounded `{{ $value }}` without any rule disagreeing."""
    engine = AlertEngine(pack, store, namespace, interval)
    steps = int(math.floor((end - start) / interval + 1e-9))
    input_series = []
    for series in sorted(store, key=lambda s: s.key):
        slots: dict[int, float] = {}
        for t, v in zip(series.times, series.values):
            if t < start or t > end:
                continue
            offset = t - start
            index = round(offset / resolution)
            if abs(index * resolution - offset) > 1e-6:
                raise ValueError(f"sample at {t} is off the {resolution:g}s grid from {start}")
            if abs(offset / interval - round(offset / interval)) < 1e-9:
                raise ValueError(f"sample at {t} falls on the evaluation grid; shift `start`")
            slots[index] = v
        if not slots:
            continue
        last = max(slots)
        values = [slots.get(i) for i in range(last + 1)]
        input_series.append({"series": _selector(series.key), "values": _series_text(values)})
    tests = []
    firing_counts = {rule.name: 0 for rule in pack.rules}
    for step in range(steps + 1):
        t = start + step * interval
        engine.evaluate(t)
        firing = engine.firing()
        by_rule: dict[str, list[dict[str, Any]]] = {rule.name: [] for rule in pack.rules}
        for alert in firing:
            labels = {k: v for k, v in alert["labels"].items() if k != "alertname"}
            expected_alert: dict[str, Any] = {"exp_labels": labels}
            if annotations:
                expected_alert["exp_annotations"] = alert["annotations"]
            by_rule[alert["alertname"]].append(expected_alert)
        for name, expected in by_rule.items():
            if expected:
                firing_counts[name] += 1
            tests.append(
                {"eval_time": f"{int(round(step * interval))}s", "alertname": name,
                 "exp_alerts": expected}
            )
    document = {
        "rule_files": [rule_file],
        "evaluation_interval": f"{int(interval)}s",
        "tests": [
            {
                "interval": f"{int(resolution)}s",
                "input_series": input_series,
                "alert_rule_test": tests,
            }
        ],
    }
    return UnitTest(document, steps + 1, firing_counts, list(engine.errors), annotations)


def _pack_text(pack: RulePack, annotations: bool) -> str:
    if annotations:
        return pack.text
    document = yamlio.safe_load(pack.text)
    for group in document.get("groups", []):
        for rule in group.get("rules", []):
            rule.pop("annotations", None)
    return yaml.safe_dump(document, sort_keys=False, width=1 << 20)


def run_promtool(test: UnitTest, pack: RulePack, workdir: str | Path) -> tuple[bool, str]:
    """Write the pack and the test into `workdir` and run `promtool test rules`."""
    binary = promtool_path()
    if binary is None:
        raise FileNotFoundError("promtool is not installed (Debian package 'prometheus')")
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    rule_text = _pack_text(pack, test.annotations)
    (workdir / test.document["rule_files"][0]).write_text(rule_text, encoding="utf-8")
    test_file = workdir / "parity.test.yaml"
    test_file.write_text(yaml.safe_dump(test.document, sort_keys=False, width=1 << 20))
    proc = subprocess.run(
        [binary, "test", "rules", test_file.name],
        cwd=workdir, capture_output=True, text=True, timeout=600, check=False,
    )
    return proc.returncode == 0, proc.stdout + proc.stderr
