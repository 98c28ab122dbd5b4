"""ts-assurance-service's unit tests (FudanSELab/train-ticket ts-assurance-service/src/test/java: the controller test's
testHome, the welcome text)."""

from testing import TestContext

import service


def test_home():
    assert service.welcome(TestContext(), {"params": {}, "body": None}) == "Welcome to [ Assurance Service ] !"
