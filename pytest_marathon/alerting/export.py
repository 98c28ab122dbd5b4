"""Writing a rule pack out as Prometheus rule files, for deployment on a real cluster."""

from __future__ import annotations

from pathlib import Path

from pytest_marathon.alerting.rules import PACK_SUFFIX, RulePack


def export_pack(pack: RulePack, directory: str | Path) -> Path:
    """Write the pack's rule file (byte-identical to the shipped one) into `directory`.

    The shipped file already is a standard Prometheus rule file carrying the release in its
    header comment, so exporting copies it rather than re-serialising (which would drop the
    comments and reflow the expressions)."""
    target_dir = Path(directory)
    if target_dir.exists() and not target_dir.is_dir():
        raise NotADirectoryError(f"{target_dir} exists and is not a directory")
    target_dir.mkdir(parents=True, exist_ok=True)
    target = target_dir / f"{pack.app}{PACK_SUFFIX}"
    target.write_text(pack.text, encoding="utf-8")
    return target
