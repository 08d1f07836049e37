"""``ninety-nine rules list``: every preset a game may be set up with, its one line and its source.

Every game of the registry is listed: the adding game's presets, then the trick-taking "99"
(``trick``, which ``simulate --rules trick`` plays); ``--json`` names each entry's ``game``.

The listing is the engine's ``ListRules`` answer (:func:`ninetynine.engine.handlers.list_rules`),
so the command, the RPC and the lobby show the same presets in the same order. Text output is one
line per preset (name, players, the one-line summary in ``--lang``, the source); ``--json`` prints
a list of objects with both summaries.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

__all__ = ["add_parser", "preset_rows"]


def preset_rows() -> list[dict[str, Any]]:
    """The presets as ``ListRules`` lists them, JSON-ready."""
    from ninetynine.engine.handlers import list_rules

    return [
        {
            "name": p.name,
            "game": p.game,
            "summary": p.summary,
            "summaryEn": p.summary_en,
            "source": p.source,
            "players": {"min": p.min_players, "max": p.max_players},
        }
        for p in list_rules().presets
    ]


def run_list(args: argparse.Namespace) -> int:
    rows = preset_rows()
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    width = max(len(r["name"]) for r in rows)
    for r in rows:
        players = f"{r['players']['min']}-{r['players']['max']}"
        summary = r["summaryEn"] if args.lang == "en" else r["summary"]
        print(f"{r['name']:<{width}}  {players:>5}  {summary}  [{r['source']}]")
    return 0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    parser = sub.add_parser("rules", help="the rule sets (presets) games can be played with")
    commands = parser.add_subparsers(dest="rules_command", required=True)
    listing = commands.add_parser(
        "list",
        help="print every preset with its one-line description and source",
        description="Every preset SetupRequest.rules (and simulate --rules) takes, in ListRules order.",
    )
    listing.add_argument("--json", action="store_true", help="print a JSON list instead of text")
    listing.add_argument("--lang", choices=("ko", "en"), default="ko", help="the summary's language (text)")
    listing.set_defaults(handler=run_list)
    return parser
