"""One seed drives the twin: same seed → identical telemetry, another seed → different."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_marathon.backends import create_backend


def _digest(seed: int, until: float, users: int = 10) -> str:
    backend = create_backend("boutique", seed=seed, users=users)
    backend.advance_to(until)
    return backend.telemetry_digest()


def test_same_seed_same_digest_different_seed_different() -> None:
    first = _digest(5, 300.0)
    assert first == _digest(5, 300.0)
    assert first != _digest(6, 300.0)


@settings(max_examples=4, deadline=None)
@given(seed=st.integers(min_value=0, max_value=2**31), users=st.integers(min_value=1, max_value=12))
def test_digest_is_a_function_of_the_inputs(seed: int, users: int) -> None:
    assert _digest(seed, -200.0, users) == _digest(seed, -200.0, users)


def test_actions_and_chaos_replay_identically() -> None:
    def run() -> str:
        backend = create_backend("boutique", seed=9)
        backend.advance_to(0.0)
        backend.update_config("checkoutservice", env={"EMAIL_SERVICE_ADDR": "emailservice:5001"})
        handle = backend.chaos_start("network_loss", "cartservice", loss=0.3)
        backend.advance_to(150.0)
        backend.chaos_stop(handle)
        backend.rollback("checkoutservice")
        backend.advance_to(240.0)
        return backend.telemetry_digest()

    assert run() == run()
