"""``python -m bench.load.ladder``: load runs of growing size, then the capacity table and the curve.

Each step is a separate ``python -m bench.load`` run (a fresh stack, so no step inherits the
previous one's rooms). The ladder stops early when a step is clearly past capacity (client p99
above ``--stop-p99-ms`` or more than 1 % of plays failing), so it stays within minutes. Options
the ladder does not know (``--store``, ``--seed``...) go to every step, and so does
``--engine-local`` (no engine process: the session runs the rules).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from typing import Any

from bench.load.stack import PROCS, REPO_ROOT, per_process

# Up to the 10,000 players of issue 7; on a 2-core box the stop rule ends the climb near 5,000.
DEFAULT_STEPS = (100, 400, 1000, 2000, 3000, 4000, 5000, 10000)
BAR_WIDTH = 40


def run_step(players: int, duration: float, ramp: float, extra: Sequence[str]) -> dict[str, Any] | None:
    with tempfile.TemporaryDirectory(prefix="ninety-nine-ladder-") as tmp:
        out = os.path.join(tmp, "step.json")
        cmd = [sys.executable, "-m", "bench.load", "--players", str(players), "--duration", str(duration),
               "--ramp", str(ramp), "--quiet", "--json", out, *extra]  # fmt: skip
        print(f"\n$ python -m bench.load {' '.join(cmd[3:-3])} {' '.join(extra)}", flush=True)
        budget = duration + ramp + 240
        try:
            subprocess.run(cmd, cwd=REPO_ROOT, timeout=budget, check=True)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
            print(f"step {players} failed: {exc}", flush=True)
            return None
        with open(out, encoding="utf-8") as fh:
            result: dict[str, Any] = json.load(fh)
            return result


def _fmt(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def print_table(steps: list[dict[str, Any]]) -> None:
    print("\n== Capacity (client-seen move latency = play sent -> played received) ==")
    print(
        f"{'clients':>7} {'rooms':>5} {'moves/s':>7} {'p50 ms':>7} {'p99 ms':>7} {'p99.9':>7} {'×echo':>6} "
        f"{'late p99':>8} {'errors':>6} {'stuck':>5} {'cpu eng/ses/gw/gen %':>21} {'rss ses/gw MB':>14} "
        f"{'KiB/conn':>8} {'KiB/room':>8}"
    )
    for s in steps:
        cpu = s["cpu_avg"]
        rss = s["rss_mb_end"]
        cpus = per_process(cpu, PROCS)  # "-" for the engine with --engine-local
        print(
            f"{s['clients']:>7} {s['rooms']:>5} {s['moves_per_s']:>7.1f} {_fmt(s['p50_ms']):>7} "
            f"{_fmt(s['p99_ms']):>7} {_fmt(s['p999_ms']):>7} {_fmt(s['p99_vs_echo_p99']):>6} "
            f"{_fmt(s['lateness_p99_ms']):>8} {sum(s['errors'].values()):>6} {s['stuck_max']:>5} "
            f"{cpus:>21} {rss.get('session', 0):>6.0f}/{rss.get('gateway', 0):<7.0f} "
            f"{_fmt(s['idle_connection_kb']):>8} {_fmt(s['room_kb']):>8}"
        )
    if steps:
        floor = steps[0]["echo_floor"]
        print(
            f"gRPC echo floor (idle, 64 B loopback): "
            f"p50 {floor['p50_us']:.0f} µs, p99 {floor['p99_us']:.0f} µs"
        )


def print_curve(steps: list[dict[str, Any]]) -> None:
    """Players vs p99 and total CPU, as horizontal bars scaled to the largest value."""
    rows = [(s["clients"], s["p99_ms"] or 0.0, sum(s["cpu_avg"].values())) for s in steps]
    if not rows:
        return
    top_p99 = max(r[1] for r in rows) or 1.0
    print("\n== Curve: clients vs p99 (#) and CPU of all processes, % of one core (=) ==")
    for clients, p99, cpu in rows:
        print(f"{clients:>6} p99 {p99:>8.1f} ms |{'#' * round(BAR_WIDTH * p99 / top_p99):<{BAR_WIDTH}}|")
        print(
            f"{'':>6} cpu {cpu:>8.0f} %  |{'=' * round(BAR_WIDTH * cpu / 200):<{BAR_WIDTH}}| "
            "(200 % = both cores)"
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.load.ladder", description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, nargs="+", default=list(DEFAULT_STEPS), help="client counts")
    parser.add_argument("--duration", type=float, default=40.0, help="measured seconds per step")
    parser.add_argument("--ramp", type=float, default=20.0)
    parser.add_argument("--stop-p99-ms", type=float, default=2000.0, help="stop climbing past this p99")
    parser.add_argument("--json", metavar="PATH", help="write every step's summary to PATH")
    parser.add_argument(
        "--engine-local", action="store_true", help="every step without an engine process (--engine local)"
    )
    args, extra = parser.parse_known_args(argv)
    if args.engine_local:
        extra = [*extra, "--engine-local"]
    steps: list[dict[str, Any]] = []
    for players in args.steps:
        ramp = max(args.ramp, players / 100)  # connecting and seating faster than ~100/s is its own test
        result = run_step(players, args.duration, ramp, extra)
        if result is None:
            break
        steps.append(result)
        plays = max(1, result["move_samples"])
        failed = sum(v for k, v in result["errors"].items() if k.startswith("play:"))
        if (result["p99_ms"] or 0) > args.stop_p99_ms or failed / plays > 0.01:
            print(f"stopping the ladder: {players} clients are past capacity", flush=True)
            break
    print_table(steps)
    print_curve(steps)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(steps, fh, indent=1, ensure_ascii=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
