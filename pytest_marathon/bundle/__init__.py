"""Run bundles: the recorder that writes them and the reader that verifies them.

Format and contracts: docs/internals.md, "Bundle streams".
"""

from .format import DETERMINISTIC_STREAMS, SCHEMA_VERSION, SIGNATURE, STREAMS, BundleError
from .reader import Bundle, read_bundle
from .recorder import Recorder
from .signing import (
    KeyFileError,
    generate_key_pair,
    key_id,
    load_private_key,
    load_public_key,
    sign_bundle,
)

__all__ = [
    "DETERMINISTIC_STREAMS",
    "SCHEMA_VERSION",
    "SIGNATURE",
    "STREAMS",
    "Bundle",
    "BundleError",
    "KeyFileError",
    "Recorder",
    "generate_key_pair",
    "key_id",
    "load_private_key",
    "load_public_key",
    "read_bundle",
    "sign_bundle",
]
