"""Median per-call overhead of the tools in-process and over MCP stdio.

Both paths answer the same reads on identically seeded twins, so the difference is the
transport: a small answer (`get_topology`, ~4 KB) and a page of logs (~15 KB). Prints medians in
milliseconds and the stdio/in-process ratio per tool.
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

CALLS: tuple[tuple[str, dict], ...] = (("get_topology", {}), ("get_logs", {"limit": 50}))


def in_process(calls: int, seed: int) -> dict[str, list[float]]:
    client = InProcessClient(standalone_session("boutique", seed))
    samples: dict[str, list[float]] = {}
    for tool, args in CALLS:
        for _ in range(calls):
            started = time.perf_counter()
            client.call(tool, **args)
            samples.setdefault(tool, []).append((time.perf_counter() - started) * 1000.0)
    return samples


async def over_stdio(calls: int, seed: int) -> dict[str, list[float]]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "pytest_marathon.interface.mcp_server", "--app", "boutique", "--seed", str(seed)],
    )
    samples: dict[str, list[float]] = {}
    async with Client(params, read_timeout_seconds=120) as client:
        for tool, args in CALLS:
            await client.call_tool(tool, args)  # warm the pipe and the server's caches
            for _ in range(calls):
                started = time.perf_counter()
                await client.call_tool(tool, args)
                samples.setdefault(tool, []).append((time.perf_counter() - started) * 1000.0)
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    local = in_process(args.calls, args.seed)
    remote = anyio.run(over_stdio, args.calls, args.seed)
    for tool, _ in CALLS:
        here, there = statistics.median(local[tool]), statistics.median(remote[tool])
        print(f"{tool}: median in-process {here:.3f} ms, over stdio {there:.3f} ms, ratio {there / here:.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
