"""Run bundles: the recorder that writes them and the reader that verifies them.

Format and contracts: docs/internals.md, "Bundle streams".
"""

from .format import DETERMINISTIC_STREAMS, SCHEMA_VERSION, STREAMS, BundleError
from .reader import Bundle, read_bundle
from .recorder import Recorder

__all__ = [
    "DETERMINISTIC_STREAMS",
    "SCHEMA_VERSION",
    "STREAMS",
    "Bundle",
    "BundleError",
    "Recorder",
    "read_bundle",
]
