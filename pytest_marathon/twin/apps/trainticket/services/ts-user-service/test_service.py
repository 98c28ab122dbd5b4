"""ts-user-service's unit tests (FudanSELab/train-ticket ts-user-service/src/test/java: the controller test's
testHome, the welcome text)."""

from testing import TestContext

import service


def test_home():
    assert service.hello(TestContext(), {"params": {}, "body": None}) == "Hello"
