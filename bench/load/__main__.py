"""``python -m bench.load``: one load run against a freshly started stack (see the package doc)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict

from bench.load.run import LoadConfig, run


def build_parser() -> argparse.ArgumentParser:
    defaults = LoadConfig()
    parser = argparse.ArgumentParser(prog="python -m bench.load", description=__doc__)
    parser.add_argument("--players", type=int, default=defaults.players, help="WebSocket clients in all")
    parser.add_argument("--duration", type=float, default=defaults.duration, help="measured seconds")
    parser.add_argument("--ramp", type=float, default=defaults.ramp, help="seconds to connect and seat")
    parser.add_argument("--turn-seconds", type=int, choices=(10, 15, 20, 30), default=defaults.turn_seconds)
    parser.add_argument("--turn-time-scale", type=float, default=defaults.turn_time_scale)
    parser.add_argument("--bot-think-ms", type=int, default=defaults.bot_think_ms)
    parser.add_argument(
        "--afk", type=float, default=defaults.afk_probability, help="share of turns left to time out"
    )
    parser.add_argument(
        "--reconnects-per-minute", type=float, default=defaults.reconnects_per_minute, help="per bound client"
    )
    parser.add_argument("--log-level", default=defaults.log_level, help="the services' log level")
    parser.add_argument(
        "--store",
        default=defaults.store,
        help="sqlite or sqlite?synchronous=normal (a fresh file), or a redis:// URL",
    )
    parser.add_argument(
        "--engine-local",
        action="store_true",
        help="start no engine process: the session runs the rules itself (--engine local); "
        "the engine's CPU and RSS then show as '-' and its work is in the session's",
    )
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--quiet", action="store_true", help="no per-second lines")
    parser.add_argument(
        "--idle",
        action="store_true",
        help="no games: connect and hello every client, bind them to waiting rooms, hold them "
        "--duration seconds and report RSS growth per connection (gateway, session, generator)",
    )
    parser.add_argument("--json", metavar="PATH", help="write the summary and every second to PATH")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.players < 3:
        raise SystemExit("--players must be at least 3 (one room)")
    if args.duration < 1 or args.ramp < 0:
        raise SystemExit("--duration must be >= 1 and --ramp >= 0")
    cfg = LoadConfig(
        players=args.players,
        duration=args.duration,
        ramp=args.ramp,
        turn_seconds=args.turn_seconds,
        turn_time_scale=args.turn_time_scale,
        bot_think_ms=args.bot_think_ms,
        afk_probability=args.afk,
        reconnects_per_minute=args.reconnects_per_minute,
        log_level=args.log_level,
        store=args.store,
        engine_local=args.engine_local,
        seed=args.seed,
        quiet=args.quiet,
        idle=args.idle,
    )
    summary = run(cfg)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(asdict(summary), fh, indent=1, ensure_ascii=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
