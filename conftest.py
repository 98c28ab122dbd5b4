"""The project's own test options: `--run-cluster` runs the tests marked `cluster`; tests
marked `heavy` are collected first.

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
    # longest first: under `-n 2` a minute-long test started last keeps one worker busy while
    # the other has nothing left, so the heavy ones go out first and short ones fill the gaps
    items.sort(key=lambda item: item.get_closest_marker("heavy") is None)
    if config.getoption("run_cluster"):
        return
    skip = pytest.mark.skip(reason="needs a real cluster: pass --run-cluster")
    for item in items:
        if item.get_closest_marker("cluster"):
            item.add_marker(skip)
