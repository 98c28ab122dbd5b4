"""The image registry: tag → the service source it was built from, and the compiled code.

Shipped images (`cartservice:v0.10.6`) hold the app's service folder; builds of patched code get
`<service>:<version>-<7 hex of the content hash>`, the way CI tags images by commit. A tag that was
never pushed makes a pod fail with ErrImagePull.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from pytest_marathon.twin import sandbox
from pytest_marathon.twin.sandbox_errors import SandboxError, SandboxRefusal

SKIPPED_SUFFIXES = (".pyc", ".pyo")


def folder_files(folder: Path) -> dict[str, str]:
    """A service folder's files by relative path, as an image build copies them."""
    return {
        str(p.relative_to(folder)): p.read_text()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.suffix not in SKIPPED_SUFFIXES and "__pycache__" not in p.parts
    }


def content_hash(files: dict[str, str]) -> str:
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + files[name].encode() + b"\0")
    return digest.hexdigest()


class ImageRegistry:
    def __init__(self) -> None:
        self._files: dict[str, dict[str, str]] = {}
        self._service: dict[str, str] = {}
        self._compiled: dict[str, sandbox.CompiledService] = {}
        self._plain: set[str] = set()

    def push(self, tag: str, service: str, files: dict[str, str]) -> None:
        self._files[tag] = dict(sorted(files.items()))
        self._service[tag] = service

    def push_folder(self, tag: str, service: str, folder: Path) -> None:
        self.push(tag, service, folder_files(folder))

    def push_plain(self, tag: str) -> None:
        """An image with no service code of ours (a server the engine provides: valkey, Kafka,
        PostgreSQL, flagd), pulled from its public registry."""
        self._plain.add(tag)

    def exists(self, tag: str) -> bool:
        return tag in self._files or tag in self._plain or ":" in tag and tag.split(":", 1)[0] in ("redis", "valkey")

    def files(self, tag: str) -> dict[str, str]:
        return dict(self._files.get(tag, {}))

    def has_code(self, tag: str) -> bool:
        return tag in self._files

    def compiled(self, tag: str) -> sandbox.CompiledService:
        code = self._compiled.get(tag)
        if code is None:
            code = self._compiled[tag] = sandbox.compile_service(self._service[tag], self._files[tag])
        return code

    def tags(self) -> list[str]:
        return sorted(self._files)


def split_image(ref: str) -> tuple[str, str]:
    """(repository, tag) of an image reference; a registry's port (`localhost:5001/x:1`) is part
    of the repository, so the tag is what follows the last `:` after the last `/`."""
    slash, colon = ref.rfind("/"), ref.rfind(":")
    if colon > slash:
        return ref[:colon], ref[colon + 1:]
    return ref, ""


def build_tag(base_image: str, files: dict[str, str]) -> str:
    """`cartservice:v0.10.6` + content → `cartservice:v0.10.6-1a2b3c4`."""
    name, version = split_image(base_image)
    version = version.split("-", 1)[0] or "latest"
    return f"{name}:{version}-{content_hash(files)[:7]}"


def build(service: str, files: dict[str, str]) -> tuple[list[str], str]:
    """Lint, compile and unit-test a working copy; returns (failures, build log)."""
    log: list[str] = [f"building {service} ({len(files)} files)"]
    try:
        sandbox.compile_service(service, files)
    except SandboxRefusal as exc:
        # Refused code is a policy matter, not a lint finding: the tools record it as forbidden.
        failures = [f"sandbox refused: {exc.reason}"]
        return failures, "\n".join(log + failures)
    failures = [f"lint: {p}" for p in sandbox.lint(service, files)]
    log += failures or ["lint: ok"]
    if failures:
        return failures, "\n".join(log)
    try:
        report = sandbox.run_unit_tests(service, files)
    except SandboxError as exc:
        failures = [f"tests: {exc.reason}"]
        return failures, "\n".join(log + failures)
    failures = [f"test: {f}" for f in report.failures]
    if not report.ok and not failures:
        failures = ["tests: no unit test passed"]
    log.append(f"tests: {report.passed} passed, {report.failed} failed")
    return failures, "\n".join(log + failures)
