"""Median per-call overhead of the tools in-process and over MCP stdio.

Both paths answer the same cheap read (`get_topology`) on identically seeded twins, so the
difference is the transport. Prints medians in milliseconds and the stdio/in-process ratio.
Run: python benchmarks/tool_overhead.py [--calls N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from pytest_marathon.interface import InProcessClient
from pytest_marathon.interface.standalone import standalone_session

TOOL, ARGS = "get_topology", {}


def in_process(calls: int, seed: int) -> list[float]:
    client = InProcessClient(standalone_session("boutique", seed))
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        client.call(TOOL, **ARGS)
        samples.append((time.perf_counter() - started) * 1000.0)
    return samples


async def over_stdio(calls: int, seed: int) -> list[float]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "pytest_marathon.interface.mcp_server", "--app", "boutique", "--seed", str(seed)],
    )
    samples = []
    async with Client(params, read_timeout_seconds=120) as client:
        await client.call_tool(TOOL, ARGS)  # warm the pipe and the server's caches
        for _ in range(calls):
            started = time.perf_counter()
            await client.call_tool(TOOL, ARGS)
            samples.append((time.perf_counter() - started) * 1000.0)
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    local = statistics.median(in_process(args.calls, args.seed))
    remote = statistics.median(anyio.run(over_stdio, args.calls, args.seed))
    print(f"{TOOL}: median in-process {local:.3f} ms, over stdio {remote:.3f} ms, ratio {remote / local:.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
