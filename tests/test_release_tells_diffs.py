"""No fault tells in what a release shows beyond its wording (issue 15, "No fault tells").

An ordinary code release must show a real diff in `get_source` (a rebuild of the same source
would show an empty one, so every non-empty diff would be a fault), in the same form as a code
fault's; and no change-cause may name a field (a variable, a probe setting) that only faults
change. Real pipelines ship behaviour-free commits (docstrings, comments, helpers ahead of use)
as ordinary releases; there is no upstream service source for that, the twin's diff format is
`difflib.unified_diff` with `a/`/`b/` headers (twin/engine.py `source_diff`, the `git diff`
shape).
"""

from __future__ import annotations

import dataclasses
import random
import re
from typing import Any

import pytest

from pytest_marathon.backends import create_backend
from pytest_marathon.faults import Orchestrator, load_catalog, schedule_for
from pytest_marathon.faults.background_changes import plan_change
from pytest_marathon.faults.benign_code import edits_for
from pytest_marathon.faults.phrasing import CODE_SUBJECTS
from pytest_marathon.faults.release_text import describe, fault_cause
from pytest_marathon.faults.scenario import load_scenario
from pytest_marathon.interface import InProcessClient, ToolSession

DIFF_LINE = re.compile(r"^(--- a/\S+|\+\+\+ b/\S+|@@ -\d+(,\d+)? \+\d+(,\d+)? @@.*|[ +\-].*|)$")
SERVICES = ("adservice", "cartservice", "checkoutservice", "currencyservice", "emailservice",
            "frontend", "paymentservice", "productcatalogservice", "recommendationservice",
            "shippingservice")


def _short_run_with_code_changes() -> tuple[Any, float]:
    """The first seed whose short run (16 background releases) has two code faults and three
    ordinary code releases in its first 20 minutes (found from the schedule alone, so a changed
    catalog moves the seed, not the test), and the time after the second code fault."""
    scenario = dataclasses.replace(load_scenario("short-10"), background_releases=16)
    for seed in range(1, 50):
        schedule = schedule_for("boutique", scenario, seed)
        code = sorted(f.inject_at for f in schedule.faults if f.entry.patch is not None)
        rebuilds = [r for r in schedule.background if r.kind == "rebuild" and r.at < 1200.0]
        if len(code) >= 2 and code[1] < 1200.0 and len(rebuilds) >= 3:
            return schedule, max(code[1], rebuilds[2].at) + 30.0
    raise AssertionError("no seed in 1..49 has code changes early enough")


def _shown_diffs(schedule: Any, until: float) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Every code release of the run with the answer the agent's `get_source` gives for it, read
    right after the release (new revision vs the one it replaced), as an agent reading the
    history would."""
    scenario = schedule.scenario
    backend = create_backend("boutique", schedule.seed)
    client = InProcessClient(ToolSession(backend, alerts=lambda: []))
    orchestrator = Orchestrator(backend, schedule)
    shown = []
    t = -scenario.warmup_s
    while t < until:
        t += backend.tick_seconds
        orchestrator.step(t)
        for record in orchestrator.take_releases():
            if not (record["created"] and (record["template"] or "").startswith("code.")):
                continue
            revisions = sorted(r["revision"] for r in backend.rollout_history(record["target"]))
            answer = client.call("get_source", service=record["target"],
                                 from_revision=revisions[-2], to_revision=record["revision"])
            shown.append((record, answer))
        backend.advance_to(t)
    orchestrator.finish()
    return shown


def _form(record: dict[str, Any], answer: dict[str, Any]) -> tuple[Any, ...]:
    """What could tell one diff from another apart from its content: the answer's keys, the
    diff's line kinds and file headers, the image tag's shape, the wording family."""
    lines = answer["diff"].splitlines()
    assert lines and all(DIFF_LINE.match(line) for line in lines), answer["diff"]
    headers = tuple(line for line in lines if line.startswith(("--- ", "+++ ")))
    tag = (record["image"] or "").partition(":")[2]
    return (tuple(sorted(answer)), headers[:2], re.sub(r"-[0-9a-f]{7}$", "-<build>", tag),
            record["template"].split(".")[0], record["ok"])


def test_an_ordinary_code_release_shows_a_real_diff_in_the_form_of_a_code_change() -> None:
    shown = _shown_diffs(*_short_run_with_code_changes())
    benign = [_form(r, a) for r, a in shown if r["origin"] == "background"]
    faults = [_form(r, a) for r, a in shown if r["origin"] == "fault"]
    assert len(benign) >= 2 and len(faults) >= 2
    assert set(benign) == set(faults)
    assert all(a["diff"].strip() for _, a in shown)


def test_every_service_has_harmless_commits_that_build() -> None:
    """Each service's set holds several edits; every one that applies to the shipped source
    builds (lint and the service's unit tests pass, twin/images.py `build`), and the one drawn
    rolls out."""
    backend = create_backend("boutique", 1)
    for service in SERVICES:
        edits = edits_for(service)
        assert len(edits) >= 4, service
        # every subject is in the grammar's vocabulary, which the giveaway check reads
        assert {s for e in edits for s in e.subjects} <= set(CODE_SUBJECTS)
        files = backend.source(service)
        applied = [e for e in edits if e.apply(dict(files)) not in (None, files)]
        assert len(applied) >= 3, service
        for edit in applied:
            built = backend.build_image(service, edit.apply(dict(files)))
            assert built.ok, (service, edit.name, built.failures)
        change = plan_change("rebuild", backend, service, random.Random(service), frozenset())
        assert change is not None and change.patch and change.subject, service
        result = backend.release(service, patch=change.patch, change_cause=change.subject)
        assert result.ok, (service, result.message)


def _fields(text: str, variables: set[str]) -> set[str]:
    """The field names a cause names: environment variables the app's deployments hold, and
    `setting=value` probe settings."""
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))
    return (words & variables) | set(re.findall(r"\b([A-Za-z_]+)=", text))


def test_no_field_is_named_only_by_fault_causes() -> None:
    """Bounded check: every change-driven catalog entry worded with 10 seeds, against the
    ordinary releases of every kind on every service worded with 150 seeds (each address
    variable of a caller is drawn with probability >= 1/7 per seed, so a field ordinary releases
    can name is missed with probability < 1e-6). A field only faults change (a listener `PORT`,
    the redis password, a probe's port) must not be named at all."""
    backend = create_backend("boutique", 1)
    variables = {
        env["name"]
        for deployment in backend.resources("deployments")
        for container in deployment["spec"]["template"]["spec"]["containers"]
        for env in container.get("env", [])
    }
    assert {"PORT", "REDIS_PASSWORD"} <= variables
    ordinary: set[str] = set()
    for service in SERVICES:
        image = backend.artifact_value(f"image:{service}") or ""
        for kind in ("env", "probes", "resources", "image"):
            for seed in range(150):
                rng = random.Random(f"{service}-{kind}-{seed}")
                change = plan_change(kind, backend, service, rng, frozenset())
                if change is None:
                    continue
                cause = describe(service, **change.release, current_image=image, rng=rng)
                ordinary |= _fields(cause.text, variables)
    faulty: dict[str, str] = {}
    for entry in load_catalog("boutique"):
        if entry.mechanism != "change":
            continue
        for seed in range(10):
            cause = fault_cause(entry, f"{entry.target}:v0.10.6", random.Random(seed))
            for name in _fields(cause.text, variables) - ordinary:
                faulty[name] = cause.text
    assert faulty == {}
    # a probe change of fields ordinary releases never tune (its port, its type) names none
    for seed in range(20):
        cause = describe("adservice", probes={"liveness": {"port": 9556, "type": "grpc"}},
                         rng=random.Random(seed))
        assert _fields(cause.text, variables) == set(), cause.text


def test_the_schedule_command_lists_the_background_releases_where_they_ship() -> None:
    """`pytest-marathon schedule` shows the operator the ordinary releases beside the faults, each
    on the service the run then changes (the orchestrator binds them the same way)."""
    import contextlib
    import io

    from pytest_marathon.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["schedule", "--app", "boutique", "--seed", "3", "--scenario", "short-10"]) == 0
    listed = {}
    for line in out.getvalue().splitlines():
        match = re.match(r"^(b\d\d)\s+(\d+)s ->.*background\s+(\w+)\s+(\S+)$", line)
        if match:
            listed[match[1]] = (float(match[2]), match[3], match[4])
    schedule = schedule_for("boutique", "short-10", 3)
    assert len(listed) == len(schedule.background) > 0
    assert {r.release_id: (r.at, r.kind) for r in schedule.background} == {
        k: v[:2] for k, v in listed.items()}
    backend = create_backend("boutique", 3)
    orchestrator = Orchestrator(backend, schedule)
    shipped = []
    t = -schedule.scenario.warmup_s
    while t < 600.0:
        t += backend.tick_seconds
        orchestrator.step(t)
        shipped += [r for r in orchestrator.take_releases() if r["origin"] == "background"]
        backend.advance_to(t)
    assert len(shipped) >= 3
    assert all(listed[r["id"]][2] == r["target"] for r in shipped)


@pytest.mark.parametrize("kind", ["rebuild", "image"])
def test_no_ordinary_release_builds_on_an_image_the_registry_lacks(kind: str) -> None:
    """An agent may roll a service back onto a revision whose image was never pushed (a release
    that failed with ErrImagePull): an ordinary release then has no source to build from and
    ships nothing, instead of stopping the run."""
    from pytest_marathon.faults.background_changes import plan_change

    backend = create_backend("boutique", 1)
    backend.advance_to(0.0)
    image = backend.artifact_value("image:cartservice")
    missing = image.rsplit(":", 1)[0] + ":v0.10.99"
    backend.release("cartservice", image=missing, change_cause="bump")
    backend.advance_to(30.0)
    assert backend.artifact_value("image:cartservice") == missing
    assert plan_change(kind, backend, "cartservice", random.Random(1), frozenset()) is None
    assert plan_change(kind, backend, "currencyservice", random.Random(1), frozenset()) is not None
