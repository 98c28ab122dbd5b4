"""Ed25519 signatures of sealed bundles: key files, signing at sealing, verification on reading.

A manifest's SHA-256 digests prove a bundle is intact only to whoever trusts the manifest: anyone
who edits a stream can recompute every digest. A signature by a key the editor does not hold
closes that gap, so a leaderboard can accept a bundle only when it verifies against the key it
trusts. The signature is over the exact bytes of the final `manifest.json`, which lists every
file's SHA-256 and the content digest, so it covers the whole bundle.

`signature.json` holds the algorithm, the raw public key (base64), a key id (the first 16 hex
digits of SHA-256 of that raw key), the signature (base64) and the name of the signed file.
Every field is checked strictly, base64 included (only the canonical spelling is accepted), so
changing any byte of the file is refused rather than read as the same signature.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from .format import MANIFEST, SIGNATURE, BundleError, canonical_json

ALGORITHM = "ed25519"
PRIVATE_SUFFIX = ".key"
PUBLIC_SUFFIX = ".pub"
_FIELDS = ("algorithm", "key_id", "public_key", "signature", "signed_file")
_READ_ONLY = stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH

VerifyKey = Ed25519PublicKey | str | os.PathLike[str]


class KeyFileError(ValueError):
    """A key file that cannot be used; the one-line message names the file and the problem."""


def raw_public_key(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def key_id(key: Ed25519PublicKey) -> str:
    """Short, stable name of a public key: first 16 hex digits of SHA-256 of its raw bytes."""
    return hashlib.sha256(raw_public_key(key)).hexdigest()[:16]


# key files -----------------------------------------------------------------------------------


def generate_key_pair(prefix: str | os.PathLike[str]) -> tuple[Path, Path, str]:
    """Write a new key pair to PREFIX.key (PKCS8 PEM, mode 0600) and PREFIX.pub
    (SubjectPublicKeyInfo PEM); returns both paths and the key id.

    Refuses (KeyFileError) when either file exists, so a key that signed bundles is never
    replaced by accident, or when the folder does not exist; nothing is left behind then."""
    private_path = Path(f"{os.fspath(prefix)}{PRIVATE_SUFFIX}")
    public_path = Path(f"{os.fspath(prefix)}{PUBLIC_SUFFIX}")
    if not private_path.parent.is_dir():
        raise KeyFileError(f"cannot write keys to {prefix}: folder {private_path.parent} does not exist")
    key = Ed25519PrivateKey.generate()
    private_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    public_pem = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    _write_new(private_path, private_pem, 0o600)
    try:
        _write_new(public_path, public_pem, 0o644)
    except BaseException:  # PREFIX.pub exists (or cannot be written): leave nothing behind
        private_path.unlink(missing_ok=True)
        raise
    return private_path, public_path, key_id(key.public_key())


def _write_new(path: Path, data: bytes, mode: int) -> None:
    """Create `path` exclusively (O_EXCL: an existing file or symlink is never overwritten, even
    when it appears concurrently) with `mode` from the start (a private key is never readable
    by others, not even for a moment)."""
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    except FileExistsError:
        raise KeyFileError(f"{path} already exists; refusing to overwrite a key file") from None
    except OSError as exc:
        raise KeyFileError(f"cannot write {path}: {exc.strerror}") from None
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)
    os.chmod(path, mode)  # the umask may have narrowed it; never widen beyond `mode`


def load_private_key(path: str | os.PathLike[str]) -> Ed25519PrivateKey:
    """The Ed25519 private key in a PEM file (as `pytest-marathon keygen` writes PREFIX.key)."""
    data = _read_key_file(path)
    if b"PRIVATE KEY-----" not in data and b"PUBLIC KEY-----" in data:
        raise KeyFileError(
            f"{path} holds a public key; signing needs the private key (PREFIX{PRIVATE_SUFFIX})"
        )
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except TypeError:
        raise KeyFileError(
            f"{path} is a password-protected key; use an unencrypted key "
            "(pytest-marathon keygen writes one)"
        ) from None
    except (ValueError, UnsupportedAlgorithm):
        raise KeyFileError(
            f"{path} is not a PEM private key (pytest-marathon keygen writes one)"
        ) from None
    if not isinstance(key, Ed25519PrivateKey):
        raise KeyFileError(f"{path} holds {_describe(key)}; bundles are signed with Ed25519")
    return key


def load_public_key(path: str | os.PathLike[str]) -> Ed25519PublicKey:
    """The Ed25519 public key in a PEM file (as `pytest-marathon keygen` writes PREFIX.pub).

    A private key file is refused rather than used: whoever verifies bundles should never need
    to hold the key that signs them."""
    data = _read_key_file(path)
    if b"PRIVATE KEY-----" in data:
        raise KeyFileError(
            f"{path} holds a private key; verifying needs the public key (PREFIX{PUBLIC_SUFFIX})"
        )
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, UnsupportedAlgorithm):
        raise KeyFileError(
            f"{path} is not a PEM public key (pytest-marathon keygen writes one)"
        ) from None
    if not isinstance(key, Ed25519PublicKey):
        raise KeyFileError(f"{path} holds {_describe(key)}; bundles are signed with Ed25519")
    return key


def _read_key_file(path: str | os.PathLike[str]) -> bytes:
    file = Path(path)
    if not file.exists():
        raise KeyFileError(f"key file {file} does not exist")
    if not file.is_file():
        raise KeyFileError(f"key file {file} is not a file")
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise KeyFileError(f"cannot read key file {file}: {exc.strerror}") from None
    if b"-----BEGIN " not in data:
        raise KeyFileError(f"{file} is not a PEM key file (pytest-marathon keygen writes one)")
    return data


def _describe(key: Any) -> str:
    """`a key of type RSA` for an RSAPrivateKey, so the message names what the file holds."""
    name = type(key).__name__.lstrip("_")
    for suffix in ("PrivateKey", "PublicKey"):
        name = name.removesuffix(suffix)
    return f"a key of type {name or type(key).__name__}"


# signing and verifying -----------------------------------------------------------------------


def signature_document(manifest_bytes: bytes, key: Ed25519PrivateKey) -> bytes:
    """The bytes of `signature.json` for a final manifest."""
    if not isinstance(key, Ed25519PrivateKey):
        raise TypeError(f"a bundle is signed with an Ed25519PrivateKey, got {type(key).__name__}")
    public = key.public_key()
    document = {
        "algorithm": ALGORITHM,
        "key_id": key_id(public),
        "public_key": _b64(raw_public_key(public)),
        "signature": _b64(key.sign(manifest_bytes)),
        "signed_file": MANIFEST,
    }
    return (canonical_json(document) + "\n").encode()


def write_signature(directory: Path, manifest_bytes: bytes, key: Ed25519PrivateKey) -> None:
    """Write `signature.json` (read-only) next to a final manifest whose bytes are given."""
    data = signature_document(manifest_bytes, key)
    target = directory / SIGNATURE
    with target.open("xb") as handle:
        handle.write(data)
    target.chmod(_READ_ONLY)


def sign_bundle(directory: str | os.PathLike[str], key: Ed25519PrivateKey) -> None:
    """Sign an already sealed, unsigned bundle after verifying it (a key holder vouches only for
    a bundle that is intact)."""
    from .reader import read_bundle

    bundle = read_bundle(directory)
    if bundle.signature is not None:
        raise BundleError(f"{bundle.path} is already signed (key {bundle.signature['key_id']})")
    write_signature(bundle.path, (bundle.path / MANIFEST).read_bytes(), key)


def verify_signature(
    directory: Path, manifest_bytes: bytes, verify_key: Ed25519PublicKey | None
) -> dict[str, Any]:
    """Check `signature.json` against the manifest bytes (and, when given, the trusted key);
    returns `{key_id, algorithm, verified_with_key}` or raises BundleError naming the problem."""
    path = directory / SIGNATURE
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise BundleError(f"cannot read {SIGNATURE} of {directory}: {exc.strerror}") from None
    try:
        document = json.loads(raw)
    except ValueError:
        raise BundleError(f"{SIGNATURE} of {directory} is not valid JSON (modified)") from None
    if not isinstance(document, dict) or sorted(document) != sorted(_FIELDS):
        raise BundleError(f"{SIGNATURE} of {directory} must hold exactly: {', '.join(_FIELDS)}")
    if raw != (canonical_json(document) + "\n").encode():
        raise BundleError(f"{SIGNATURE} of {directory} was modified after it was written")
    if document["algorithm"] != ALGORITHM:
        raise BundleError(
            f"{SIGNATURE} of {directory}: unknown algorithm {document['algorithm']!r} "
            f"(this release verifies {ALGORITHM})"
        )
    if document["signed_file"] != MANIFEST:
        raise BundleError(f"{SIGNATURE} of {directory} does not sign {MANIFEST}")
    raw_key = _unb64(document["public_key"], 32, "public_key", directory)
    signature = _unb64(document["signature"], 64, "signature", directory)
    public = Ed25519PublicKey.from_public_bytes(raw_key)
    if document["key_id"] != key_id(public):
        raise BundleError(f"{SIGNATURE} of {directory}: key_id does not name its public key")
    try:
        public.verify(signature, manifest_bytes)
    except InvalidSignature:
        raise BundleError(
            f"the signature of {directory} does not verify against its {MANIFEST}: the bundle "
            "was changed after it was signed"
        ) from None
    if verify_key is not None and raw_public_key(verify_key) != raw_key:
        raise BundleError(
            f"{directory} is signed by key {document['key_id']}, not by the trusted key "
            f"{key_id(verify_key)}"
        )
    return {
        "key_id": document["key_id"],
        "algorithm": ALGORITHM,
        "verified_with_key": verify_key is not None,
    }


def as_verify_key(key: VerifyKey | None) -> Ed25519PublicKey | None:
    """A trusted key given as a key object or as the path of its PEM file."""
    if key is None or isinstance(key, Ed25519PublicKey):
        return key
    if isinstance(key, str | os.PathLike):
        return load_public_key(key)
    raise TypeError(f"verify_key must be an Ed25519PublicKey or a path, got {type(key).__name__}")


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: Any, size: int, field: str, directory: Path) -> bytes:
    """Decode strict, canonical base64 of exactly `size` bytes: a spelling that decodes to the
    same bytes but differs in the text (unused low bits, missing padding) is refused too."""
    problem = f"{SIGNATURE} of {directory}: {field} is not canonical base64 of {size} bytes"
    if not isinstance(text, str):
        raise BundleError(problem)
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise BundleError(problem) from None
    if len(data) != size or _b64(data) != text:
        raise BundleError(problem)
    return data
