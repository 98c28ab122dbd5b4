"""What a real cluster runs to produce the telemetry the twin imitates.

`otel-collector.yaml` is the collector configuration for the cluster backend; `series.py` is
the inventory of series that configuration and the cluster's exporters produce, which the twin
emits and the alert rules may read.
"""

from __future__ import annotations

from importlib import resources


def collector_config_text() -> str:
    """The shipped OpenTelemetry Collector configuration (YAML text)."""
    return resources.files(__package__).joinpath("otel-collector.yaml").read_text(encoding="utf-8")
