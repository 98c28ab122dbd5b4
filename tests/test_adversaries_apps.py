"""The attackers against the Runbook on the other marathon apps (Astronomy Shop, Train Ticket).

tests/test_adversaries.py pins each exploit class on Online Boutique, where every exploit bites on
a scorer that has not closed it. The scorer is the same for every app, but what an app exposes is
not (more workloads to enumerate and blanket-restart, a namespace of its own, other alert rules),
so the app-independent claims are checked again on each: every attacker ran its recipe, none
out-scores the Runbook on the same seed and scenario, and neither copies of an incident nor one
incident per guess buy correlation or location.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from adversaries import attackers
from adversaries.runs import assert_ran_its_recipe, shared_runs

from pytest_marathon.results import MarathonResult

SEED = 2
SCENARIO = "short-5"
APPS = ("astronomy", "trainticket")
NAMES = sorted(attackers(SCENARIO))

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", params=APPS)
def run(request: pytest.FixtureRequest,
        tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], MarathonResult]:
    return shared_runs(tmp_path_factory, request.param, SEED, SCENARIO)


@pytest.mark.parametrize("name", NAMES)
def test_each_attacker_ran_its_recipe_and_none_beats_the_runbook(run: Callable[[str], MarathonResult],
                                                                 name: str) -> None:
    result, runbook = run(name), run("runbook")
    assert_ran_its_recipe(result.bundle, name)
    assert result.score_report["marathon_score"] <= runbook.score_report["marathon_score"]


@pytest.mark.parametrize("name", ["duplicate-incidents", "guess-enumeration", "combined"])
def test_many_incidents_holding_every_alert_buy_no_correlation_or_location(
        run: Callable[[str], MarathonResult], name: str) -> None:
    attacker, runbook = run(name).score_report, run("runbook").score_report
    assert attacker["correlated"] <= runbook["correlated"]
    assert attacker["located"] <= runbook["located"]


def test_the_runbook_earns_credit_so_the_comparison_is_not_vacuous(run: Callable[[str], MarathonResult]) -> None:
    """If the runbook scored 0 on this seed, 'no attacker beats it' would only say every score is 0."""
    report = run("runbook").score_report
    assert report["marathon_score"] > 0 and report["correlated"] > 0
