"""Apply a unified diff (``git diff`` / ``diff -u`` output) to a service's files, strictly.

Faults and agents' patches are unified diffs against a service's deployed source. A hunk whose
context does not match is refused with the file and line, never applied fuzzily, so a patch means
exactly what it says.
"""

from __future__ import annotations

import re

HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class PatchError(ValueError):
    """The diff is malformed or does not apply; nothing was changed."""


def _path(header: str) -> str | None:
    name = header[4:].split("\t", 1)[0].strip()
    if name == "/dev/null":
        return None
    if name[:2] in ("a/", "b/"):
        name = name[2:]
    return name


def apply_patch(files: dict[str, str], diff: str) -> dict[str, str]:
    """A new file map with the diff applied (paths relative to the service folder)."""
    result = dict(files)
    lines = diff.splitlines()
    i = 0
    touched = 0
    while i < len(lines):
        if not lines[i].startswith("--- "):
            i += 1
            continue
        if i + 1 >= len(lines) or not lines[i + 1].startswith("+++ "):
            raise PatchError(f"line {i + 1}: '--- ' header without a following '+++ ' header")
        old_path, new_path = _path(lines[i]), _path(lines[i + 1])
        i += 2
        path = new_path or old_path
        if path is None:
            raise PatchError("a file header names /dev/null on both sides")
        if old_path is not None and old_path not in result:
            raise PatchError(f"{old_path}: no such file in the service (files: {', '.join(sorted(result))})")
        source = result.get(old_path, "") if old_path else ""
        text_lines = source.splitlines()
        out: list[str] = []
        cursor = 0
        while i < len(lines) and lines[i].startswith("@@"):
            match = HUNK.match(lines[i])
            if match is None:
                raise PatchError(f"line {i + 1}: malformed hunk header {lines[i]!r}")
            start = int(match.group(1)) - 1 if int(match.group(2) or 1) else int(match.group(1))
            if start < cursor:
                raise PatchError(f"{path}: overlapping or out-of-order hunks at line {start + 1}")
            out.extend(text_lines[cursor:start])
            cursor = start
            i += 1
            while i < len(lines) and not lines[i].startswith(("@@", "--- ")):
                line = lines[i]
                tag, body = (line[:1], line[1:]) if line else (" ", "")
                if tag == "\\":
                    i += 1
                    continue
                if tag in (" ", "-"):
                    if cursor >= len(text_lines) or text_lines[cursor] != body:
                        found = text_lines[cursor] if cursor < len(text_lines) else "<end of file>"
                        raise PatchError(f"{path}:{cursor + 1}: context does not match (expected {body!r}, found {found!r})")
                    cursor += 1
                    if tag == " ":
                        out.append(body)
                elif tag == "+":
                    out.append(body)
                else:
                    break
                i += 1
        out.extend(text_lines[cursor:])
        touched += 1
        if new_path is None:
            result.pop(old_path, None)
        else:
            if old_path and old_path != new_path:
                result.pop(old_path, None)
            result[new_path] = "\n".join(out) + ("\n" if out else "")
    if touched == 0:
        raise PatchError("not a unified diff: no '--- '/'+++ ' file headers found")
    return result
