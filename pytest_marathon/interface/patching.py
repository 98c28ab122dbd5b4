"""Applying an agent's unified diff to a service's files, strictly, like `git apply`.

Context and removed lines must match the base text (a hunk may sit at a different line than its
header says, as `patch` allows, but no fuzz); anything else is rejected with the file, hunk and
line that failed, so the agent can correct its diff. New and deleted files are supported.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from pytest_marathon.interface.verdicts import BadArguments

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
DEV_NULL = "/dev/null"


@dataclass
class FilePatch:
    old_path: str
    new_path: str
    hunks: list[tuple[int, list[str]]] = field(default_factory=list)  # (old start, body lines)


def _strip_prefix(raw: str) -> str:
    path = raw.split("\t", 1)[0].strip()
    if path == DEV_NULL:
        return path
    if path.startswith(("a/", "b/")):
        path = path[2:]
    return path


def parse_unified_diff(diff: str) -> list[FilePatch]:
    lines = diff.splitlines()
    patches: list[FilePatch] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.startswith("--- "):
            if line.startswith(("+++ ", "@@")) and not patches:
                raise BadArguments(f"diff line {i + 1}: {line[:40]!r} before any '--- ' file header")
            i += 1
            continue
        if i + 1 >= len(lines) or not lines[i + 1].startswith("+++ "):
            raise BadArguments(f"diff line {i + 1}: '--- ' header not followed by a '+++ ' header")
        patch = FilePatch(_strip_prefix(line[4:]), _strip_prefix(lines[i + 1][4:]))
        i += 2
        while i < len(lines) and lines[i].startswith("@@"):
            match = _HUNK.match(lines[i])
            if not match:
                raise BadArguments(f"diff line {i + 1}: malformed hunk header {lines[i][:60]!r}")
            old_count = int(match.group(2) or "1")
            new_count = int(match.group(4) or "1")
            body: list[str] = []
            i += 1
            seen_old = seen_new = 0
            while i < len(lines) and (seen_old < old_count or seen_new < new_count):
                text = lines[i]
                tag = text[:1] if text else " "
                if tag == "\\":
                    i += 1
                    continue
                if tag not in " +-":
                    raise BadArguments(
                        f"diff line {i + 1}: hunk ended early (expected {old_count} old and "
                        f"{new_count} new lines, got {seen_old} and {seen_new})"
                    )
                body.append(tag + text[1:])
                seen_old += tag in " -"
                seen_new += tag in " +"
                i += 1
            if seen_old != old_count or seen_new != new_count:
                raise BadArguments(
                    f"{patch.new_path}: hunk at -{match.group(1)} is truncated (expected "
                    f"{old_count} old and {new_count} new lines, got {seen_old} and {seen_new})"
                )
            while i < len(lines) and lines[i].startswith("\\"):
                i += 1
            patch.hunks.append((int(match.group(1)), body))
        if not patch.hunks:
            raise BadArguments(f"{patch.new_path}: file header without any '@@' hunk")
        patches.append(patch)
    if not patches:
        raise BadArguments("not a unified diff: no '--- a/<path>' / '+++ b/<path>' file header found")
    return patches


def _apply_hunks(path: str, base: list[str], hunks: list[tuple[int, list[str]]]) -> list[str]:
    out: list[str] = []
    cursor = 0
    for number, (start, body) in enumerate(hunks, 1):
        old = [line[1:] for line in body if line[0] in " -"]
        new = [line[1:] for line in body if line[0] in " +"]
        want = max(start - 1, 0) if old else start
        position = _locate(base, old, want, cursor)
        if position is None:
            raise BadArguments(
                f"{path}: hunk {number} (@@ -{start}) does not apply: its context/removed lines "
                "do not match the deployed source (read it with get_source)"
            )
        out.extend(base[cursor:position])
        out.extend(new)
        cursor = position + len(old)
    out.extend(base[cursor:])
    return out


def _locate(base: list[str], old: list[str], want: int, cursor: int) -> int | None:
    """The position nearest the header's line where `old` matches, not before `cursor`."""
    if not old:
        return min(max(want, cursor), len(base))
    candidates = range(cursor, len(base) - len(old) + 1)
    matches = [p for p in candidates if base[p : p + len(old)] == old]
    if not matches:
        return None
    return min(matches, key=lambda p: (abs(p - want), p))


def apply_unified_diff(files: Mapping[str, str], diff: str) -> tuple[dict[str, str], list[str]]:
    """The patched files and the sorted paths the diff touched; the input is not modified."""
    result = dict(files)
    touched: list[str] = []
    for patch in parse_unified_diff(diff):
        if patch.old_path == DEV_NULL:
            if patch.new_path in result:
                raise BadArguments(f"{patch.new_path}: diff creates a file that already exists")
            result[patch.new_path] = "\n".join(_apply_hunks(patch.new_path, [], patch.hunks)) + "\n"
            touched.append(patch.new_path)
            continue
        if patch.old_path not in result:
            raise BadArguments(
                f"{patch.old_path}: no such file in the deployed source (files: {', '.join(sorted(result))})"
            )
        base = result[patch.old_path].splitlines()
        patched = _apply_hunks(patch.old_path, base, patch.hunks)
        if patch.new_path == DEV_NULL:
            if patched:
                raise BadArguments(f"{patch.old_path}: deletion hunk leaves lines behind")
            del result[patch.old_path]
            touched.append(patch.old_path)
            continue
        del result[patch.old_path]
        result[patch.new_path] = "\n".join(patched) + ("\n" if patched else "")
        touched.extend({patch.old_path, patch.new_path})
    return result, sorted(set(touched))
