"""A container's environment as the kubelet builds it: ordered entries and `$(VAR)` references.

Upstream Online Boutique never needs the expansion, but the twin's redis password does (see
docs/fidelity.md, "Manifests"): cartservice reads only `REDIS_ADDR` (microservices-demo
src/cartservice/src/Startup.cs), so the password must travel inside that value, and a manifest
can only put a Secret there through a dependent variable. The rules are the API's (k8s.io/api
core/v1 `EnvVar.value` and `Container.args` docs; kubelet `makeEnvironmentVariables` in
pkg/kubelet/kubelet_pods.go): entries are resolved in list order, `$(NAME)` takes the value of
an entry defined *earlier*, an unresolvable reference is left as written, and `$$` is a literal
`$` (so `$$(NAME)` stays `$(NAME)`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping


def env_names(order: Iterable[str], literal: Mapping[str, str], secret: Mapping[str, object]) -> list[str]:
    """The names of a container's env in list order: the manifest's order first (an entry keeps
    its place when its value is replaced, as `kubectl set env` leaves it), names added since
    then after them, sorted."""
    present = set(literal) | set(secret)
    ordered = [name for name in dict.fromkeys(order) if name in present]
    return ordered + sorted(present - set(ordered))


def expand(value: str, defined: Mapping[str, str]) -> str:
    """`value` with its `$(NAME)` references to `defined` replaced."""
    out: list[str] = []
    i = 0
    while i < len(value):
        char = value[i]
        if char == "$" and i + 1 < len(value):
            nxt = value[i + 1]
            if nxt == "$":
                out.append("$")
                i += 2
                continue
            if nxt == "(":
                close = value.find(")", i + 2)
                if close != -1:
                    name = value[i + 2:close]
                    out.append(defined[name] if name in defined else value[i:close + 1])
                    i = close + 1
                    continue
        out.append(char)
        i += 1
    return "".join(out)


def resolve(names: Iterable[str], raw: Mapping[str, str], expandable: set[str]) -> dict[str, str]:
    """Each name's value in order; names in `expandable` (literal values, not Secret data, which
    the kubelet never expands) may refer to the names resolved before them."""
    resolved: dict[str, str] = {}
    for name in names:
        value = raw[name]
        resolved[name] = expand(value, resolved) if name in expandable else value
    return resolved
