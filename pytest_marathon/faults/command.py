"""`pytest-marathon schedule` and `pytest-marathon validate-catalog`.

Both print ground truth, so they are for benchmark maintainers: nothing an agent runs can reach
them (the tools never import this package).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from pytest_marathon.faults.catalog import Catalog, CatalogError, load_catalog
from pytest_marathon.faults.scenario import load_scenario
from pytest_marathon.faults.schedule import schedule_for


def register(subparsers: Any) -> None:
    """Add this package's subcommands to the `pytest-marathon` parser."""
    schedule = subparsers.add_parser(
        "schedule", help="print the seeded fault schedule of an app and scenario"
    )
    schedule.add_argument("--app", required=True, help="application whose catalog to draw from")
    schedule.add_argument("--seed", type=int, required=True, help="seed of the schedule")
    schedule.add_argument("--scenario", default="marathon", help="name or path (default marathon)")
    schedule.add_argument("--json", action="store_true", help="one JSON array, canonical form")
    schedule.add_argument(
        "--seed-salt", metavar="SALT", help="the secret salt a run was given (the salted schedule)"
    )
    schedule.set_defaults(func=_schedule)

    scenarios = subparsers.add_parser(
        "scenarios",
        help="list the shipped scenarios (--scenario accepts these names or a YAML path)",
        description="List the shipped scenarios: run length, fault arrivals and description.",
    )
    scenarios.set_defaults(func=_scenarios)

    validate = subparsers.add_parser(
        "validate-catalog", help="admit catalog entries by injecting each alone on a fresh twin"
    )
    validate.add_argument("--app", required=True, help="application whose catalog to admit")
    validate.add_argument("--json", action="store_true", help="machine-readable report")
    validate.add_argument("--only", nargs="+", metavar="ID", help="validate just these entries")
    validate.add_argument("--workers", type=int, default=2, help="parallel processes (default 2)")
    validate.add_argument("--root", help="catalog folder to validate instead of the shipped one")
    validate.add_argument(
        "--write-scope", action="store_true",
        help="store each measured scope in its entry file and each verdict in the admission "
        "record (admission-record.json beside the entries)",
    )
    validate.add_argument(
        "--stale", action="store_true",
        help="validate only entries whose inputs (the entry, the engine, the app's twin) changed "
        "since the admission record",
    )
    validate.set_defaults(func=_validate)

    images = subparsers.add_parser(
        "fault-images",
        help="list the fault images a cluster run needs in its registry (one per code fault)",
        description="Every code fault of the catalog with the image reference a Kubernetes "
        "backend on a cluster deploys for it (<registry>/<deployment>:fault-<patch digest>), the "
        "service's language and, with --json, the patch whose defect the image must carry.",
    )
    images.add_argument("--app", required=True, help="application whose catalog to list")
    images.add_argument("--registry", required=True, help="the registry --marathon-registry will name")
    images.add_argument("--json", action="store_true", help="machine-readable, patches included")
    images.set_defaults(func=_fault_images)


def _schedule(args: argparse.Namespace) -> int:
    from pytest_marathon.seed_salt import run_salt

    salt = None  # errors (a bad salt, scenario or catalog): cli.main
    if args.seed_salt is not None:
        salt = run_salt(args.seed_salt, args.app, args.scenario, args.seed)
    schedule = schedule_for(args.app, load_scenario(args.scenario), args.seed, salt=salt)
    if args.json:
        print(schedule.to_json())
        return 0
    scenario = schedule.scenario
    print(f"{args.app} / {scenario.name} / seed {args.seed}: {len(schedule.faults)} faults")
    for fault in schedule.faults:
        e = fault.entry
        print(
            f"{fault.fault_id}  {fault.inject_at:7.0f}s -> {fault.revert_at:7.0f}s  "
            f"{e.category:<16} {e.mechanism:<6} {e.target:<22} {e.id}"
        )
    _print_background(schedule)
    return 0


def _print_background(schedule: Any) -> None:
    """The benign releases of the run (faults/background.py), for the operator: when, what kind,
    when a temporary one is undone, and the service it is planned on (read from a fresh backend's
    topology, as the orchestrator binds it; a release whose service offers nothing of its kind
    when it is due ships nothing). `--json` keeps to the fault records."""
    if not schedule.background:
        return
    from pytest_marathon.backends import create_backend
    from pytest_marathon.faults.background import plan as plan_background

    topology = create_backend(schedule.app, schedule.seed).topology()
    placed = {p.release.release_id: p.target for p in
              plan_background(schedule.background, topology, schedule.faults)}
    print(f"{len(schedule.background)} background releases (ordinary changes, not faults):")
    for release in schedule.background:
        undo = "" if release.restore_at is None else f"{release.restore_at:7.0f}s"
        target = placed.get(release.release_id, "(no free service: not shipped)")
        print(f"{release.release_id}   {release.at:7.0f}s -> {undo:>8}  background       "
              f"{release.kind:<9} {target}")


def _scenarios(args: argparse.Namespace) -> int:
    from pytest_marathon.faults.scenario import builtin_scenarios

    rows = [load_scenario(name) for name in builtin_scenarios()]
    width = max((len(s.name) for s in rows), default=4)
    print(f"{'name':<{width}}  {'length':>8}  {'faults':>6}  description")
    for s in rows:
        length = f"{s.duration_s / 60:g} min"
        print(f"{s.name:<{width}}  {length:>8}  {s.arrivals:>6}  {s.description}")
    return 0


def _fault_images(args: argparse.Namespace) -> int:
    from pytest_marathon.backends.fault_images import listing
    from pytest_marathon.twin.appspec import load_app

    spec = load_app(args.app)
    languages = {name: dep.language for name, dep in spec.deployments.items()}
    rows = listing(load_catalog(args.app), args.registry, languages)
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    width = max((len(r["entry"]) for r in rows), default=5)
    for row in rows:
        print(f"{row['entry']:<{width}}  {row['deployment']:<22} {row['language']:<8} {row['image']}")
    print(f"{len(rows)} fault images")
    return 0


def _validate(args: argparse.Namespace) -> int:
    from pytest_marathon.faults.admission import store_scopes, validate_catalog
    from pytest_marathon.faults.admission_record import (
        engine_digest,
        load_record,
        stale_entries,
        write_record,
    )

    try:
        catalog = load_catalog(args.app, args.root)
        if args.only:
            catalog = catalog.only(args.only)
    except KeyError as exc:  # an --only id the catalog lacks
        raise CatalogError(str(exc.args[0]) if exc.args else str(exc)) from None
    engine = engine_digest(args.app)  # before admission runs: the record is written against it
    if args.stale:
        record = load_record(args.app, args.root)
        stale = stale_entries(catalog, record, engine)
        print(f"{len(stale)} of {len(catalog)} entries changed since the admission record",
              file=sys.stderr if args.json else sys.stdout, flush=True)
        catalog = Catalog(catalog.app, tuple(stale))
    total = len(list(catalog))
    judged = 0

    def show(verdict: Any) -> None:
        """Each entry as it is judged: a whole catalog takes minutes. With --json the lines go
        to stderr, so stdout stays one JSON document."""
        nonlocal judged
        judged += 1
        status = "admitted" if verdict.admitted else "REJECTED"
        reason = "" if verdict.admitted else ": " + "; ".join(verdict.reasons)
        width = len(str(total))
        line = f"[{judged:>{width}}/{total}] {status:<9} {verdict.entry_id}{reason}"
        print(line, file=sys.stderr if args.json else sys.stdout, flush=True)

    report = validate_catalog(catalog, workers=args.workers, on_verdict=show)
    if args.write_scope:
        store_scopes(args.app, report, args.root)
        write_record(args.app, report.verdicts, engine, args.root)
    selection = bool(args.only or args.stale)  # judged entry by entry, not catalog-wide
    if args.json:
        print(json.dumps(report.as_dict(), sort_keys=True, indent=1))
    else:
        print(report.summary(catalog_rules=not selection))
    if selection:
        return 0 if len(report.admitted) == len(report.verdicts) else 1
    return 0 if report.passes_catalog_rules() else 1
