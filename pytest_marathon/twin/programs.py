"""Which service's program a container runs: its own, or the one its `command` names.

hotelReservation builds one image holding every service's binary (`go install ./cmd/...`,
xlab-uiuc/aiopslab-applications hotelReservation/Dockerfile: the binaries land in /go/bin, on the
PATH) and each deployment picks one with `command: [<service>]`. The twin ships one image per
service, so a command naming another deployment's program runs that deployment's shipped code in
this pod, with this pod's env (AIOpsLab's wrong_bin_usage: profile's command set to `geo`).

Only deployments whose app.yaml sets a `command` take part: an app that sets none (Online
Boutique, the OpenTelemetry demo) runs each image's entrypoint, as before.
"""

from __future__ import annotations

from collections.abc import Sequence

from pytest_marathon.twin.appspec import AppSpec

#: where `go install` puts the binaries in the golang base image (GOPATH /go)
GO_BIN = "/go/bin/"


class UnknownProgram(ValueError):
    """A command the twin cannot run: no program of the image by that name."""


def programs(spec: AppSpec) -> list[str]:
    """The programs of the app's shared image: the deployments whose manifest names one."""
    return [name for name, dep in spec.deployments.items() if dep.command and dep.has_code]


def program_of(spec: AppSpec, deployment: str, command: Sequence[str]) -> str:
    """The deployment whose code runs for `command` in a pod of `deployment` (its own when the
    command is empty). A name on the PATH (`geo`) or its full path (`/go/bin/geo`) is a program."""
    if not command:
        return deployment
    known = programs(spec)
    if deployment not in known:
        raise UnknownProgram(f"deployment {deployment} runs its image's entrypoint; the twin models a "
                             "command only where the app's manifest sets one")
    word = command[0].removeprefix(GO_BIN)
    if word in known:
        return word
    raise UnknownProgram(f"command {list(command)!r} names no program of the image; the twin runs "
                         f"one of {', '.join(sorted(known))} (or {GO_BIN}<name>)")
