"""The rule set a room plays: bounded and checked at CreateRoom, shown with the room, listed.

A room names a preset of the rules library (``docs/rule-sets.md``) and may carry house rules over
it. CreateRoom bounds the house rules here, has the engine resolve the whole choice (a trial Setup:
the engine's own refusal, UNKNOWN_RULES or INVALID_OVERRIDE, reaches the caller as it would at
StartGame), and checks the seats against the preset's players range, so a room that could never
start is never stored.

What clients see of it (:func:`room_rules`) depends only on the preset and the house rules, so it
is built once per distinct pair; the list of presets (:func:`list_rules`) once.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache

from ninetynine.engine.errors import from_rule_error
from ninetynine.engine.rules import Reason, RuleError
from ninetynine.engine.rules.presets import preset, preset_names
from ninetynine.engine.rules.ruleset import RuleSet
from ninetynine.engine.v1 import game_pb2
from ninetynine.session.errors import session_error
from ninetynine.session.v1 import session_service_pb2 as pb

__all__ = [
    "MAX_OVERRIDES",
    "MAX_OVERRIDE_LENGTH",
    "bound_overrides",
    "check_seats",
    "list_rules",
    "mode_name",
    "plays_rules",
    "room_rules",
]

# A house-rules sheet is a few lines: the engine takes more, a room keeps at most this.
MAX_OVERRIDES = 16
MAX_OVERRIDE_LENGTH = 32


def bound_overrides(overrides: Mapping[str, str]) -> None:
    """Refuse a sheet over the session's bounds before it goes anywhere (INVALID_OVERRIDE)."""
    if len(overrides) > MAX_OVERRIDES:
        raise from_rule_error(
            RuleError(Reason.INVALID_OVERRIDE, key=f"({len(overrides)} entries)", value=f"<= {MAX_OVERRIDES}")
        )
    for key, value in overrides.items():
        if not 1 <= len(key) <= MAX_OVERRIDE_LENGTH or len(value) > MAX_OVERRIDE_LENGTH:
            raise from_rule_error(
                RuleError(
                    Reason.INVALID_OVERRIDE, key=key[:MAX_OVERRIDE_LENGTH], value=value[:MAX_OVERRIDE_LENGTH]
                )
            )


def check_seats(summary: pb.RuleSummary, max_seats: int) -> None:
    """Refuse seats the rule set cannot be played with."""
    if not summary.min_players <= max_seats <= summary.max_players:
        raise session_error(
            "SEATS_OUTSIDE_RULES",
            rules=summary.name,
            minPlayers=summary.min_players,
            maxPlayers=summary.max_players,
            maxSeats=max_seats,
        )


def plays_rules(rules: str, overrides: Mapping[str, str]) -> bool:
    """Whether a room with these plays a rule set of its own (else the mode of its options, as before)."""
    return bool(rules or overrides)


def mode_name(options: game_pb2.Options) -> str:
    return "classic" if options.mode == game_pb2.MODE_CLASSIC else "kr-product"


def _summary(rules: RuleSet, overrides: Mapping[str, str]) -> pb.RuleSummary:
    fewest, most = rules.players
    return pb.RuleSummary(
        name=rules.name,
        summary=rules.summary,
        summary_en=rules.summary_en,
        source=rules.source,
        min_players=fewest,
        max_players=most,
        thresholds=sorted({t.at for t in rules.thresholds}),
        overrides=overrides,
    )


def room_rules(rules: str, overrides: Mapping[str, str], options: game_pb2.Options) -> pb.RuleSummary:
    """The rules of a room the engine accepted, as its players see them (a copy: the caller may keep it).

    House rules over no preset change the mode of ``options``, which then names them.
    """
    name = rules or mode_name(options)
    return pb.RuleSummary.FromString(_room_rules(name, tuple(sorted(overrides.items()))))


@lru_cache(maxsize=256)
def _room_rules(name: str, overrides: tuple[tuple[str, str], ...]) -> bytes:
    return _summary(preset(name), dict(overrides)).SerializeToString()


@lru_cache(maxsize=1)
def list_rules() -> pb.ListRulesResponse:
    """Every preset, the spec's two modes first (one message for every caller: do not change it)."""
    return pb.ListRulesResponse(presets=[_summary(preset(name), {}) for name in preset_names()])
