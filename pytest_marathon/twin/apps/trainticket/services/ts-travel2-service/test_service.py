"""ts-travel2-service's unit tests (FudanSELab/train-ticket ts-travel2-service/src/test/java: the controller test's
testHome, the welcome text)."""

from testing import TestContext

import service
import travelcore


def test_home():
    assert service.welcome(TestContext(), {"params": {}, "body": None}) == "Welcome to [ Travle2 Service ] !"


def test_arrival_times_follow_the_route_at_the_trains_speed():
    assert travelcore.minutes_after("09:00", 75) == "10:15"
    assert travelcore.minutes_after("23:30", 45) == "00:15"
