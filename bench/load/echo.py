"""The gRPC echo floor: round trips of a small payload to a trivial echo server on loopback.

The echo server is :mod:`bench.servers`' bare echo (a grpc.aio server with the services'
channel options, bytes in, the same bytes out). ``python -m bench.load.echo --port P
--calls N [--interval-ms I]`` times ``N`` unary calls from its own process (so the load
generator's event loop never delays them) and prints one JSON line of percentiles in µs. The
load run measures it once on the idle machine (the floor the move latency is compared with)
and once paced through the loaded run (how much the box itself slows a bare round trip).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence

import grpc

from bench.framework import percentile
from bench.servers import ECHO_METHOD

PAYLOAD = b"x" * 64


def measure(port: int, calls: int, interval_s: float, warmup: int = 200) -> dict[str, float]:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        echo = channel.unary_unary(ECHO_METHOD, request_serializer=None, response_deserializer=None)
        for _ in range(warmup):
            echo(PAYLOAD, timeout=10)
        samples: list[float] = []
        for _ in range(calls):
            started = time.perf_counter_ns()
            echo(PAYLOAD, timeout=10)
            samples.append((time.perf_counter_ns() - started) / 1000)
            if interval_s:
                time.sleep(interval_s)
    samples.sort()
    return {
        "calls": float(len(samples)),
        "p50_us": percentile(samples, 50),
        "p99_us": percentile(samples, 99),
        "p999_us": percentile(samples, 99.9),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.load.echo", description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--interval-ms", type=float, default=0.0)
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.port, args.calls, args.interval_ms / 1000)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
