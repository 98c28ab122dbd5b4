"""ts-preserve-other-service's unit tests (FudanSELab/train-ticket ts-preserve-other-service/src/test/java: the controller test's
testHome, the welcome text)."""

from testing import TestContext

import service


def test_home():
    assert service.welcome(TestContext(), {"params": {}, "body": None}) == "Welcome to [ PreserveOther Service ] !"
