"""Per-call overhead of the sandbox: trivial handler and a realistic one, vs. plain Python.

Prints microseconds per call and the ratio to the same code run unsandboxed. Target: a trivial
call costs < 30 us.
"""

from __future__ import annotations

import time
from pathlib import Path

from pytest_marathon.twin.sandbox import TestContext, compile_service

SOURCE = '''
def Echo(ctx, request):
    return {"x": request.get("x", 0) + 1}
'''
SERVICES = Path(__file__).resolve().parents[1] / "pytest_marathon/twin/apps/boutique/services"


def per_call(func, n: int = 20_000) -> float:
    start = time.perf_counter()
    for _ in range(n):
        func()
    return (time.perf_counter() - start) / n * 1e6


def main() -> None:
    instance = compile_service("bench", {"service.py": SOURCE}).instantiate()
    namespace: dict = {}
    exec(SOURCE, namespace)
    plain = namespace["Echo"]
    sandboxed_us = per_call(lambda: instance.handle("Echo", None, {"x": 1}))
    plain_us = per_call(lambda: plain(None, {"x": 1}))
    print(f"trivial call: {sandboxed_us:.2f} us sandboxed, {plain_us:.2f} us plain, "
          f"ratio {sandboxed_us / plain_us:.1f}x (target < 30 us)")

    folder = SERVICES / "paymentservice"
    files = {p.name: p.read_text() for p in folder.iterdir() if p.is_file()}
    payment = compile_service("paymentservice", files).instantiate()
    ctx = TestContext()
    request = {"amount": {"currency_code": "USD", "units": 12, "nanos": 340000000},
               "credit_card": {"credit_card_number": "4432-8015-6152-0454",
                               "credit_card_expiration_year": 2039,
                               "credit_card_expiration_month": 1}}
    charge_us = per_call(lambda: payment.handle("Charge", ctx, request), n=5_000)
    print(f"paymentservice.Charge (Luhn, card type, expiry, log): {charge_us:.2f} us per call")

    start = time.perf_counter()
    for _ in range(200):
        payment.compiled.instantiate()
    print(f"pod start (instantiate): {(time.perf_counter() - start) / 200 * 1e6:.0f} us")


if __name__ == "__main__":
    main()
