"""Kubernetes resource quantities (``100m``, ``64Mi``) as numbers and back.

Limits arrive as strings from app.yaml and from agents' `update_config`; the twin reasons in cores
and bytes, and prints the strings back unchanged so tools show what a cluster would.
"""

from __future__ import annotations

_BINARY = {"Ki": 1024, "Mi": 1024**2, "Gi": 1024**3, "Ti": 1024**4}
_DECIMAL = {"k": 1000, "M": 1000**2, "G": 1000**3, "T": 1000**4}


class QuantityError(ValueError):
    """A resource quantity that Kubernetes would reject."""


def parse_cpu(text: str | int | float) -> float:
    """Cores from ``"200m"``, ``"1"`` or ``0.5``."""
    value = str(text).strip()
    try:
        if value.endswith("m"):
            cores = float(value[:-1]) / 1000.0
        else:
            cores = float(value)
    except ValueError:
        raise QuantityError(f"invalid cpu quantity {text!r} (expected e.g. '200m' or '1')") from None
    if cores <= 0:
        raise QuantityError(f"cpu quantity must be positive, got {text!r}")
    return cores


def parse_memory(text: str | int | float) -> int:
    """Bytes from ``"128Mi"``, ``"1G"`` or a plain byte count."""
    value = str(text).strip()
    number, factor = value, 1
    for suffix, multiple in (_BINARY | _DECIMAL).items():
        if value.endswith(suffix):
            number, factor = value[: -len(suffix)], multiple
            break
    try:
        amount = float(number) * factor
    except ValueError:
        raise QuantityError(
            f"invalid memory quantity {text!r} (expected e.g. '128Mi' or '1Gi')"
        ) from None
    if amount <= 0:
        raise QuantityError(f"memory quantity must be positive, got {text!r}")
    return int(amount)


def mebibytes(n_bytes: float) -> str:
    return f"{n_bytes / 1024**2:.0f}Mi"
