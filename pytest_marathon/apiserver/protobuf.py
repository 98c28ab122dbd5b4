"""OpenAPI v2 as protobuf: the only form kubectl's client-side validation reads.

client-go discovery/discovery_client.go `OpenAPISchema` unmarshals `/openapi/v2` into gnostic's
`openapi.v2.Document` (google/gnostic openapiv2/OpenAPIv2.proto). The wire format is small
enough to write directly (varint keys, length-delimited strings and messages), and only the
fields the twin's schemas use are encoded; the field numbers below are that file's.
"""

from __future__ import annotations

import json
from typing import Any

# openapi.v2.Document
_DOC_SWAGGER, _DOC_INFO, _DOC_DEFINITIONS = 1, 2, 9
# openapi.v2.Info
_INFO_TITLE, _INFO_VERSION = 1, 2
# openapi.v2.Schema
_REF, _FORMAT, _DESCRIPTION, _REQUIRED = 1, 2, 4, 19
_ADDITIONAL_PROPERTIES, _TYPE, _ITEMS, _PROPERTIES, _VENDOR_EXTENSION = 21, 22, 23, 25, 31
# the wrappers: TypeItem.value, ItemsItem.schema, Properties/Definitions.additional_properties,
# AdditionalPropertiesItem.schema, NamedSchema/NamedAny {name, value}, Any.yaml
_ONE, _NAME, _VALUE, _YAML = 1, 1, 2, 2


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited field (wire type 2): strings and embedded messages alike."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _text(number: int, value: str) -> bytes:
    return _field(number, value.encode())


def _named(name: str, value: bytes) -> bytes:
    return _text(_NAME, name) + _field(_VALUE, value)


def schema(doc: dict[str, Any]) -> bytes:
    """One `openapi.v2.Schema` from its JSON form."""
    out = b""
    if "$ref" in doc:
        out += _text(_REF, doc["$ref"])
    if "format" in doc:
        out += _text(_FORMAT, doc["format"])
    if doc.get("description"):
        out += _text(_DESCRIPTION, doc["description"])
    for name in doc.get("required", []):
        out += _text(_REQUIRED, name)
    if "additionalProperties" in doc:
        out += _field(_ADDITIONAL_PROPERTIES, _field(_ONE, schema(doc["additionalProperties"])))
    if "type" in doc:
        out += _field(_TYPE, _text(_ONE, doc["type"]))
    if "items" in doc:
        out += _field(_ITEMS, _field(_ONE, schema(doc["items"])))
    if "properties" in doc:
        out += _field(_PROPERTIES, b"".join(_field(_ONE, _named(k, schema(v))) for k, v in doc["properties"].items()))
    for key in sorted(k for k in doc if k.startswith("x-")):
        out += _field(_VENDOR_EXTENSION, _named(key, _text(_YAML, json.dumps(doc[key]))))
    return out


def document(doc: dict[str, Any]) -> bytes:
    """The `openapi.v2.Document` of a Swagger 2.0 document (swagger, info, definitions)."""
    info = _text(_INFO_TITLE, doc["info"]["title"]) + _text(_INFO_VERSION, doc["info"]["version"])
    definitions = b"".join(_field(_ONE, _named(k, schema(v))) for k, v in doc["definitions"].items())
    return _text(_DOC_SWAGGER, doc["swagger"]) + _field(_DOC_INFO, info) + _field(_DOC_DEFINITIONS, definitions)
