"""What a release changes, described in the words of its family (`phrasing`).

One function serves every release the benchmark makes (initial deploy, background release, fault,
the undo of either), so the wording never depends on why the release was made, only on what it
changes: an image, code, a variable, a limit, a probe.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from pytest_marathon.faults.catalog import CatalogEntry
from pytest_marathon.faults.phrasing import (
    NAMEABLE_PROBE_SETTINGS,
    Cause,
    code_subject,
    nameable_variable,
    render,
)
from pytest_marathon.twin.images import split_image


def describe(target: str, *, image: str | None = None, env: Mapping[str, Any] | None = None,
             resources: Mapping[str, Any] | None = None, probes: Mapping[str, Any] | None = None,
             strategy: Mapping[str, Any] | None = None, subject: str | None = None,
             current_image: str = "", rng: random.Random) -> Cause:
    """The change-cause of a release of `target` with these release arguments. A code change
    names its subject; otherwise the first of image, env, resources, probes in that order names
    the family (a release changing several reads as its most visible change)."""
    strategy_type = str(strategy.get("type")) if isinstance(strategy, Mapping) else None
    if subject is not None:
        return render("code", {"svc": target, "subject": subject}, rng, strategy=strategy_type)
    if env:
        # a variable only faults change is not named (phrasing.nameable_variable)
        named = sorted(var for var in env if nameable_variable(var))
        var = named[0] if named else ""
        value = env[var] if var else ""
        slots = {"svc": target, "var": var, "value": value if isinstance(value, str) else ""}
        return render("env", slots, rng, strategy=strategy_type)
    if resources:
        key = sorted(resources)[0]
        what = "CPU limit" if key.rsplit(".", 1)[-1] == "cpu" else "memory limit"
        slots = {"svc": target, "what": what, "value": str(resources[key])}
        return render("resources", slots, rng, strategy=strategy_type)
    if probes:
        kind = sorted(probes)[0]
        fields = probes[kind] if isinstance(probes[kind], Mapping) else {}
        tuned = sorted((k, v) for k, v in fields.items()
                       if k in NAMEABLE_PROBE_SETTINGS and not isinstance(v, Mapping))
        setting = ", ".join(f"{k}={v}" for k, v in tuned[:1])
        return render("probes", {"svc": target, "kind": kind, "setting": setting}, rng,
                      strategy=strategy_type)
    shown = image or current_image
    tag = split_image(shown)[1]
    return render("image", {"svc": target, "image": shown, "tag": tag}, rng, strategy=strategy_type)


def fault_cause(entry: CatalogEntry, current_image: str, rng: random.Random) -> Cause:
    """A change-driven fault's change-cause, worded like any release of its family: the
    catalog's own text only lends a code change its subject."""
    subject = code_subject(entry.change_cause, entry.target) if entry.patch is not None else None
    return describe(entry.target, image=entry.image, env=dict(entry.env) or None,
                    resources=dict(entry.resources) or None, probes=dict(entry.probes) or None,
                    strategy=entry.strategy, subject=subject, current_image=current_image, rng=rng)
