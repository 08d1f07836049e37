"""``python -m bench [name ...]``: run the benchmark modules (all of them by default).

Each module listed in :data:`BENCHMARKS` is ``bench/<name>.py`` and exposes
``run(report: bench.framework.Report) -> None``. To add a benchmark (e.g. the engine
gRPC one: ``Apply`` over gRPC against an echo service as baseline), write
``bench/engine_grpc.py`` with such a ``run`` and add ``"engine_grpc"`` to the list.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict

from bench.framework import Report

BENCHMARKS: tuple[str, ...] = (
    "rules_apply",
    "engine_grpc",
    "rpc_overhead",
    "grpc_wake",
    "session_move",
    "client_json",
    "wire_slices",
)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument(
        "names", nargs="*", metavar="NAME", help=f"benchmarks to run: {', '.join(BENCHMARKS)}"
    )
    parser.add_argument("--quick", action="store_true", help="a tenth of the samples (a smoke run)")
    parser.add_argument("--json", metavar="PATH", help="also write every case's figures to PATH as JSON")
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark {', '.join(unknown)} (choose from {', '.join(BENCHMARKS)})")
    report = Report(out=sys.stdout, scale=0.1 if args.quick else 1.0)
    started = time.perf_counter()
    for name in args.names or BENCHMARKS:
        module = importlib.import_module(f"bench.{name}")
        module.run(report)
    print(f"\n{len(report.results)} cases in {time.perf_counter() - started:.1f} s")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump([asdict(r) for r in report.results], fh, indent=2, ensure_ascii=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
