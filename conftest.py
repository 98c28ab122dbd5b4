"""The project's own test options: `--run-cluster` runs the tests marked `cluster`.

Those tests need a real Kubernetes cluster, given by `--marathon-context CONTEXT` or created
with Kind by the `marathon_cluster` fixture; without `--run-cluster` they are skipped, so the
default suite needs neither Docker nor a cluster.
"""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-cluster", action="store_true", default=False,
                     help="run the tests marked `cluster` against a real cluster")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("run_cluster"):
        return
    skip = pytest.mark.skip(reason="needs a real cluster: pass --run-cluster")
    for item in items:
        if item.get_closest_marker("cluster"):
            item.add_marker(skip)
