"""`marathon_cluster`: a real cluster running the app, for suites that need one.

Session-scoped: with `--marathon-context C` the app is deployed to that existing context and
the cluster is left running; otherwise a Kind cluster of the paper's shape is created and
deleted at the end of the session. A machine that can do neither skips the tests using the
fixture, naming what is missing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from pytest_marathon.plugin_options import SETTINGS

CONTEXT_OPTION = "--marathon-context"
FIXTURE_CLUSTER = "marathon-fixture"


def add_cluster_options(parser: pytest.Parser) -> None:
    parser.getgroup("marathon").addoption(
        CONTEXT_OPTION, dest="marathon_context", default=None, metavar="CONTEXT",
        help="kubeconfig context of an existing cluster the marathon_cluster fixture deploys to "
        "(default: create a Kind cluster for the session)",
    )


@pytest.fixture(scope="session")
def marathon_cluster(request: pytest.FixtureRequest) -> Iterator[str]:
    """The kubeconfig context of a cluster running the configured app and its monitoring stack,
    every Deployment Available."""
    from pytest_marathon.deploy.cluster import ClusterError, down, missing_tools, up

    settings = request.config.stash[SETTINGS]
    app = settings.apps[0] if settings.apps else "boutique"
    context = request.config.getoption("marathon_context")
    if context is None and (problem := missing_tools(create=True)):
        pytest.skip(f"no cluster: {problem} (or pass {CONTEXT_OPTION})")
    try:
        context_used = up(app, name=FIXTURE_CLUSTER, context=context)
    except ClusterError:
        if context is None:  # a half-created Kind cluster is not left behind
            with contextlib.suppress(ClusterError):
                down(name=FIXTURE_CLUSTER)
        raise
    yield context_used
    if context is None:
        down(name=FIXTURE_CLUSTER)
