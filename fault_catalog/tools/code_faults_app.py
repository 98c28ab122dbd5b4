"""Turn an app's code faults, written as data, into catalog entries and patches.

`fault_catalog/<app>/code-faults/<service>.yaml` lists faults, each an ordinary commit with one wrong
assumption (format in the astronomy services brief, "CODE FAULTS"):

    - id: code-<svc>-<name>
      service: <deployment>
      edits: [{file: service.py, before: "<exact text, once in the file>", after: "<new text>"}]
      change_cause: "<svc>: <commit subject>"
      update: "<what the commit says it does>"
      defect: "<the wrong assumption and its effect>"
      exposed_by: [<load task names>]
      log: {service: <where the text shows>, message: "<a substring of that line>"}
      probe: {kind: request, task: <load task>} | {kind: rpc, service: ..., method: ..., request: {...}}

For each fault the edits are applied to the service's current source in the twin app folder (the
files of its image: the app.yaml `shared_code` folders, then the service's own folder, so an edit
may name a shared module the service's image carries, as a Java service carries its own copy of
a library), the result is built the way the release pipeline builds it (lint and the service's own
unit tests), and `patches/<id>.diff` and `<id>.yaml` are written. A fault whose edit no longer matches the
source, whose service has no source yet, or that fails the build is reported and not written.

`generate.py --app <app>` runs this after the templates (one manifest covers both);
`python fault_catalog/tools/code_faults_app.py --app <app>` only builds and reports; with `--write`
it also writes the code entries and patches alone (the templated entries untouched, the manifest
keeping both).
"""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]


def services_dir(app: str) -> Path:
    return ROOT / "pytest_marathon" / "twin" / "apps" / app / "services"


def fault_files(app: str) -> list[Path]:
    folder = ROOT / "fault_catalog" / app / "code-faults"
    return sorted(folder.glob("*.yaml")) if folder.is_dir() else []


def load_faults(app: str) -> list[dict[str, Any]]:
    faults: list[dict[str, Any]] = []
    for path in fault_files(app):
        for fault in yaml.safe_load(path.read_text()) or []:
            faults.append({**fault, "_source": path.name})
    ids = [f["id"] for f in faults]
    duplicated = sorted({i for i in ids if ids.count(i) > 1})
    if duplicated:
        raise ValueError(f"code fault id {duplicated[0]!r} appears twice")
    return sorted(faults, key=lambda f: f["id"])


def shared_folders(app: str, service: str) -> list[Path]:
    """The app.yaml `shared_code` folders built into `service`'s image."""
    path = services_dir(app).parent / "app.yaml"
    deps = yaml.safe_load(path.read_text())["deployments"] if path.is_file() else {}
    return [services_dir(app).parent / folder for folder in (deps.get(service) or {}).get("shared_code", [])]


def image_sources(app: str, service: str) -> dict[str, str]:
    """The files of `service`'s image by path: its shared folders', then its own folder's over
    them (as the twin builds the shipped image)."""
    files: dict[str, str] = {}
    for folder in [*shared_folders(app, service), services_dir(app) / service]:
        files.update({str(p.relative_to(folder)): p.read_text() for p in sorted(folder.rglob("*"))
                      if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".pyo")})
    return files


def edited_files(app: str, fault: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """path -> (before, after) for each file the fault edits; edits of one file apply in order."""
    folder = services_dir(app) / fault["service"]
    if not folder.is_dir():
        raise ValueError(f"{fault['id']}: no source for service {fault['service']!r} in {folder}")
    sources = image_sources(app, fault["service"])
    files: dict[str, tuple[str, str]] = {}
    for edit in fault["edits"]:
        path = edit["file"]
        if path not in files and path not in sources:
            raise ValueError(f"{fault['id']}: {fault['service']}'s image has no {path}")
        original = files[path][0] if path in files else sources[path]
        current = files[path][1] if path in files else original
        if current.count(edit["before"]) != 1:
            raise ValueError(f"{fault['id']}: {path} does not contain the edited text exactly once")
        files[path] = (original, current.replace(edit["before"], edit["after"]))
    return files


def unified_diff(path: str, before: str, after: str) -> str:
    return "".join(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                        fromfile=f"a/{path}", tofile=f"b/{path}", n=3))


def build_failures(app: str, service: str, files: dict[str, tuple[str, str]]) -> list[str]:
    from pytest_marathon.twin import images

    working = image_sources(app, service)
    working.update({path: after for path, (_before, after) in files.items()})
    failures, _log = images.build(service, working)
    return failures


def with_signature(probe: dict[str, Any], message: str) -> dict[str, Any]:
    """A request or rpc probe answers for this defect only (the recorded message must be in what
    the request produced), so another live fault on the path does not keep it failing."""
    if probe.get("kind") in ("request", "rpc") and "signature" not in probe:
        return {**probe, "signature": message}
    return dict(probe)


def consumers(app: str) -> set[str]:
    """The app's consumer workloads (app.yaml `kind: consumer`)."""
    path = services_dir(app).parent / "app.yaml"
    deps = yaml.safe_load(path.read_text())["deployments"] if path.is_file() else {}
    return {name for name, dep in deps.items() if dep.get("kind") == "consumer"}


def probe_of(fault: dict[str, Any], consumer: bool) -> dict[str, Any]:
    """The fault's probe, answering for this defect only. A consumer's defect shows after the
    request that produced the record has been answered, so no request fails on it: its error log
    is the probe."""
    message = fault["log"]["message"]
    if consumer and fault["probe"].get("kind") == "request":
        return {"kind": "no_error_logs", "service": fault["log"]["service"], "window": 120, "contains": message}
    return with_signature(fault["probe"], message)


def entry_of(fault: dict[str, Any], consumer: bool = False) -> dict[str, Any]:
    svc = fault["service"]
    files = sorted({e["file"] for e in fault["edits"] if not e["file"].rsplit("/", 1)[-1].startswith("test_")})
    return {
        "category": "code",
        "mechanism": "change",
        "target": svc,
        "culprits": [svc],
        "probe": probe_of(fault, consumer),
        "artifact": f"code:{svc}/{files[0] if files else 'service.py'}",
        "aliases": [f"image:{svc}"] + [f"code:{svc}/{f}" for f in files[1:]],
        "log": {"service": fault["log"]["service"], "message": fault["log"]["message"]},
        "update": fault["update"],
        "defect": fault["defect"],
        "exposed_by": list(fault.get("exposed_by", [])),
        "change_cause": fault["change_cause"],
        "injection": {"patch": f"patches/{fault['id']}.diff"},
        "recovery": f"Roll {svc} back to the previous image",
        "remedy": [{"tool": "rollback_service", "args": {"service": svc}}],
    }


def convert(app: str, writer: Any = None, *, build: bool = True) -> list[str]:
    """Write every buildable code fault through `writer` (a catalog_common.Writer); returns the
    problems of the faults left out."""
    problems: list[str] = []
    consuming = consumers(app)
    for fault in load_faults(app):
        try:
            files = edited_files(app, fault)
        except ValueError as exc:
            problems.append(str(exc))
            continue
        failures = build_failures(app, fault["service"], files) if build else []
        if failures:
            problems.append(f"{fault['id']}: build fails: {failures}")
            continue
        if writer is None:
            continue
        diff = "".join(unified_diff(p, b, a) for p, (b, a) in sorted(files.items()))
        (writer.out / "patches" / f"{fault['id']}.diff").write_text(diff)
        writer.entry(fault["id"], entry_of(fault, fault["service"] in consuming))
    return problems


def write_code_entries(app: str) -> list[str]:
    """Write the app's code entries and patches alone: the code entries the manifest lists are
    rewritten (scope kept), every other entry it lists stays as it is and stays listed."""
    from catalog_common import Writer

    out = ROOT / "fault_catalog" / app
    manifest = out / "generated.txt"
    listed = manifest.read_text().split() if manifest.exists() else []
    others = [entry_id for entry_id in listed if not entry_id.startswith("code-")]
    scopes: dict[str, list[str]] = {}
    for entry_id in listed:
        old = out / f"{entry_id}.yaml"
        if entry_id.startswith("code-") and old.exists():
            if scope := yaml.safe_load(old.read_text()).get("scope"):
                scopes[entry_id] = scope
            old.unlink()
            (out / "patches" / f"{entry_id}.diff").unlink(missing_ok=True)
    (out / "patches").mkdir(parents=True, exist_ok=True)
    writer = Writer(out, scopes)
    problems = convert(app, writer)
    manifest.write_text("\n".join(sorted(others + writer.written)) + "\n")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="build-check an app's code faults")
    parser.add_argument("--app", required=True)
    parser.add_argument("--write", action="store_true", help="also write the code entries and their patches")
    args = parser.parse_args(argv)
    problems = write_code_entries(args.app) if args.write else convert(args.app)
    print(f"{len(load_faults(args.app)) - len(problems)} code faults build, {len(problems)} do not")
    for problem in problems:
        print("SKIPPED", problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
