"""The ``ninety-nine`` command: one entry point, one subcommand per job."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

Handler = Callable[[argparse.Namespace], int]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ninety-nine", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    from ninetynine import supervisor
    from ninetynine.engine import rules_command, simulate
    from ninetynine.engine import server as engine_server
    from ninetynine.gateway import server as gateway_server
    from ninetynine.session import server as session_server

    simulate.add_parser(sub)
    rules_command.add_parser(sub)
    engine_server.add_parser(sub)
    gateway_server.add_parser(sub)
    session_server.add_parser(sub)
    supervisor.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler: Handler = args.handler
    return handler(args)


if __name__ == "__main__":
    sys.exit(main())
