"""The release pipeline's change-cause texts: one seeded grammar per family of change.

Every release the benchmark makes carries a `kubernetes.io/change-cause`: the initial deploy,
the background releases, the faults and their reverts. If any of them had its own wording (a
revert reading `Revert "..."`, a fault cause drawn from a fixed list), the text alone would tell
an agent which revisions to distrust. So every release of one *family* (what kind of thing it
changes) draws its text from the same grammar and the same distribution, whatever its origin:

    cause = [prefix] head [reason] [suffix]

`head` is one of several templates of the family (the values it names are the change's own:
service, variable, tag, limit), `reason` is drawn from one pool shared by all families, and the
prefix and suffix are the team and ticket conventions real pipelines add. `render` returns the
template id with the text, so the ground truth can show which phrasing a release used and tests
can check that no phrasing is reserved for faults.

Nothing here may contain a word the catalog's giveaway filter refuses (`catalog.GIVEAWAY`), nor
"revert"/"rollback": an ordinary release never announces that it undoes another.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from string import Formatter

FAMILIES = ("image", "code", "env", "resources", "probes", "replicas")

# Heads per family. Slots: {svc} always; image: {image} {tag}; code: {subject};
# env: {var} {value}; resources: {what} {value}; probes: {kind} {setting}; replicas: {n}.
_HEADS: dict[str, tuple[str, ...]] = {
    "image": (
        "Bump {svc} to the {tag} release image",
        "Release {svc} {tag}",
        "Roll out {image}",
        "Deploy {svc} {tag}",
        "Update {svc} image to {tag}",
        "Upgrade {svc} to {tag}",
        "{svc}: ship {tag}",
        "Promote {image} from staging",
        "Move {svc} to the {tag} build",
        "Set image {image}",
        "Release train: {svc} {tag}",
        "Pin {svc} to {tag}",
    ),
    "code": (
        "{svc}: {subject}",
        "{subject} ({svc})",
        "[{svc}] {subject}",
        "{svc} - {subject}",
        "Merge: {svc}: {subject}",
        "{svc}: {subject} (squashed)",
    ),
    "env": (
        "Point {var} at {value}",
        "Set {var}={value} on {svc}",
        "Move {var} to the shared service defaults",
        "Sync {var} with the service address list",
        "Update {var} for {svc}",
        "Use {value} for {var}",
        "{svc}: set {var} to {value}",
        "Change {var} in {svc}",
        "Refresh {svc} environment from the config repo",
        "Align {var} across environments",
        "Use the new {svc} settings in {var}",
        "Reconfigure {svc} ({var})",
        "Update the {svc} environment",
        "Sync {svc} settings with the config repo",
        "{svc}: environment update",
        "Apply the {svc} config change",
    ),
    "resources": (
        "Right-size the {svc} {what} to {value}",
        "Set the {svc} {what} to {value}",
        "Trim the {svc} {what} to {value}",
        "Adjust {svc} {what} ({value})",
        "{svc}: {what} {value}",
        "Tune {svc} resources",
        "Update {svc} {what} to {value}",
        "Resize {svc} to a {value} {what}",
        "Apply the capacity plan to {svc}",
        "Change the {svc} {what}",
    ),
    "probes": (
        "Tighten the {svc} {kind} check",
        "Tune the {svc} {kind} probe",
        "Adjust {svc} {kind} probe ({setting})",
        "Update {svc} health checks",
        "{svc}: {kind} probe {setting}",
        "Align the {svc} {kind} probe with the platform template",
        "Change the {svc} {kind} check",
        "Set {setting} on the {svc} {kind} probe",
    ),
    "replicas": (
        "Scale {svc} to {n} replicas",
        "Set {svc} replicas to {n}",
        "{svc}: run {n} replicas",
        "Resize {svc} to {n}",
        "Adjust {svc} replica count ({n})",
    ),
}

# Appended when the same apply changes the rollout strategy; {strategy} is the new type.
_STRATEGY = (
    "; switch to {strategy} so two versions never serve at once",
    "; use the {strategy} strategy",
    " with strategy {strategy}",
    "; {strategy} rollout",
    " ({strategy})",
    "; set strategy to {strategy}",
)

# Shared by every family, so a reason names no kind of release.
_REASONS = (
    "from usage data",
    "to fit the smaller node pool",
    "for the metrics sidecar",
    "after the service naming cleanup",
    "to match staging",
    "per the platform defaults",
    "ahead of the weekend traffic",
    "as agreed in the capacity review",
    "for the mesh migration",
    "to follow the upstream release",
    "after the load test",
    "requested by the storefront team",
    "for the quarterly dependency refresh",
    "to keep environments in step",
    "per the SRE review",
    "after the cost report",
)
_PREFIXES = ("", "", "", "", "ops: ", "platform: ", "deploy: ", "ci: ")
_TICKETS = ("OPS", "PLAT", "SHOP", "REL", "INFRA")


#: The fields a cause may name. Ordinary releases move service addresses (`*_ADDR`) and tune
#: these probe settings; a field only faults change (a listener `PORT`, a password, a probe's
#: port) is never named, or its name alone would mark the release (the text then falls back to
#: the family's heads that name no field).
NAMEABLE_PROBE_SETTINGS = ("failureThreshold", "periodSeconds")


def nameable_variable(var: str) -> bool:
    """Whether a cause may name environment variable `var`: only the service addresses that
    ordinary releases move too (faults/background_changes.py, `_address_change`)."""
    return var.endswith("_ADDR")


@dataclass(frozen=True)
class Cause:
    """A rendered change-cause and the template it came from (`<family>.<n>`)."""

    text: str
    template: str


def render(family: str, slots: Mapping[str, str], rng: random.Random, *,
           strategy: str | None = None) -> Cause:
    """One change-cause of `family` with the change's own values in `slots`; `strategy` when the
    same apply switches the rollout strategy. Every caller (background release, fault, revert,
    initial deploy) draws from here, so equal families give equal distributions of text."""
    heads = _HEADS[family]
    usable = [i for i, head in enumerate(heads) if all(slots.get(f) for f in _fields(head))]
    index = usable[rng.randrange(len(usable))]
    text = heads[index].format(**slots)
    if strategy is not None:
        text += rng.choice(_STRATEGY).format(strategy=strategy)
    if rng.random() < 0.4:
        text += " " + rng.choice(_REASONS)
    text = rng.choice(_PREFIXES) + text
    roll = rng.random()
    if roll < 0.2:
        text += f" ({rng.choice(_TICKETS)}-{rng.randrange(100, 10000)})"
    elif roll < 0.35:
        text += f" (#{rng.randrange(200, 3000)})"
    return Cause(text, f"{family}.{index}")


def vocabulary() -> list[str]:
    """Every fixed piece of text the grammar can emit (heads, strategy clauses, reasons,
    prefixes, code subjects): what a check for giveaway words has to read."""
    heads = [head for family in FAMILIES for head in _HEADS[family]]
    return [*heads, *_STRATEGY, *_REASONS, *(p for p in _PREFIXES if p), *CODE_SUBJECTS]


def _fields(template: str) -> list[str]:
    """The slot names a template needs (a head naming a value the change lacks, e.g. the new
    value of a variable a release removes, is skipped)."""
    return [name for _, name, _, _ in Formatter().parse(template) if name]


#: Subjects of ordinary code releases: what a commit message says of a rebuild that changes no
#: behaviour (the pipeline's own dependency and refactoring work).
CODE_SUBJECTS = (
    "refresh dependencies",
    "bump the gRPC runtime",
    "rebuild on the patched base image",
    "pin the protobuf runtime",
    "tidy request logging",
    "rename internal helpers",
    "move constants into one module",
    "drop unused imports",
    "update the health check library",
    "split the handler into smaller functions",
    "add unit tests for the request handlers",
    "upgrade the OpenTelemetry SDK",
    "reformat with the new linter settings",
    "cache the service stub between calls",
    "document the request fields",
    "raise the log level of start-up messages",
    # what the harmless commits of ordinary code releases say (faults/benign_code.py)
    "document the service module",
    "reword the module docstring",
    "tidy documentation",
    "comment the service constants",
    "document the limits in place",
    "tidy comments",
    "add a helper for the next change",
    "extract a small helper",
    "use digit separators in numeric constants",
    "document the request handlers",
    "comment {name}",
    "document {name} in place",
    "add {name} for the next change",
    "extract {name}",
    "document {name}",
    "add a docstring to {name}",
)


def code_subject(change_cause: str, service: str) -> str:
    """The subject of a catalog code change (`svc: subject` as the catalog writes it), so the
    grammar can phrase it in any of the code family's styles."""
    prefix = f"{service}: "
    return change_cause[len(prefix):] if change_cause.startswith(prefix) else change_cause
