"""`kubectl exec` into a twin pod: the few programs an operator runs there.

A twin container has no filesystem and no shell, so exec runs a program only when the twin knows
it: `env` and `printenv` in every container (the process environment the pod started with), and
the datastore's own client in a datastore pod (registered by kind in EXEC_PROGRAMS). Anything else
fails as the container runtime fails it: runc's "executable file not found in $PATH", delivered by
the kubelet as an internal error (kubernetes pkg/kubelet/cri/streaming/remotecommand; runc
libcontainer/standard_init_linux.go `exec: %q: executable file not found in $PATH`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ExecResult:
    code: int
    stdout: str
    stderr: str = ""


class ExecFailed(Exception):
    """The runtime could not start the program (no such executable, container not running)."""


def _mongo_shell(twin: Any, pod: Any, argv: list[str]) -> ExecResult:
    """The `mongo` shell of the mongo:4.4 image (`mongosh` answers the same --eval language)."""
    code, stdout, stderr = twin.mongo_shell(pod.name, argv)
    return ExecResult(code, stdout, stderr)


#: kind of deployment -> {program: handler(twin, pod, argv) -> ExecResult}: a datastore's own
#: client in its pod
EXEC_PROGRAMS: dict[str, dict[str, Callable[[Any, Any, list[str]], ExecResult]]] = {
    "mongodb": {"mongo": _mongo_shell, "mongosh": _mongo_shell},
}


def _env(_twin: Any, pod: Any, argv: list[str]) -> ExecResult:
    env = {**dict(sorted(pod.env.items())), "HOSTNAME": pod.name}
    if argv[0] == "printenv" and len(argv) > 1:
        found = [env[name] for name in argv[1:] if name in env]
        # coreutils printenv exits 1 when a named variable is unset
        return ExecResult(0 if len(found) == len(argv) - 1 else 1, "".join(f"{v}\n" for v in found))
    return ExecResult(0, "".join(f"{k}={v}\n" for k, v in env.items()))


COMMON_PROGRAMS: dict[str, Callable[[Any, Any, list[str]], ExecResult]] = {"env": _env, "printenv": _env}


def not_found(program: str) -> str:
    return (f"OCI runtime exec failed: exec failed: unable to start container process: exec: \"{program}\": "
            "executable file not found in $PATH: unknown")


def exec_in_pod(twin: Any, pod_name: str, container: str, argv: list[str]) -> ExecResult:
    """Run `argv` in the pod's container; raises ExecFailed when the runtime cannot start it."""
    pod = twin.cluster.pods.get(pod_name)
    if pod is None:
        raise LookupError(pod_name)
    dep = twin.spec.deployments[pod.deployment]
    if container and container != pod.template.container:
        raise ExecFailed(f"container {container} is not valid for pod {pod_name}")
    if not pod.running:
        raise ExecFailed(f"unable to upgrade connection: container not found (\"{pod.template.container}\")")
    if not argv:
        raise ExecFailed("you must specify at least one command for the container")
    program = argv[0].rsplit("/", 1)[-1]
    handler = EXEC_PROGRAMS.get(dep.kind, {}).get(program) or COMMON_PROGRAMS.get(program)
    if handler is None:
        raise ExecFailed(not_found(argv[0]))
    return handler(twin, pod, [program, *argv[1:]])
