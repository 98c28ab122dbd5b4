"""The problem pool: P = <task, context, solution> (AIOpsLab §2.1).

Ids follow AIOpsLab's registry (microsoft/AIOpsLab aiopslab/orchestrator/problems/registry.py) for
the problems whose application the twin has; the context's fault is what that problem's injector
does (aiopslab/generators/fault/inject_otel.py: a flagd flag's defaultVariant set to "on", "100%"
for paymentFailure, "10sec" for imageSlowLoad), the solution what its evaluator compares with
(the problem module's `faulty_service`, or "Yes"/"No" for detection).

Beyond AIOpsLab's own problems, any catalog fault of an app is a problem of any task, with the id
`<app>-<catalog entry id>-<task>` (the catalog's ids are unique within an app, the task is one of
TASKS); localization is the entry's workload, analysis its category's system level and fault type.
"""

from __future__ import annotations

from dataclasses import dataclass, field

TASKS = ("detection", "localization", "analysis", "mitigation")

#: The catalog's categories in AIOpsLab's analysis vocabulary (system level, fault type; the
#: choices of aiopslab/orchestrator/tasks/analysis.py). Kubernetes-object faults sit at the
#: Virtualization level as AIOpsLab's target-port and scale-to-zero problems do.
CATEGORY_ANALYSIS: dict[str, tuple[str, str]] = {
    "code": ("Application", "Code Defect"),
    "dependency": ("Application", "Dependency Problem"),
    "infrastructure": ("Virtualization", "Operation Error"),
    "deployment": ("Virtualization", "Misconfiguration"),
    "configuration": ("Application", "Misconfiguration"),
    "database-network": ("Virtualization", "Network/Storage Issue"),
    "authentication": ("Application", "Authentication Issue"),
}


@dataclass(frozen=True)
class Fault:
    """How a problem's fault is put in place at t = 0 and what undoing it means."""

    kind: str  # "flag": set a flagd flag's default variant; "catalog": inject a catalog entry
    name: str  # the flag, or the catalog entry id
    value: str = ""  # the flag's faulty variant
    healthy: str = ""  # the flag's variant when the fault is gone


@dataclass(frozen=True)
class Problem:
    pid: str
    app: str
    task: str
    fault: Fault | None  # None: a no-operation problem (nothing injected)
    #: The workloads a localization must name (AIOpsLab's faulty_service).
    faulty: tuple[str, ...] = ()
    #: Analysis answer: (system level, fault type) in AIOpsLab's words.
    analysis: tuple[str, str] | None = None
    #: Why the twin cannot run this problem faithfully (the item is skipped with this reason).
    unsupported: str = ""
    source: str = "aiopslab"
    tags: tuple[str, ...] = field(default=())

    @property
    def expects_anomaly(self) -> bool:
        return self.fault is not None


def _flag_problems() -> list[Problem]:
    # (AIOpsLab problem stem, flag, faulty variant, faulty service, tasks)
    # from each aiopslab/orchestrator/problems/<stem>/<stem>.py and the registry's ids
    rows = (
        ("ad_service_failure", "adFailure", "on", "ad", ("detection", "localization")),
        ("ad_service_high_cpu", "adHighCpu", "on", "ad", ("detection", "localization")),
        ("ad_service_manual_gc", "adManualGc", "on", "ad", ("detection", "localization")),
        ("cart_service_failure", "cartFailure", "on", "cart", ("detection", "localization")),
        ("image_slow_load", "imageSlowLoad", "10sec", "frontend", ("detection", "localization")),
        ("kafka_queue_problems", "kafkaQueueProblems", "on", "kafka",
         ("detection", "localization", "mitigation")),
        ("loadgenerator_flood_homepage", "loadGeneratorFloodHomepage", "on", "frontend",
         ("detection", "localization")),
        ("payment_service_failure", "paymentFailure", "100%", "payment", ("detection", "localization")),
        ("payment_service_unreachable", "paymentUnreachable", "on", "checkout", ("detection", "localization")),
        ("product_catalog_service_failure", "productCatalogFailure", "on", "product-catalog",
         ("detection", "localization")),
        ("recommendation_service_cache_failure", "recommendationCacheFailure", "on", "recommendation",
         ("detection", "localization")),
    )
    unsupported = {
        "imageSlowLoad": "the twin does not model imageSlowLoad's delay (docs/fidelity.md, Astronomy Shop)",
    }
    out = []
    for stem, flag, variant, service, tasks in rows:
        for task in tasks:
            out.append(Problem(
                pid=f"astronomy_shop_{stem}-{task}-1", app="astronomy", task=task,
                fault=Fault("flag", flag, variant, "off"), faulty=(service,),
                unsupported=unsupported.get(flag, ""),
            ))
    out.append(Problem(pid="noop_detection_astronomy_shop-1", app="astronomy", task="detection", fault=None))
    return out


def aiopslab_problems() -> list[Problem]:
    """AIOpsLab's problems on the applications the twin has, in the registry's order."""
    return _flag_problems()


def catalog_problems(app: str) -> list[Problem]:
    """Every catalog entry of `app` as a problem of each task."""
    from pytest_marathon.faults import load_catalog

    out = []
    for entry in load_catalog(app).entries:
        level, kind = CATEGORY_ANALYSIS[entry.category]
        # mitigation only where the entry has a remedy (a `none` remedy is waited out)
        for task in TASKS if entry.remedy else TASKS[:3]:
            out.append(Problem(
                pid=f"{app}-{entry.id}-{task}", app=app, task=task,
                fault=Fault("catalog", entry.id), faulty=tuple(entry.culprits),
                analysis=(level, kind), source="catalog",
            ))
    return out


def problem_pool(apps: tuple[str, ...], *, catalog: bool = False) -> list[Problem]:
    """The problems of `apps`: AIOpsLab's, then (with `catalog`) every catalog fault as a problem."""
    pool = [p for p in aiopslab_problems() if p.app in apps]
    if catalog:
        for app in apps:
            pool.extend(catalog_problems(app))
    return pool


def find_problem(pid: str, apps: tuple[str, ...]) -> Problem:
    for problem in problem_pool(apps, catalog=True):
        if problem.pid == pid:
            return problem
    known = ", ".join(p.pid for p in problem_pool(apps))
    raise ValueError(f"no problem {pid!r} for {', '.join(apps)}; AIOpsLab's: {known} "
                     "(or <app>-<catalog entry id>-<task>)")
