"""What a patched Deployment asks for, as the backend's actions: the server's one write path.

A PATCH or PUT yields the deployment the client wants; comparing it with the current one says
which of the project's actions would bring the system there: a new replica count (`scale`), a
pod template equal to an earlier ReplicaSet's (`rollback`, what `kubectl rollout undo` sends),
a new `kubectl.kubernetes.io/restartedAt` (`restart`), a new image (`deploy_image`), env or
resource changes (`update_config`), new container args (`set_container_args`: mongod's
`--tlsMode`, AIOpsLab's auth_miss_mongodb), a new command (`set_container_command`: the program
hotelReservation's shared image runs, AIOpsLab's wrong_bin_usage), a new nodeSelector (`set_node_selector`, AIOpsLab's
assign_to_non_existent_node). Every difference is checked before anything changes, and
one the backend cannot carry (another field, a Secret reference, a removed limit) is a 422
naming the field, the system left as it was; a Deployment applied whole is not what an SRE's
kubectl sends, so the twin changes exactly as the equivalent tool call would change it.
"""

from __future__ import annotations

import contextlib
import copy
from dataclasses import dataclass, field
from typing import Any

from pytest_marathon.apiserver.status import ApiError, invalid
from pytest_marathon.backends.base import Backend, BackendError
from pytest_marathon.twin.quantities import QuantityError, parse_cpu, parse_memory

RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"
HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
#: metadata a client echoes back unchanged; the server owns it, so a different value is ignored
_SERVER_META = ("resourceVersion", "uid", "generation", "creationTimestamp", "managedFields", "selfLink")


@dataclass
class Plan:
    """The actions one request maps to, in the order they run."""

    rollback_to: int | None = None
    restart: bool = False
    image: str | None = None
    env: dict[str, str | None] = field(default_factory=dict)
    resources: dict[str, str] = field(default_factory=dict)
    replicas: int | None = None
    # a container's new command-line arguments (mongod's `--tlsMode requireTLS`, say)
    args: list[str] | None = None
    # a container's new command (which program of hotelReservation's shared image runs)
    command: list[str] | None = None
    # the pod spec's new nodeSelector ({} removes it)
    node_selector: dict[str, str] | None = None

    def empty(self) -> bool:
        return (self.rollback_to is None and not self.restart and self.image is None and not self.env
                and not self.resources and self.replicas is None and self.args is None
                and self.command is None and self.node_selector is None)


def prune(value: Any) -> Any:
    """A document as Go's `omitempty` encoding leaves it: no nulls, empty maps or lists, so a
    template a client round-tripped compares equal to the server's."""
    if isinstance(value, dict):
        out = {k: prune(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, {}, [])}
    if isinstance(value, list):
        return [prune(v) for v in value]
    return value


def plan_change(name: str, current: dict[str, Any], desired: dict[str, Any],
                replica_sets: list[dict[str, Any]]) -> Plan:
    plan = Plan()
    replicas = desired.get("spec", {}).get("replicas")
    if replicas != current["spec"].get("replicas"):
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
            raise invalid("Deployment", name, "spec.replicas", f"Invalid value: {replicas!r}: must be "
                          "greater than or equal to 0", "FieldValueInvalid")
        plan.replicas = replicas
    cur_t, want_t = prune(current["spec"]["template"]), prune(desired.get("spec", {}).get("template"))
    if cur_t != want_t:
        plan.rollback_to = _earlier_revision(want_t, current, replica_sets)
        if plan.rollback_to is None:
            _template_change(name, cur_t, want_t, plan)
    _check_rest(name, current, desired, rollback=plan.rollback_to is not None)
    return plan


def _earlier_revision(template: Any, current: dict[str, Any], replica_sets: list[dict[str, Any]]) -> int | None:
    """The revision whose ReplicaSet's template (hash label aside) the client asks for."""
    now = current["metadata"].get("annotations", {}).get(REVISION)
    for rs in replica_sets:
        theirs = copy.deepcopy(rs["spec"]["template"])
        theirs.get("metadata", {}).get("labels", {}).pop(HASH_LABEL, None)
        revision = rs["metadata"].get("annotations", {}).get(REVISION)
        if _by_value(prune(theirs)) == _by_value(template) and revision is not None and revision != now:
            return int(revision)
    return None


def _by_value(template: Any) -> Any:
    """A template with its containers' resource quantities as numbers: kubectl decodes the
    ReplicaSet it restores into typed objects and sends quantities in canonical form (`1000m`
    comes back as `1`, apimachinery resource.Quantity), so an undo compares by value."""
    out = copy.deepcopy(template)
    for container in (out or {}).get("spec", {}).get("containers", []) if isinstance(out, dict) else []:
        for section in (container.get("resources") or {}).values():
            if not isinstance(section, dict):
                continue
            for res, value in list(section.items()):
                with contextlib.suppress(QuantityError):
                    section[res] = (parse_cpu if res == "cpu" else parse_memory)(str(value))
    return out


def _template_change(name: str, cur: dict[str, Any], want: dict[str, Any], plan: Plan) -> None:
    cur_meta, want_meta = cur.get("metadata", {}), want.get("metadata", {})
    cur_ann, want_ann = dict(cur_meta.get("annotations", {})), dict(want_meta.get("annotations", {}))
    if cur_ann.pop(RESTARTED_AT, None) != want_ann.pop(RESTARTED_AT, None):
        plan.restart = True
    if cur_ann != want_ann or cur_meta.get("labels") != want_meta.get("labels"):
        raise _refused(name, "spec.template.metadata")
    cur_spec, want_spec = dict(cur.get("spec", {})), dict(want.get("spec", {}))
    cur_cs, want_cs = cur_spec.pop("containers", []), want_spec.pop("containers", [])
    old_selector, new_selector = cur_spec.pop("nodeSelector", {}), want_spec.pop("nodeSelector", {})
    if old_selector != new_selector:
        if not isinstance(new_selector, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in new_selector.items()):
            raise _refused(name, "spec.template.spec.nodeSelector", "a nodeSelector maps labels to strings")
        plan.node_selector = dict(new_selector)
    if cur_spec != want_spec:
        raise _refused(name, "spec.template.spec", _first_difference(cur_spec, want_spec))
    if [c.get("name") for c in cur_cs] != [c.get("name") for c in want_cs]:
        raise _refused(name, "spec.template.spec.containers", "names")
    for i, (have, wanted) in enumerate(zip(cur_cs, want_cs, strict=True)):
        where = f"spec.template.spec.containers[{i}]"
        have, wanted = dict(have), dict(wanted)
        if have.pop("image", None) != (image := wanted.pop("image", None)):
            plan.image = image
        _env_change(name, where, have.pop("env", []), wanted.pop("env", []), plan)
        _resource_change(name, where, have.pop("resources", {}), wanted.pop("resources", {}), plan)
        old_args, new_args = have.pop("args", []), wanted.pop("args", [])
        if old_args != new_args:
            if not isinstance(new_args, list) or not all(isinstance(a, str) for a in new_args):
                raise _refused(name, f"{where}.args", "args must be a list of strings")
            plan.args = list(new_args)
        old_command, new_command = have.pop("command", []), wanted.pop("command", [])
        if old_command != new_command:
            if not isinstance(new_command, list) or not all(isinstance(a, str) for a in new_command):
                raise _refused(name, f"{where}.command", "command must be a list of strings")
            plan.command = list(new_command)
        if have != wanted:
            raise _refused(name, where, _first_difference(have, wanted))
    if plan.command is not None and (plan.image or plan.env or plan.resources or plan.args is not None):
        raise _refused(name, "spec.template", "a command together with another template change "
                       "(send them one by one)")
    if plan.node_selector is not None and (plan.image or plan.env or plan.resources or plan.args is not None
                                           or plan.command is not None):
        raise _refused(name, "spec.template", "a nodeSelector together with another template change "
                       "(send them one by one)")
    if plan.args is not None and (plan.image or plan.env or plan.resources):
        raise _refused(name, "spec.template", "args together with another template change (send them one by one)")
    if plan.restart and (plan.image or plan.env or plan.resources or plan.args is not None
                         or plan.command is not None or plan.node_selector is not None):
        raise _refused(name, "spec.template", "a restart together with another template change")
    if plan.image and (plan.env or plan.resources):
        raise _refused(name, "spec.template", "an image together with env or resources (send them one by one)")


def _env_change(name: str, where: str, have: list[dict[str, Any]], wanted: list[dict[str, Any]], plan: Plan) -> None:
    old = {e["name"]: e for e in have}
    new = {e.get("name"): e for e in wanted}
    for var, entry in new.items():
        if old.get(var) == entry:
            continue
        if not isinstance(var, str) or set(entry) - {"name", "value"}:
            raise _refused(name, f"{where}.env[{var}]", "valueFrom (only literal values can be set)")
        plan.env[var] = str(entry.get("value", ""))
    for var in old:
        if var not in new:
            plan.env[var] = None


def _resource_change(name: str, where: str, have: dict[str, Any], wanted: dict[str, Any], plan: Plan) -> None:
    for section in sorted(set(have) | set(wanted)):
        if section not in ("limits", "requests"):
            raise _refused(name, f"{where}.resources.{section}")
        old, new = have.get(section, {}), wanted.get(section, {})
        for res in sorted(set(old) | set(new)):
            if res not in new:
                raise _refused(name, f"{where}.resources.{section}.{res}", "removal")
            if not _same_quantity(res, old.get(res), new[res]):
                plan.resources[f"{section}.{res}"] = str(new[res])


def _same_quantity(resource: str, old: Any, new: Any) -> bool:
    """Two spellings of one quantity (`1000m` and `1`, `1024Mi` and `1Gi`) are the same value:
    the API server keeps quantities decoded (apimachinery pkg/api/resource/quantity.go), and
    kubectl sends them back in canonical form."""
    if old == new:
        return True
    try:
        parse = parse_cpu if resource == "cpu" else parse_memory
        return old is not None and parse(old) == parse(new)
    except (TypeError, ValueError):
        return False


def _check_rest(name: str, current: dict[str, Any], desired: dict[str, Any], *, rollback: bool) -> None:
    """Everything outside replicas and the template must stay as it is (a rollback also
    rewrites the annotations, as kubectl's undo patch does)."""
    cur_spec = {k: v for k, v in current["spec"].items() if k not in ("replicas", "template")}
    want_spec = {k: v for k, v in desired.get("spec", {}).items() if k not in ("replicas", "template")}
    if prune(cur_spec) != prune(want_spec):
        raise _refused(name, "spec", _first_difference(prune(cur_spec), prune(want_spec)))
    skip = _SERVER_META + (("annotations",) if rollback else ())
    cur_meta = {k: v for k, v in current["metadata"].items() if k not in skip}
    want_meta = {k: v for k, v in desired.get("metadata", {}).items() if k not in skip}
    if prune(cur_meta) != prune(want_meta):
        raise _refused(name, "metadata", _first_difference(prune(cur_meta), prune(want_meta)))


def _first_difference(old: dict[str, Any], new: dict[str, Any]) -> str:
    keys = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
    return keys[0] if keys else ""


def _refused(name: str, where: str, what: str = "") -> ApiError:
    path = f"{where}.{what}" if what and not what.startswith(("a ", "an ", "names", "valueFrom", "removal", "args",
                                                                         "command"))\
        else where
    detail = f" ({what})" if what and path == where else ""
    return invalid("Deployment", name, path, "Forbidden: this server changes a deployment's replicas, "
                   f"image, env values, args, command, nodeSelector, resource requests and limits, restarts it or rolls "
                   "it back; "
                   f"nothing else{detail}")


def carry_out(backend: Backend, name: str, plan: Plan) -> list[str]:
    """Run the plan through the backend's actions; returns their messages. A BackendError (a
    bad quantity, a replica count out of range) is a 422 with the backend's words."""
    done = []
    try:
        if plan.rollback_to is not None:
            done.append(backend.rollback(name, plan.rollback_to).message)
        if plan.restart:
            done.append(backend.restart(name).message)
        if plan.image is not None:
            done.append(backend.deploy_image(name, plan.image).message)
        if plan.args is not None:
            done.append(backend.set_container_args(name, plan.args).message)
        if plan.command is not None:
            done.append(backend.set_container_command(name, plan.command).message)
        if plan.node_selector is not None:
            done.append(backend.set_node_selector(name, plan.node_selector).message)
        if plan.env or plan.resources:
            done.append(backend.update_config(name, env=plan.env or None, resources=plan.resources or None).message)
        if plan.replicas is not None:
            done.append(backend.scale(name, plan.replicas).message)
    except BackendError as exc:
        raise invalid("Deployment", name, "spec", f"Invalid value: {exc}", "FieldValueInvalid") from None
    return done
