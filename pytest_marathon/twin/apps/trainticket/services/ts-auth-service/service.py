"""ts-auth-service: login (FudanSELab/train-ticket ts-auth-service
`service/impl/TokenServiceImpl.java` getToken: a non-empty verification code is checked with
ts-verification-code-service (`Verification failed.`), then the password (`Incorrect username or
password.`), then a JWT for the user, `login success`). The twin compares the password as stored
(upstream stores a BCrypt hash) and signs no real JWT (docs/fidelity.md)."""

import hashlib

from spring import JavaError, bad, find_one, ok, repo
from ts import VERIFY

MONGO = "ts-auth-mongo"


def hello(ctx, request):
    return "hello"


def login(ctx, request):
    info = request["body"] or {}
    code = str(info.get("verificationCode") or "")
    if code:
        try:
            answer = ctx.http("GET", VERIFY + code)
        except ctx.HttpError as err:
            raise JavaError(err.message) from None
        if answer["body"] is not True:
            return bad("Verification failed.")
    user = find_one(ctx, repo(ctx, MONGO, "user"), {"username": info.get("username")})
    if user is None or user.get("password") != info.get("password"):
        return bad("Incorrect username or password.")
    token = "eyJhbGciOiJIUzI1NiJ9." + hashlib.sha256((user["userId"] + str(ctx.request_id)).encode()).hexdigest()
    return ok({"userId": user["userId"], "username": user["username"], "token": token}, "login success")
