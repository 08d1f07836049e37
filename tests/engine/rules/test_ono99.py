"""003's ONO 99, one named test per rule, each docstring citing the passage of 003 it implements.

Docstrings name 003's section, give the rule in our words and at most a short phrase of the
document: the seeds' README asks for their figures and rules in the code, never their sentences
(as test_presets.py does). 003 (``/work/shared/seeds/003_abce70116b5bcfa8.txt``) describes the
2022 Mattel edition, with notes on the 1980 one: ``ono99-2022``, ``ono99-1980`` and
``ono99-1980-zero`` (the 1980 optional rule). Choices where 003 is unclear are in
docs/rule-sets.md.
"""

from __future__ import annotations

from collections import Counter

import pytest

from ninetynine.engine.convert import action_from_proto, action_to_proto, state_from_proto, state_to_proto
from ninetynine.engine.rules import (
    Action,
    GameState,
    Reason,
    RuleError,
    apply,
    card_choices,
    card_of,
    cards_of,
    discard_action,
    game_result,
    legal_choices,
    player_view,
    public_view,
    setup,
    timeout_action,
)
from ninetynine.engine.rules.presets import PRESETS
from ninetynine.engine.rules.presets_ono import ONO99_1980, ONO99_1980_ZERO, ONO99_2022

from .builders import card_id, card_ids, event_types, faces, make_state, play

O22, O80, O80Z = ONO99_2022, ONO99_1980, ONO99_1980_ZERO


def _ono(rules: object = O22, **kw: object) -> GameState:
    return make_state(rules=rules, **kw)  # type: ignore[arg-type]


def _refused(state: GameState, player: str, action: Action) -> Reason:
    with pytest.raises(RuleError) as err:
        apply(state, player, action)
    return err.value.reason


# -- 2022: setup and cards -----------------------------------------------------------------------


def test_ono2022_deals_four_cards_to_each_player() -> None:
    """003 'ONO 99 설정': four cards to each player («4장의 카드»), the rest is the stock."""
    state, _ = setup(["a", "b", "c"], seed=7, rules=O22)
    assert [len(state.hands[p]) for p in state.seats] == [4, 4, 4]
    assert len(state.draw_pile) == 112 - 12


def test_ono2022_the_pile_starts_at_zero() -> None:
    """003 'ONO 99 플레이': the pile's running total starts at 0."""
    state, _ = setup(["a", "b"], seed=3, rules=O22)
    assert state.total == 0


def test_ono2022_deck_is_the_editions_112_cards() -> None:
    """Card counts are not in 003; we take the 2022 edition's 112 cards (docs/rule-sets.md): 0-10 eight
    times each, four ONO 99, eight Reverse, six Play 2, six -10."""
    counts = Counter(c.face for c in cards_of(O22.deck, 1))
    assert sum(counts.values()) == 112
    assert all(counts[str(v)] == 8 for v in range(11))
    assert (counts["ONO99"], counts["REV"], counts["PLAY2"], counts["-10"]) == (4, 8, 6, 6)


def test_ono2022_number_cards_add_their_value() -> None:
    """003 'ONO 99 플레이', 'ONO 99 카드' (number cards): a number card adds its value (10, then 7: 17),
    then the player draws the top card of the stock."""
    state = _ono(total=10, hands={"a": ["7", "1", "2", "3"], "b": ["4", "5", "6", "8"]})
    after, events = apply(state, "a", play(state, "a", "7"))
    assert after.total == 17 and after.current == "b"
    assert len(after.hands["a"]) == 4  # the top card of the stock is drawn
    assert "cardDrawn" in event_types(events)


def test_ono2022_ono99_card_can_never_be_played() -> None:
    """003 'ONO 99 카드': an ONO 99 card can never be played («절대 사용할 수 없습니다»); it stays in the
    hand and is shown as dead."""
    state = _ono(total=0, hands={"a": ["ONO99", "7", "1", "2"], "b": ["4", "5", "6", "8"]})
    dead = card_of(state, card_id(state, "a", "ONO99"))
    assert card_choices(state, dead) == []
    assert dead.id not in {c.action.card_id for c in legal_choices(state, "a")}
    assert _refused(state, "a", Action(dead.id)) is Reason.CARD_NOT_PLAYABLE
    entry = next(h for h in player_view(state, "a")["hand"] if h["card"]["id"] == dead.id)
    assert entry == {"card": dead.to_dict(), "playable": False, "choices": []}
    assert entry["card"]["kind"] == "ono99"  # shown as dead


def test_ono2022_four_ono99_cards_may_be_discarded_for_four_new_ones() -> None:
    """003 'ONO 99 카드': holding four ONO 99 cards, a player may discard all four and draw four new
    cards in their place."""
    state = _ono(
        total=40,
        hands={"a": ["ONO99"] * 4, "b": ["4", "5", "6", "8"]},
        draw=["1", "2", "3", "9", "10"],
    )
    exchange = discard_action(state, "a")
    assert exchange is not None and faces(state, exchange.discard) == ["ONO99"] * 4
    after, events = apply(state, "a", exchange)
    assert faces(after, after.hands["a"]) == ["1", "2", "3", "9"]
    assert set(exchange.discard) <= set(after.discard)
    assert after.total == 40 and after.history == state.history
    shown = next(e for e in events if e.type == "cardsDiscarded")
    assert shown.audience.value == "all" and [c["face"] for c in shown.data["cards"]] == ["ONO99"] * 4


def test_ono2022_discarding_does_not_use_the_turn() -> None:
    """003 'ONO 99 카드' and 'ONO 99 플레이' (a card must be played on your turn): the exchange is not a
    play, so the player then plays (docs/rule-sets.md)."""
    state = _ono(total=40, hands={"a": ["ONO99"] * 4, "b": ["4", "5", "6", "8"]}, draw=["1", "2", "3", "9"])
    exchange = discard_action(state, "a")
    assert exchange is not None
    after, events = apply(state, "a", exchange)
    assert after.current == "a" and after.seq == state.seq + 1
    assert event_types(events)[-1] == "turnStarted"
    after, _ = apply(after, "a", play(after, "a", "9"))
    assert after.total == 49 and after.current == "b"


def test_ono2022_only_four_ono99_cards_may_be_discarded() -> None:
    """003 'ONO 99 카드': the exchange is of four ONO 99 cards («4장을 모두»), not fewer, not other cards."""
    state = _ono(total=0, hands={"a": ["ONO99", "ONO99", "ONO99", "7"], "b": ["4", "5", "6", "8"]})
    assert discard_action(state, "a") is None
    three = tuple(card_ids(state, "a", "ONO99"))
    assert _refused(state, "a", Action(three[0], discard=three)) is Reason.DISCARD_NOT_ALLOWED
    four = (*three, card_id(state, "a", "7"))
    assert _refused(state, "a", Action(four[0], discard=four)) is Reason.DISCARD_NOT_ALLOWED


def test_ono2022_a_hand_of_four_ono99_is_not_out_and_the_timeout_exchanges_it() -> None:
    """003 'ONO 99 카드': four ONO 99 cards may be swapped for four new ones, so such a hand still has a
    move; the timeout policy makes it."""
    state = _ono(total=40, hands={"a": ["ONO99"] * 4, "b": ["4", "5", "6", "8"]})
    auto = timeout_action(state)
    assert auto.discard and faces(state, auto.discard) == ["ONO99"] * 4
    legal = player_view(state, "a")["legalPlays"]
    assert legal == [{"action": auto.to_dict(), "result": 40}]


def test_ono2022_reverse_reverses_the_direction() -> None:
    """003 '리버스 카드': a Reverse turns the direction of play around."""
    state = _ono(
        total=20, hands={"a": ["REV", "1", "2", "3"], "b": ["4", "5", "6", "8"], "c": ["7", "9", "1", "2"]}
    )
    after, events = apply(state, "a", play(state, "a", "REV"))
    assert after.direction == -1 and after.current == "c" and after.total == 20
    assert "directionChanged" in event_types(events)


def test_ono2022_reverse_with_two_players_acts_as_zero() -> None:
    """003 '리버스 카드': with two players a Reverse counts as a zero («제로 카드»); the next player plays
    as usual."""
    state = _ono(total=20, hands={"a": ["REV", "1", "2", "3"], "b": ["4", "5", "6", "8"]})
    after, events = apply(state, "a", play(state, "a", "REV"))
    assert after.direction == 1 and after.current == "b" and after.total == 20
    assert "directionChanged" not in event_types(events)


def test_ono2022_minus_ten_never_takes_the_total_below_zero() -> None:
    """003 '-10 카드': a -10 takes 10 off; the total never goes below 0 («절대 0 아래로»)."""
    state = _ono(total=6, hands={"a": ["-10", "1", "2", "3"], "b": ["4", "5", "6", "8"]})
    after, _ = apply(state, "a", play(state, "a", "-10"))
    assert after.total == 0
    state = _ono(total=56, hands={"a": ["-10", "1", "2", "3"], "b": ["4", "5", "6", "8"]})
    assert apply(state, "a", play(state, "a", "-10"))[0].total == 46


def test_ono2022_the_total_must_stay_under_99() -> None:
    """003 '플레이어 제거': play so that the total stays under 99 («99 미만»); chosen over the caption's
    'not over 99' in docs/rule-sets.md."""
    state = _ono(total=90, hands={"a": ["9", "8", "10", "ONO99"], "b": ["4", "5", "6", "1"]})
    assert _refused(state, "a", play(state, "a", "9")) is Reason.OVER_99
    assert apply(state, "a", play(state, "a", "8"))[0].total == 98


def test_ono2022_no_card_under_99_eliminates_and_the_next_player_goes_on() -> None:
    """003 '플레이어 제거': a player with no card that keeps the total under 99 is out, lays the hand down,
    is skipped for the rest of the game, and the next player plays on."""
    state = _ono(
        total=90,
        hands={"a": ["8", "1", "2", "3"], "b": ["9", "10", "ONO99", "2"], "c": ["0", "4", "5", "6"]},
    )
    after, events = apply(state, "a", play(state, "a", "8"))
    assert not after.alive["b"] and after.hands["b"] == []
    assert after.current == "c" and after.total == 98
    out = next(e for e in events if e.type == "eliminated")
    assert out.data["player"] == "b" and out.data["reason"] == "noPlayableCard"
    after, _ = apply(after, "c", play(after, "c", "0"))
    assert after.current == "a"  # b's turns are skipped


def test_ono2022_the_last_player_standing_wins() -> None:
    """003 'ONO 승리 99': the last player left in the game wins."""
    state = _ono(total=90, hands={"a": ["8", "1", "2", "3"], "b": ["9", "10", "ONO99", "2"]})
    after, events = apply(state, "a", play(state, "a", "8"))
    assert after.finished and game_result(after).winner == ("a",)
    assert event_types(events)[-1] == "gameFinished"


def test_ono2022_if_nobody_can_play_the_last_to_have_played_wins() -> None:
    """003 'ONO 승리 99': when nobody can play, the last player to have played a card wins."""
    state = _ono(
        total=90,
        hands={"a": ["8", "1", "2", "3"], "b": ["9", "10", "ONO99", "2"], "c": ["1", "2", "3", "4"]},
        draw=["10"],
    )
    after, _ = apply(state, "a", play(state, "a", "8"))
    assert after.finished  # a could not play either: b and c went out first
    assert game_result(after).winner == ("a",)
    assert after.elimination_order == ["b", "c"]


# -- 2022: Play 2 ----------------------------------------------------------------------------------


def _three(total: int, a: list[str], b: list[str], c: list[str], **kw: object) -> GameState:
    return _ono(total=total, hands={"a": a, "b": b, "c": c}, **kw)


def test_ono2022_play_two_next_player_plays_two_cards_drawing_between() -> None:
    """003 '카드 2장 플레이': the next player plays two cards: the first, a draw to replace it, then the
    second («카드 2장을 플레이해야»)."""
    state = _three(10, ["PLAY2", "1", "2", "3"], ["5", "3", "6", "8"], ["7", "9", "1", "2"])
    s1, events = apply(state, "a", play(state, "a", "PLAY2"))
    assert s1.current == "b" and s1.obligation == 2 and s1.total == 10
    passed = next(e for e in events if e.type == "obligationPassed")
    assert passed.data == {"player": "b", "by": "a", "cards": 2}
    assert public_view(s1)["obligation"] == 2
    s2, events = apply(s1, "b", play(s1, "b", "5"))
    assert s2.current == "b" and s2.obligation == 1 and s2.total == 15
    assert len(s2.hands["b"]) == 4  # drew between the two cards
    types = event_types(events)
    assert types.index("cardDrawn") < types.index("secondCardOwed") < types.index("turnStarted")
    assert public_view(s2)["obligation"] == 1
    s3, _ = apply(s2, "b", play(s2, "b", "3"))
    assert s3.current == "c" and s3.obligation == 0 and s3.total == 18
    assert "obligation" not in public_view(s3)


def test_ono2022_reverse_or_play_two_answers_with_one_card_and_passes_it_on() -> None:
    """003 '카드 2장 플레이': the player may answer with a Reverse or a Play 2 of their own, plays only
    that card, and the next player owes the two."""
    state = _three(
        10, ["1", "2", "3", "4"], ["REV", "3", "6", "8"], ["7", "9", "1", "2"], current="b", obligation=2
    )
    after, events = apply(state, "b", play(state, "b", "REV"))
    assert after.direction == -1 and after.current == "a" and after.obligation == 2
    assert next(e for e in events if e.type == "obligationPassed").data == {
        "player": "a",
        "by": "b",
        "cards": 2,
    }
    state = _three(
        10, ["1", "2", "3", "4"], ["PLAY2", "3", "6", "8"], ["7", "9", "1", "2"], current="b", obligation=2
    )
    after, _ = apply(state, "b", play(state, "b", "PLAY2"))
    assert after.current == "c" and after.obligation == 2


def test_ono2022_the_obligation_is_never_more_than_two_cards() -> None:
    """003 '카드 2장 플레이': passed on over several turns, the debt stays two cards («두 장의 카드만»)."""
    state = _three(10, ["PLAY2", "2", "3", "4"], ["PLAY2", "3", "6", "8"], ["PLAY2", "9", "1", "2"])
    for player in ("a", "b", "c"):
        state, _ = apply(state, player, play(state, player, "PLAY2"))
        assert state.obligation == 2
    assert state.current == "a"
    state, _ = apply(state, "a", play(state, "a", "2"))
    state, _ = apply(state, "a", play(state, "a", "3"))
    assert state.current == "b" and state.obligation == 0


def test_ono2022_reverse_with_two_players_does_not_pass_the_obligation() -> None:
    """003 '리버스 카드': with two players a Reverse counts as a zero, so it is the first of the two
    owed cards, not an answer (docs/rule-sets.md)."""
    state = _ono(
        total=10, hands={"a": ["1", "2", "3", "4"], "b": ["REV", "3", "6", "8"]}, current="b", obligation=2
    )
    after, _ = apply(state, "b", play(state, "b", "REV"))
    assert after.current == "b" and after.obligation == 1 and after.total == 10


def test_ono2022_failing_the_second_card_eliminates_and_the_next_player_is_not_forced() -> None:
    """003 '카드 2장 플레이': a player who played the first card but cannot play the second is out, and
    the next player is not forced to play two."""
    state = _three(
        90,
        ["1", "2", "3", "4"],
        ["8", "9", "10", "ONO99"],
        ["0", "1", "5", "6"],
        current="b",
        obligation=2,
        draw=["7"],
    )
    after, events = apply(state, "b", play(state, "b", "8"))
    assert not after.alive["b"] and after.total == 98
    assert after.current == "c" and after.obligation == 0
    assert [e.data["player"] for e in events if e.type == "eliminated"] == ["b"]


def test_ono2022_the_timeout_policy_plays_both_cards() -> None:
    """003 '카드 2장 플레이': the automatic move is legal for the first and for the second card."""
    state = _three(
        10, ["1", "2", "3", "4"], ["5", "3", "6", "8"], ["7", "9", "1", "2"], current="b", obligation=2
    )
    first = timeout_action(state)
    state, _ = apply(state, "b", first)
    assert state.current == "b" and state.obligation == 1
    second = timeout_action(state)
    state, _ = apply(state, "b", second)
    assert state.current == "c" and state.obligation == 0


def test_ono2022_state_obligation_and_discard_cross_the_wire() -> None:
    """The debt (State field 30) and the exchange (Action field 7) survive the protobuf contract."""
    state = _three(10, ["1", "2", "3", "4"], ["5", "3", "6", "8"], ["ONO99"] * 4, current="b", obligation=2)
    back = state_from_proto(state_to_proto(state))
    assert back.obligation == 2 and back.preset == O22
    exchange = Action("OX-1", discard=("OX-1", "OX-2", "OX-3", "OX-4"))
    assert action_from_proto(action_to_proto(exchange)) == exchange


# -- 1980 -------------------------------------------------------------------------------------------


def test_ono1980_minus_ten_may_take_the_total_below_zero() -> None:
    """003 '-10 카드', the 1980 note: the total may go below 0 («마이너스»)."""
    state = _ono(O80, total=6, hands={"a": ["-10", "2", "3", "4"], "b": ["5", "6", "7", "8"]})
    after, _ = apply(state, "a", play(state, "a", "-10"))
    assert after.total == -4
    back = state_from_proto(state_to_proto(after))
    assert back.total == -4
    assert public_view(after)["total"] == -4


def test_ono1980_hold_adds_nothing() -> None:
    """003 '홀드 카드' (1980 only): a Hold adds 0 to the total."""
    state = _ono(
        O80,
        total=50,
        hands={"a": ["HOLD", "2", "3", "4"], "b": ["5", "6", "7", "8"], "c": ["9", "2", "3", "4"]},
    )
    after, _ = apply(state, "a", play(state, "a", "HOLD"))
    assert after.total == 50 and after.current == "b" and after.direction == 1


def test_ono1980_the_deck_is_54_cards() -> None:
    """Card counts are not in 003; we take the 1980 deck's 54 cards (docs/rule-sets.md): 2-10 four times
    each, four ONO 99, Reverse, -10 and Hold, two Double Play."""
    counts = Counter(c.face for c in cards_of(O80.deck, 1))
    assert sum(counts.values()) == 54
    assert (counts["ONO99"], counts["REV"], counts["-10"], counts["HOLD"], counts["DOUBLE"]) == (
        4,
        4,
        4,
        4,
        2,
    )
    assert "0" not in counts and "1" not in counts


def test_ono1980_double_play_can_be_answered_with_a_reverse_or_a_hold() -> None:
    """003 '카드 2장 플레이', the 1980 note: a Double Play is avoided with a Reverse or a Hold, and the
    next player then owes the two."""
    hands = {"a": ["DOUBLE", "2", "3", "4"], "b": ["HOLD", "REV", "6", "8"], "c": ["9", "2", "3", "4"]}
    state = _ono(O80, total=20, hands=hands)
    state, _ = apply(state, "a", play(state, "a", "DOUBLE"))
    assert state.current == "b" and state.obligation == 2
    held, _ = apply(state, "b", play(state, "b", "HOLD"))
    assert held.current == "c" and held.obligation == 2 and held.total == 20
    reversed_, _ = apply(state, "b", play(state, "b", "REV"))
    assert reversed_.current == "a" and reversed_.obligation == 2


def test_ono1980_double_play_may_not_be_the_first_of_the_two_cards() -> None:
    """003 '카드 2장 플레이', the 1980 note: a Double Play may not be the first of the two owed cards
    («첫 번째 카드로 플레이할 수 없습니다»)."""
    hands = {"a": ["2", "3", "4", "5"], "b": ["DOUBLE", "6", "7", "8"], "c": ["9", "2", "3", "4"]}
    state = _ono(O80, total=20, hands=hands, current="b", obligation=2)
    double = play(state, "b", "DOUBLE")
    assert _refused(state, "b", double) is Reason.NOT_FIRST_OF_TWO
    assert double.card_id not in {c.action.card_id for c in legal_choices(state, "b")}
    state, _ = apply(state, "b", play(state, "b", "6"))
    state, _ = apply(state, "b", double)  # as the second card it is played, and passes on
    assert state.current == "c" and state.obligation == 2


def test_ono1980_ono99_cards_cannot_be_discarded() -> None:
    """003 'ONO 99 카드', the 1980 note: ONO 99 cards cannot be got rid of (no exchange)."""
    state = _ono(O80, total=20, hands={"a": ["ONO99", "ONO99", "ONO99", "2"], "b": ["5", "6", "7", "8"]})
    assert discard_action(state, "a") is None
    four = (*card_ids(state, "a", "ONO99"), card_id(state, "a", "2"))
    assert _refused(state, "a", Action(four[0], discard=four)) is Reason.DISCARD_NOT_ALLOWED


def test_ono1980_holding_only_ono99_cards_eliminates() -> None:
    """003 'ONO 99 카드', the 1980 note: a hand of only ONO 99 cards puts the player out."""
    state = _ono(
        O80,
        total=20,
        hands={"a": ["2", "3", "4", "5"], "b": ["ONO99"] * 4, "c": ["9", "2", "3", "4"]},
        validate=False,
    )
    after, events = apply(state, "a", play(state, "a", "2"))
    assert not after.alive["b"] and after.current == "c"
    assert [e.data["player"] for e in events if e.type == "eliminated"] == ["b"]


def test_ono1980_optional_rule_ono99_on_a_total_ending_in_zero_adds_nothing() -> None:
    """003 'ONO 99 카드', the 1980 optional rule: an ONO 99 may be played whenever the total ends in 0
    («0으로 끝날 때마다»), adding 0."""
    hands = {"a": ["ONO99", "2", "3", "4"], "b": ["5", "6", "7", "8"]}
    state = _ono(O80Z, total=30, hands=hands)
    after, _ = apply(state, "a", play(state, "a", "ONO99"))
    assert after.total == 30
    state = _ono(O80Z, total=31, hands=hands)
    assert _refused(state, "a", play(state, "a", "ONO99")) is Reason.CARD_NOT_PLAYABLE
    state = _ono(O80, total=30, hands=hands)  # without the optional rule it is never played
    assert _refused(state, "a", play(state, "a", "ONO99")) is Reason.CARD_NOT_PLAYABLE
    negative = _ono(O80Z, total=-20, hands=hands)
    assert apply(negative, "a", play(negative, "a", "ONO99"))[0].total == -20


def test_ono1980_optional_rule_one_ono99_a_turn() -> None:
    """003 'ONO 99 카드', the 1980 optional rule: one ONO 99 a turn («턴당 … 하나만»); owing two cards
    it may not be the first of them (else a turn could hold two), as the second it may."""
    hands = {"a": ["ONO99", "ONO99", "10", "4"], "b": ["5", "6", "7", "8"]}
    state = _ono(O80Z, total=30, hands=hands, obligation=2)
    assert _refused(state, "a", play(state, "a", "ONO99")) is Reason.NOT_FIRST_OF_TWO
    state, _ = apply(state, "a", play(state, "a", "10"))
    state, _ = apply(state, "a", play(state, "a", "ONO99"))
    assert state.total == 40 and state.current == "b"


def test_ono_presets_are_listed() -> None:
    """Every ONO 99 preset is in the registry (``ninety-nine rules list``, ``simulate --rules``)."""
    assert {"ono99-2022", "ono99-1980", "ono99-1980-zero"} <= set(PRESETS)


# -- scoring, either edition (003 '1980년대 ONO 99 버전 게임 종료') --------------------------------

O22_TOKENS, O80_POINTS, O80_LOW = (
    PRESETS["ono99-2022-tokens"],
    PRESETS["ono99-1980-points"],
    PRESETS["ono99-1980-points-low"],
)


def test_ono_tokens_every_player_starts_with_three() -> None:
    """003 '1980년대 ONO 99 버전 게임 종료': with the tokens, each player gets three at the start."""
    for name in ("ono99-2022-tokens", "ono99-1980-tokens"):
        state, _ = setup(["a", "b", "c"], seed=5, rules=PRESETS[name])
        assert set(state.lives.values()) == {3}


def test_ono_tokens_a_player_who_cannot_play_loses_one_and_a_new_round_starts() -> None:
    """003 '1980년대 ONO 99 버전 게임 종료': a player who cannot play under 99 loses one token, then
    another round is played."""
    state = _ono(
        O22_TOKENS,
        total=90,
        hands={"a": ["8", "1", "2", "3"], "b": ["9", "10", "ONO99", "2"], "c": ["0"] * 4},
    )
    after, events = apply(state, "a", play(state, "a", "8"))
    assert after.lives["b"] == 2 and after.alive["b"] and after.round == 2 and after.total == 0
    assert next(e for e in events if e.type == "roundStarted").data["reason"] == "lifeLost"


def test_ono_tokens_with_none_left_one_more_loss_puts_the_player_out() -> None:
    """003 '1980년대 ONO 99 버전 게임 종료': a player who lost every token and loses another round is
    out; the last one left wins ("on the board")."""
    hands = {"a": ["8", "1", "2", "3"], "b": ["9", "10", "ONO99", "2"], "c": ["0"] * 4}
    state = _ono(O22_TOKENS, total=90, hands=hands, lives_left={"b": 1})
    after, events = apply(state, "a", play(state, "a", "8"))
    assert after.lives["b"] == 0 and after.on_board["b"] and after.alive["b"]
    state = _ono(O22_TOKENS, total=90, hands=hands, lives_left={"b": 0}, on_board=["b"])
    after, events = apply(state, "a", play(state, "a", "8"))
    assert not after.alive["b"]
    assert next(e for e in events if e.type == "eliminated").data["reason"] == "lostOnTheBoard"


def _points_round(rules: object, score: dict[str, int] | None = None) -> tuple[GameState, list[object]]:
    """a makes 98 and keeps ONO 99, Double Play and two numbers making 9; b and c cannot play.

    (The 1980 points version has the card that makes 99 played before its player goes out; here
    that player cannot play and goes out with it in hand: docs/rule-sets.md.)
    """
    state = _ono(
        rules,
        total=90,
        hands={
            "a": ["8", "ONO99", "DOUBLE", "4"],
            "b": ["ONO99", "7", "9", "5"],
            "c": ["2", "3", "10", "6"],
        },
        draw=["5"],
        score=score,
    )
    return apply(state, "a", play(state, "a", "8"))  # type: ignore[return-value]


def test_ono_points_hands_are_counted_numbers_at_face_value_ono99_20_specials_15() -> None:
    """003 '1980년대 ONO 99 버전 게임 종료': number cards at face value, an ONO 99 20, Hold, Reverse,
    Minus Ten and Double Play 15 each; its example hand (ONO 99, Double Play, two numbers making 9)
    scores 44."""
    after, events = _points_round(O80_POINTS)
    scored = {e.data["player"]: e.data for e in events if e.type == "handScored"}  # type: ignore[attr-defined]
    assert scored["a"]["points"] == 44 and len(scored["a"]["cards"]) == 4
    assert after.score["a"] == 44


def test_ono_points_going_out_of_the_round_scores_25_more() -> None:
    """003 '1980년대 ONO 99 버전 게임 종료': a player out of the round (who cannot keep the total under
    99) scores 25 besides the hand."""
    after, events = _points_round(O80_POINTS)
    scored = {e.data["player"]: e.data["points"] for e in events if e.type == "handScored"}  # type: ignore[attr-defined]
    assert scored["b"] == 20 + 7 + 9 + 5 + 25
    assert scored["c"] == 2 + 3 + 10 + 6 + 25
    assert after.score == {"a": 44, "b": 66, "c": 46}


def test_ono_points_the_round_goes_on_until_one_player_is_left() -> None:
    """003 '1980년대 ONO 99 버전 게임 종료': the round goes on until every player but one is out; then a
    new round is dealt to everyone."""
    state = _ono(
        O80_POINTS,
        total=90,
        hands={"a": ["8", "2", "3", "4"], "b": ["ONO99", "7", "9", "5"], "c": ["HOLD", "3", "10", "6"]},
        draw=["9", "10"],
    )
    after, _ = apply(state, "a", play(state, "a", "8"))
    assert not after.alive["b"] and after.current == "c" and after.round == 1  # c plays on
    after, _ = apply(after, "c", play(after, "c", "HOLD"))
    assert after.round == 2 and all(after.alive.values()) and after.total == 0
    assert after.elimination_order == []


def test_ono_points_first_ending_reaching_the_limit_puts_the_player_out() -> None:
    """003 '1980년대 ONO 99 버전 게임 종료', the first way: a player who reaches the chosen score is out of
    the game; the last one left wins."""
    after, _ = _points_round(O80_POINTS, score={"b": 60})
    assert after.score["b"] == 126 and not after.alive["b"] and after.elimination_order == ["b"]
    assert after.alive["a"] and after.alive["c"] and after.round == 2 and not after.finished
    after, _ = _points_round(O80_POINTS, score={"b": 60, "c": 70})
    assert after.finished and game_result(after).winner == ("a",)


def test_ono_points_second_ending_the_lowest_score_wins() -> None:
    """003 '1980년대 ONO 99 버전 게임 종료', the second way: once a player reaches the chosen total the
    others compare scores, and the lowest score wins."""
    after, _ = _points_round(O80_LOW, score={"b": 60, "c": 10})
    assert after.finished
    assert after.score == {"a": 44, "b": 126, "c": 56}
    result = game_result(after)
    assert result.winner == ("a",) and [r.player for r in result.ranking] == ["a", "c", "b"]
    after, _ = _points_round(O80_LOW, score={"b": 10})
    assert not after.finished and after.round == 2  # nobody reached 100 yet


def test_ono_scoring_presets_cover_either_edition() -> None:
    """The scoring of 003's 1980 notes, offered for either edition."""
    for edition in ("2022", "1980"):
        for suffix in ("tokens", "points", "points-low"):
            assert f"ono99-{edition}-{suffix}" in PRESETS
