"""Scenario files: the timing parameters of a run, kept apart from the code that draws a schedule.

A scenario is data so that a benchmark release can ship new run shapes (short runs, quiet runs,
episodic suites) without code changes, and so that a bundle can name exactly what it ran.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import yaml

from pytest_marathon import yamlio


class ScenarioError(ValueError):
    """A scenario file that is missing or malformed; the message names the file and field."""


@dataclass(frozen=True)
class Scenario:
    """Run shape. Times in virtual seconds; the injection window starts at t = 0."""

    name: str
    description: str
    warmup_s: float
    injection_window_s: float
    observation_s: float
    arrivals: int
    intensity_start: float
    intensity_end: float
    lifetime_min_s: float
    lifetime_max_s: float
    max_concurrent: int
    #: Benign releases drawn beside the faults (faults/background.py); 0 is the paper's schedule.
    background_releases: int = 0

    @property
    def duration_s(self) -> float:
        """Length of the scored run (injection window plus observation), warm-up excluded."""
        return self.injection_window_s + self.observation_s


def builtin_scenarios() -> list[str]:
    """Names of the scenarios shipped with the package, sorted."""
    root = resources.files("pytest_marathon.scenarios")
    return sorted(p.name[: -len(".yaml")] for p in root.iterdir() if p.name.endswith(".yaml"))


def load_scenario(name_or_path: str | Path) -> Scenario:
    """A shipped scenario by name (`marathon`) or any scenario file by path."""
    text, source = _read(name_or_path)
    try:
        data = yamlio.safe_load(text)
    except yaml.YAMLError as exc:
        raise ScenarioError(f"{source}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ScenarioError(f"{source}: expected a mapping of scenario fields")
    return _parse(data, source)


def scenario_bytes(name_or_path: str | Path) -> bytes:
    """The bytes of the file `load_scenario` parses for this name or path (a bundle's manifest
    records their digest, so two runs of one scenario name with different files differ)."""
    return _locate(name_or_path)[0].read_bytes()


def _read(name_or_path: str | Path) -> tuple[str, str]:
    file, source = _locate(name_or_path)
    return file.read_text(encoding="utf-8"), source


def _locate(name_or_path: str | Path) -> tuple[Traversable, str]:
    """The scenario file and how messages name it: a path as given, a built-in by package path."""
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") or path.exists():
        if not path.is_file():
            raise ScenarioError(f"{path}: scenario file not found")
        return path, str(path)
    name = str(name_or_path)
    resource = resources.files("pytest_marathon.scenarios").joinpath(f"{name}.yaml")
    if not resource.is_file():
        known = ", ".join(builtin_scenarios())
        raise ScenarioError(f"unknown scenario {name!r} (shipped: {known})")
    return resource, f"scenarios/{name}.yaml"


def _parse(data: dict[str, Any], source: str) -> Scenario:
    def number(field: str, value: Any, *, minimum: float = 0.0) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ScenarioError(f"{source}: field {field!r} must be a number, got {value!r}")
        if value < minimum:
            raise ScenarioError(f"{source}: field {field!r} must be >= {minimum}, got {value!r}")
        return float(value)

    def required(field: str) -> Any:
        if field not in data:
            raise ScenarioError(f"{source}: missing field {field!r}")
        return data[field]

    def section(field: str, keys: tuple[str, str]) -> tuple[float, float]:
        value = required(field)
        if not isinstance(value, dict) or any(k not in value for k in keys):
            raise ScenarioError(f"{source}: field {field!r} must be a mapping with {keys}")
        return tuple(number(f"{field}.{k}", value[k]) for k in keys)  # type: ignore[return-value]

    unknown = sorted(set(data) - _FIELDS)
    if unknown:
        raise ScenarioError(f"{source}: unknown field {unknown[0]!r}")
    name = required("name")
    if not isinstance(name, str) or not name:
        raise ScenarioError(f"{source}: field 'name' must be a non-empty string")
    arrivals = required("arrivals")
    if isinstance(arrivals, bool) or not isinstance(arrivals, int) or arrivals < 0:
        raise ScenarioError(f"{source}: field 'arrivals' must be a non-negative integer")
    cap = required("max_concurrent")
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
        raise ScenarioError(f"{source}: field 'max_concurrent' must be a positive integer")
    background = data.get("background_releases", 0)
    if isinstance(background, bool) or not isinstance(background, int) or background < 0:
        raise ScenarioError(f"{source}: field 'background_releases' must be a non-negative integer")
    start, end = section("intensity", ("start", "end"))
    if start <= 0 or end <= 0:
        raise ScenarioError(f"{source}: field 'intensity' needs positive start and end")
    low, high = section("lifetime_s", ("min", "max"))
    if low <= 0 or high < low:
        raise ScenarioError(f"{source}: field 'lifetime_s' needs 0 < min <= max")
    window = number("injection_window_s", required("injection_window_s"))
    if arrivals and window <= 0:
        raise ScenarioError(f"{source}: field 'injection_window_s' must be positive")
    return Scenario(
        name=name,
        description=str(data.get("description", "")),
        warmup_s=number("warmup_s", required("warmup_s")),
        injection_window_s=window,
        observation_s=number("observation_s", required("observation_s")),
        arrivals=arrivals,
        intensity_start=start,
        intensity_end=end,
        lifetime_min_s=low,
        lifetime_max_s=high,
        max_concurrent=cap,
        background_releases=background,
    )


_FIELDS = {
    "name",
    "description",
    "warmup_s",
    "injection_window_s",
    "observation_s",
    "arrivals",
    "intensity",
    "lifetime_s",
    "max_concurrent",
    "background_releases",
}
