"""The RuleSet message mapping: every preset round-trips, the mapping follows the declarations."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from ninetynine.engine.rules import PRESETS, Options, RuleSet
from ninetynine.engine.rules.presets import preset_names, rules_for
from ninetynine.engine.rules.ruleset import Effect, Hand, Refill, StockOut
from ninetynine.engine.ruleset_proto import _Dataclass, rules_from_wire, rules_to_proto
from ninetynine.engine.v1 import rules_pb2


def _preset(name: str) -> RuleSet:
    return PRESETS[name] if name in PRESETS else rules_for(Options(mode=name))


@pytest.mark.parametrize("name", preset_names())
def test_every_preset_round_trips_through_its_message(name: str) -> None:
    rules = _preset(name)
    back = rules_from_wire(rules_to_proto(rules).SerializeToString())
    assert back == rules
    # Decoded once: the same bytes give the same object (the deck caches are keyed by identity).
    assert rules_from_wire(rules_to_proto(rules).SerializeToString()) is back


def test_enums_map_by_value_and_none_is_unspecified() -> None:
    msg = rules_to_proto(PRESETS["na-two-player-again"])
    four = next(c for c in msg.deck.cards if c.rank == "4")
    assert four.plays[0].effect == rules_pb2.TURN_EFFECT_REVERSE
    assert four.plays[0].two_players == rules_pb2.TURN_EFFECT_PLAY_AGAIN
    assert Effect.PLAY_AGAIN.value == "playAgain"
    plain = next(c for c in msg.deck.cards if c.rank == "2")
    assert plain.plays[0].two_players == rules_pb2.TURN_EFFECT_UNSPECIFIED
    assert not plain.plays[0].HasField("select")
    ace = next(c for c in msg.deck.cards if c.rank == "A")
    assert [(p.select.field, p.select.number) for p in ace.plays] == [("aceValue", 1), ("aceValue", 11)]


def test_a_dataclass_field_without_a_proto_field_stops_the_mapping() -> None:
    @dataclass(frozen=True)
    class Hand2:
        size: int
        refill: Refill = Refill.ONE
        refill_to: int = 0
        stock_out: StockOut = StockOut.RESHUFFLE_ALL
        draw_two: bool = False

    with pytest.raises(TypeError, match="missing \\['draw_two'\\]"):
        _Dataclass(Hand2, rules_pb2.RuleHand.DESCRIPTOR)
    _Dataclass(Hand, rules_pb2.RuleHand.DESCRIPTOR)  # the real one maps
