"""ts-verification-code-service's unit tests (FudanSELab/train-ticket ts-verification-code-service:
verifyCode answers false when the request's YsbCaptcha cookie holds no such code)."""

from testing import TestContext

import service


def test_a_code_without_its_cookie_is_refused():
    assert service.verify(TestContext(), {"params": {"verifyCode": "abcd"}, "body": None}) is False
