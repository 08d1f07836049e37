"""The rule set a room plays: checked at CreateRoom, and shown with the room.

A room names a preset of the rules library (``docs/rule-sets.md``) and may carry house rules over
it. Both are resolved here when the room is created, by the rules library the engine runs, so a bad
preset or override is refused then with the engine's own reason (UNKNOWN_RULES, INVALID_OVERRIDE)
instead of at StartGame; the engine resolves them again at Setup from what the room stored. The
room's seats must fit the preset's players range.

What clients see of it (:func:`room_rules`) depends only on the preset and the overrides, so it is
built once per distinct pair; the list of presets (:func:`list_rules`) once.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache

from ninetynine.engine.convert import options_from_proto
from ninetynine.engine.errors import from_rule_error
from ninetynine.engine.rules import RuleError
from ninetynine.engine.rules.presets import preset, preset_names
from ninetynine.engine.rules.ruleset import RuleSet
from ninetynine.engine.v1 import game_pb2
from ninetynine.session.errors import session_error
from ninetynine.session.v1 import session_service_pb2 as pb

__all__ = ["check", "list_rules", "room_rules"]


def _resolve(rules: str, overrides: Mapping[str, str]) -> RuleSet:
    """The rule set of preset ``rules`` with ``overrides``; RuleError when either is refused."""
    return preset(rules)


def check(rules: str, overrides: Mapping[str, str], options: game_pb2.Options, max_seats: int) -> None:
    """Refuse, as the engine would at Setup, a room whose rules it cannot play."""
    try:
        options_from_proto(options)
        if not rules:
            return
        resolved = _resolve(rules, overrides)
    except RuleError as err:
        raise from_rule_error(err) from None
    fewest, most = resolved.players
    if not fewest <= max_seats <= most:
        raise session_error(
            "SEATS_OUTSIDE_RULES", rules=rules, minPlayers=fewest, maxPlayers=most, maxSeats=max_seats
        )


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


def room_rules(rules: str, overrides: Mapping[str, str]) -> pb.RuleSummary:
    """The room's rules as its players see them (a copy: the caller may keep it)."""
    return pb.RuleSummary.FromString(_room_rules(rules, tuple(sorted(overrides.items()))))


@lru_cache(maxsize=256)
def _room_rules(rules: str, overrides: tuple[tuple[str, str], ...]) -> bytes:
    resolved = dict(overrides)
    return _summary(_resolve(rules, resolved), resolved).SerializeToString()


@lru_cache(maxsize=1)
def list_rules() -> pb.ListRulesResponse:
    """Every preset, the spec's two modes first (one message for every caller: do not change it)."""
    return pb.ListRulesResponse(presets=[_summary(preset(name), {}) for name in preset_names()])
