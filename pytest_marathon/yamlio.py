"""YAML parsing for every file the package reads: PyYAML's safe loader, on libyaml when the
installed PyYAML has it. A run parses the whole fault catalog, the app definition and the rule
pack (several times in a test session); the C parser is about 14 times faster and builds the
same Python objects, and errors stay `yaml.YAMLError`."""

from __future__ import annotations

from typing import Any

import yaml

_LOADER: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load(text: str | bytes) -> Any:
    return yaml.load(text, Loader=_LOADER)  # noqa: S506 - a safe loader (C or Python)
