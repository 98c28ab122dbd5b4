"""ts-verification-code-service: captcha images and their check (FudanSELab/train-ticket
ts-verification-code-service `controller/VerifyCodeController.java`,
`service/impl/VerifyCodeServiceImpl.java`: the code lives in a Guava cache keyed by the
YsbCaptcha cookie; a request without the cookie's code is refused). The twin carries no cookies:
generate answers the image's placeholder and verify refuses every code (docs/fidelity.md)."""


def generate(ctx, request):
    return {"status": 200, "body": "<jpeg image>"}


def verify(ctx, request):
    return False
