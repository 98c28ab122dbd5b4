"""ts-ticketinfo-service's unit tests (FudanSELab/train-ticket ts-ticketinfo-service/src/test/java: the controller test's
testHome, the welcome text)."""

from testing import TestContext

import service


def test_home():
    assert service.welcome(TestContext(), {"params": {}, "body": None}) == "Welcome to [ TicketInfo Service ] !"
