"""What the metering proxy adds to a model call: latency per request, direct vs through it.

Run: `python benchmarks/metering_overhead.py [N]` (default 200 calls of each kind). The upstream
is the scripted model double of the test suite on loopback (answers in microseconds), so the
difference is the proxy's own cost: one more loopback hop, header substitution, usage parsing.
Prints the median latency of non-streamed and streamed Responses calls both ways, the overhead
per call, and the proxy's start and stop time.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import httpx2 as httpx

sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))

from model_double import ModelDouble, Text  # noqa: E402

from pytest_marathon.metering import MeteringProxy, load_price_table, upstreams_from_env  # noqa: E402

BODY = {"model": "gpt-5-mini", "input": "status?"}


def _median_ms(client: httpx.Client, url: str, n: int, stream: bool) -> float:
    times = []
    for _ in range(n):
        started = time.perf_counter()
        if stream:
            with client.stream("POST", url, json={**BODY, "stream": True}) as answer:
                for _chunk in answer.iter_bytes():
                    pass
        else:
            client.post(url, json=BODY).raise_for_status()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    with ModelDouble(script=lambda conv: Text("All quiet. " * 20)) as double:
        env = {"OPENAI_BASE_URL": double.openai_base_url, "OPENAI_API_KEY": "sk-user"}
        started = time.perf_counter()
        proxy = MeteringProxy(load_price_table(), None, upstreams_from_env(env))
        start_s = time.perf_counter() - started
        proxy.begin_invocation(1)
        with httpx.Client(timeout=30) as client:
            for stream in (False, True):
                direct = _median_ms(client, double.openai_base_url + "/responses", n, stream)
                proxied = _median_ms(client, proxy.base_urls["openai"] + "/responses", n, stream)
                kind = "streamed" if stream else "JSON    "
                print(
                    f"{kind}: direct {direct:6.2f} ms, through the proxy {proxied:6.2f} ms, "
                    f"overhead {proxied - direct:+6.2f} ms per call (median of {n})"
                )
        spent = proxy.end_invocation()
        started = time.perf_counter()
        proxy.close()
        stop_s = time.perf_counter() - started
    print(f"metered {spent.requests} calls; proxy start {start_s * 1000:.0f} ms, stop {stop_s * 1000:.0f} ms")


if __name__ == "__main__":
    main()
