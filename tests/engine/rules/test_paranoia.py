"""004 part III, "Паранойя": one named test per rule of the paranoia preset.

Each docstring cites its passage (the section's heading) and gives the rule in our words with at
most a short quoted phrase, as the documents' README asks (docs/rule-sets.md, "Rule sets and presets").

Built from real states (:func:`.builders.make_state`) and the real ``apply``; the choices made where
the document is silent are in docs/rule-sets.md ("paranoia") and named ``our choice`` here.
"""

from __future__ import annotations

import pytest

from ninetynine.engine.rules import (
    Action,
    Audience,
    Event,
    GameState,
    Phase,
    Reason,
    RuleError,
    apply,
    game_result,
    legal_choices,
    player_view,
    public_view,
    setup,
    timeout_action,
)
from ninetynine.engine.rules.overrides import apply_overrides
from ninetynine.engine.rules.presets import PRESETS

from .builders import card_id, card_ids, event_types, make_state

RULES = PRESETS["paranoia"]


def _state(
    total: int, a: list[str], b: list[str] | None = None, c: list[str] | None = None, **kw: object
) -> GameState:
    hands = {"A": a, "B": b or ["7♥", "8♥", "9♥"], "C": c or ["4♥", "5♥", "6♥"]}
    return make_state(rules=RULES, total=total, hands=hands, **kw)  # type: ignore[arg-type]


def _play(s: GameState, player: str, face: str, **choice: object) -> tuple[GameState, list[Event]]:
    return apply(s, player, Action(card_id(s, player, face), **choice))  # type: ignore[arg-type]


def _pair(s: GameState, player: str, face: str, **choice: object) -> tuple[GameState, list[Event]]:
    first, second = card_ids(s, player, face)[:2]
    return apply(s, player, Action(first, pair_card_id=second, **choice))  # type: ignore[arg-type]


def _points(events: list[Event]) -> list[tuple[str, int]]:
    return [(e.data["player"], e.data["points"]) for e in events if e.type == "pointsScored"]


def _pass_all(s: GameState) -> tuple[GameState, list[Event]]:
    """Every player who owes a pass passes the first card of their hand."""
    events: list[Event] = []
    while s.phase is Phase.EXCHANGE:
        s, more = apply(s, s.current, Action(s.hands[s.current][0]))
        events += more
    return s, events


# -- the deal, the rounds and the end ------------------------------------------------------------


def test_paranoia_a_round_starts_from_zero_with_three_cards_each() -> None:
    """004 part III, «Сдача карт» and «Розыгрыш»: three cards each, and the score is 0 before the
    first move."""
    s, _ = setup(["a", "b", "c"], seed=1, rules=RULES)
    assert s.total == 0 and {len(h) for h in s.hands.values()} == {3}
    assert len(s.draw_pile) == 52 - 9 and set(s.score.values()) == {0}


def test_paranoia_four_or_more_players_use_two_decks() -> None:
    """004 part III, «Сдача карт»: with four or more players, two decks («двумя колодами»); 2 to 5 players."""
    three, _ = setup(["a", "b", "c"], seed=1, rules=RULES)
    four, _ = setup(["a", "b", "c", "d"], seed=1, rules=RULES)
    assert (three.deck_count, four.deck_count) == (1, 2)
    assert RULES.players == (2, 5)  # «Сколько игроков 2-5»


def test_paranoia_crossing_33_34_scores_one_point() -> None:
    """004 part III, «Очки за выложенные карты»: a card that takes the total across 33/34
    («пересекает границу») scores its player one point."""
    s, events = _play(_state(30, ["5♠", "2♣", "3♣"]), "A", "5♠")
    assert s.total == 35 and s.score["A"] == 1 and _points(events) == [("A", 1)]
    assert s.current == "B" and s.round == 1


def test_paranoia_crossing_66_67_scores_two_points() -> None:
    """004 part III, «Очки за выложенные карты»: across 66/67, two points."""
    s, events = _play(_state(60, ["7♠", "2♣", "3♣"]), "A", "7♠")
    assert s.total == 67 and s.score["A"] == 2 and _points(events) == [("A", 2)]


def test_paranoia_crossing_99_100_scores_three_points_and_ends_the_round() -> None:
    """004 part III, «Очки за выложенные карты» and the introduction: across 99/100, three points and
    the round (one deal) ends."""
    s = _state(95, ["7♠", "5♣", "3♣"])
    assert any(c.result == 102 for c in legal_choices(s, "A"))  # over 99 may be played
    s, events = _play(s, "A", "7♠")
    assert ("A", 3) in _points(events) and s.score["A"] == 3
    started = next(e for e in events if e.type == "roundStarted")
    assert started.data["reason"] == "thresholdEnded" and s.round == 2 and s.total == 0
    assert {len(h) for h in s.hands.values()} == {3}


def test_paranoia_only_a_crossing_upwards_scores() -> None:
    """004 part III, «Очки за выложенные карты», our choice: a crossing is the total going from 33 or less to
    34 or more; making exactly 33, or going back down across a border, scores nothing."""
    s, events = _play(_state(30, ["3♠", "2♣", "5♣"]), "A", "3♠")
    assert s.total == 33 and not _points(events)
    s, events = _play(_state(40, ["10♠", "2♣", "5♣"]), "A", "10♠", sign="-")
    assert s.total == 30 and not _points(events)


def test_paranoia_the_deal_passes_clockwise_each_round() -> None:
    """004 part III, «Сдача карт»: the deal passes clockwise from game to game («по очереди по часовой
    стрелке»), so the round's first player moves one seat on; each new round starts clockwise (our choice)."""
    s = _state(95, ["7♠", "5♣", "3♣"], current="B", b=["7♦", "5♦", "3♦"], direction=-1)
    s, events = _play(s, "B", "7♦")
    assert next(e for e in events if e.type == "roundStarted").data["starter"] == "C"
    assert s.direction == 1


def test_paranoia_the_agreed_number_of_rounds_then_the_most_points_win() -> None:
    """004 part III, the introduction: the players agree how many rounds they play, and the most points
    win («наибольшее количество очков»). Our choice: by default one round per player (each deals
    once); the ``rounds`` override sets another number; a tie shares the first place."""
    assert RULES.end.target == 0
    s = _state(95, ["7♠", "5♣", "3♣"], round=3, score={"A": 1, "B": 4, "C": 2})
    s, _ = _play(s, "A", "7♠")  # the third round of three ends
    assert s.finished and s.score == {"A": 4, "B": 4, "C": 2}
    result = game_result(s)
    assert set(result.winner) == {"A", "B"}  # our choice: a tie shares the first place
    assert [r.rank for r in result.ranking] == [1, 1, 3]
    five = apply_overrides(RULES, {"rounds": "5"})
    assert five.end.target == 5
    s = make_state(rules=five, total=95, hands={"A": ["7♠"], "B": ["5♦"], "C": ["5♥"]}, round=3)
    s, _ = _play(s, "A", "7♠")
    assert not s.finished and s.round == 4
    with pytest.raises(RuleError):
        apply_overrides(PRESETS["na-standard"], {"rounds": "5"})


# -- one card or a pair --------------------------------------------------------------------------


def test_paranoia_a_play_is_one_or_two_cards_and_as_many_are_drawn() -> None:
    """004 part III, «Розыгрыш»: a player lays one or two cards («одну или две карты») and draws as many
    from the stock as they laid."""
    s, _ = _play(_state(10, ["5♠", "3♣", "3♦"]), "A", "5♠")
    assert len(s.hands["A"]) == 3
    s, events = _pair(_state(10, ["5♠", "3♣", "3♦"]), "A", "3", dir="keep")
    assert len(s.hands["A"]) == 3 and event_types(events).count("cardDrawn") == 2
    assert "pairPlayed" in event_types(events)


def test_paranoia_only_3_3_6_6_9_9_and_k_k_are_pairs() -> None:
    """004 part III, «Розыгрыш»: the pairs that may be laid are 3-3, 6-6, 9-9 and King-King."""
    s = _state(10, ["5♠", "5♣", "3♦"])
    with pytest.raises(RuleError) as err:
        _pair(s, "A", "5")
    assert err.value.reason is Reason.NOT_A_PAIR
    s = _state(10, ["3♠", "6♣", "3♦"])
    with pytest.raises(RuleError) as err:
        apply(s, "A", Action(card_id(s, "A", "3"), pair_card_id=card_id(s, "A", "6"), dir="keep"))
    assert err.value.reason is Reason.NOT_A_PAIR
    with pytest.raises(RuleError) as err:
        apply(s, "A", Action(card_id(s, "A", "3"), pair_card_id=card_id(s, "A", "3"), dir="keep"))
    assert err.value.reason is Reason.NOT_A_PAIR


def test_paranoia_3_3_sets_33_and_may_reverse() -> None:
    """004 part III, the card list: 3 and 3 set the total to 33, and the direction may be reversed
    («При желании»; our choice: the player who lays the pair chooses)."""
    s, _ = _pair(_state(50, ["3♠", "3♣", "5♦"]), "A", "3", dir="keep")
    assert (s.total, s.direction, s.current) == (33, 1, "B")
    s, events = _pair(_state(50, ["3♠", "3♣", "5♦"]), "A", "3", dir="reverse")
    assert (s.total, s.direction, s.current) == (33, -1, "C")
    assert "directionChanged" in event_types(events)
    with pytest.raises(RuleError) as err:
        _pair(_state(50, ["3♠", "3♣", "5♦"]), "A", "3")
    assert err.value.reason is Reason.DIR_REQUIRED


def test_paranoia_6_6_sets_66_and_crosses_what_it_passes() -> None:
    """004 part III, the card list: 6 and 6 set 66 and may reverse; from 20 that crosses 33/34 (one point)
    but not 66/67."""
    s, events = _pair(_state(20, ["6♠", "6♣", "5♦"]), "A", "6", dir="reverse")
    assert (s.total, s.direction) == (66, -1) and _points(events) == [("A", 1)]


def test_paranoia_9_9_sets_99() -> None:
    """004 part III, the card list: 9 and 9 set 99 and may reverse; 99 is not past 99/100, so the round goes
    on (from 20 it crosses 33/34 and 66/67)."""
    s, events = _pair(_state(20, ["9♠", "9♣", "5♦"]), "A", "9", dir="keep")
    assert s.total == 99 and s.round == 1 and _points(events) == [("A", 1), ("A", 2)]


def test_paranoia_k_k_adds_ten_and_takes_a_point_from_every_player_at_a_crossing() -> None:
    """004 part III, the card list: King and King add 10; at a crossing the player takes one point from every
    other player («от каждого игрока по одному очку»). Our choices: instead of the border's own points,
    and the pair starts no exchange."""
    s, events = _pair(_state(60, ["K♠", "K♣", "5♦"], score={"B": 2, "C": 1}), "A", "K")
    assert s.total == 70 and s.score == {"A": 2, "B": 1, "C": 0}
    assert sorted(_points(events)) == [("A", 2), ("B", -1), ("C", -1)]
    s, events = _pair(_state(10, ["K♠", "K♣", "5♦"]), "A", "K")
    assert s.total == 20 and not _points(events) and s.phase is Phase.PLAYING  # no exchange: our choice


def test_paranoia_pair_plays_are_listed_with_the_legal_plays() -> None:
    """004 part III, «Розыгрыш» («одну или две карты»): the legal plays, the view's and the timeout policy's
    choices include every pair the hand holds."""
    s = _state(50, ["3♠", "3♣", "5♦"])
    pairs = [c for c in legal_choices(s, "A") if c.action.pair_card_id]
    assert {(c.action.dir, c.result) for c in pairs} == {("keep", 33), ("reverse", 33)}
    plays = player_view(s, "A")["legalPlays"]
    assert {
        "action": {"cardId": card_ids(s, "A", "3")[0], "dir": "keep", "pairCardId": card_ids(s, "A", "3")[1]},
        "result": 33,
    } in plays
    s = _state(95, ["9♠", "9♣", "K♦"])
    assert timeout_action(s).pair_card_id is not None  # 9-9 makes 99, a single 9 104


def test_paranoia_the_timeout_policy_lowers_the_total_only_when_nothing_else_is_left() -> None:
    """Our choice: the timeout plays the smallest total that does not lower it (a game of rounds
    must reach 99/100 to end), and a lowering play only when it is all there is."""
    s = _state(50, ["3♠", "3♣", "10♦"])
    auto = timeout_action(s)  # 53, not 3-3 (33) nor 10 as -10 (40)
    assert auto.card_id in card_ids(s, "A", "3") and auto.pair_card_id is None
    s = _state(50, ["10♦", "4♣", "5♣"])
    assert timeout_action(s) == Action(card_id(s, "A", "4♣"))  # the total stays
    assert RULES.timeout_forward


# -- the other cards -----------------------------------------------------------------------------


def test_paranoia_ace_adds_1_or_11() -> None:
    """004 part III, the card list: the Ace adds 1 or 11, as the player wishes."""
    assert _play(_state(10, ["A♠", "5♣", "3♣"]), "A", "A♠", ace_value=1)[0].total == 11
    assert _play(_state(10, ["A♠", "5♣", "3♣"]), "A", "A♠", ace_value=11)[0].total == 21


@pytest.mark.parametrize("rank", ["3", "5", "6", "7", "9"])
def test_paranoia_number_cards_add_their_value(rank: str) -> None:
    """004 part III, the card list: 3, 5, 6, 7 and 9 add their value."""
    s, _ = _play(_state(10, [f"{rank}♠", "2♣", "4♣"]), "A", f"{rank}♠")
    assert s.total == 10 + int(rank)


def test_paranoia_four_keeps_the_total_and_reverses() -> None:
    """004 part III, the card list: a 4 leaves the total and reverses the direction."""
    s, _ = _play(_state(40, ["4♠", "5♣", "3♣"]), "A", "4♠")
    assert (s.total, s.direction, s.current) == (40, -1, "C")


def test_paranoia_eight_keeps_the_total() -> None:
    """004 part III, the card list: an 8 leaves the total («счет остается на месте»)."""
    s, _ = _play(_state(40, ["8♠", "5♣", "3♣"]), "A", "8♠")
    assert (s.total, s.direction, s.current) == (40, 1, "B")


def test_paranoia_ten_adds_or_takes_ten() -> None:
    """004 part III, the card list: a 10 adds or takes 10, as the player wishes."""
    assert _play(_state(40, ["10♠", "5♣", "3♣"]), "A", "10♠", sign="+")[0].total == 50
    assert _play(_state(40, ["10♠", "5♣", "3♣"]), "A", "10♠", sign="-")[0].total == 30


def test_paranoia_jack_adds_ten_and_a_crossing_with_it_costs_one_point() -> None:
    """004 part III, the card list: a Jack adds 10, and a crossing made with it earns minus one point
    («минус одно очко»; our choice: instead of the border's points)."""
    s, events = _play(_state(60, ["J♦", "5♣", "3♣"], score={"A": 4}), "A", "J♦")
    assert s.total == 70 and s.score["A"] == 3 and _points(events) == [("A", -1)]
    s, events = _play(_state(10, ["J♦", "5♣", "3♣"]), "A", "J♦")
    assert s.total == 20 and not _points(events)


def test_paranoia_queen_adds_ten_and_a_crossing_with_it_costs_two_points() -> None:
    """004 part III, the card list: a Queen adds 10, and a crossing made with it earns minus two points."""
    s, events = _play(_state(95, ["Q♦", "5♣", "3♣"], score={"A": 4}), "A", "Q♦")
    assert s.score["A"] == 2 and ("A", -2) in _points(events) and s.round == 2


def test_paranoia_a_score_never_goes_below_zero() -> None:
    """004 part III, our choice: the document does not say a score may be negative; as in 002's game
    points, a point that is not there is not taken (the event carries the change made)."""
    s, events = _play(_state(60, ["Q♦", "5♣", "3♣"]), "A", "Q♦")
    assert s.score["A"] == 0 and _points(events) == [("A", 0)]


def test_paranoia_penalty_cards_score_against_their_holder_at_the_round_end() -> None:
    """004 part III, «Очки за выложенные карты»: at the end the players show their hands, and the penalty
    cards count against their holder: Jack of spades and of hearts -3, Queen of spades and of clubs -5."""
    s = _state(
        95,
        ["7♠", "J♠", "J♦"],
        b=["J♥", "Q♠", "5♦"],
        c=["Q♣", "Q♥", "5♥"],
        score={"A": 10, "B": 10, "C": 3},
        draw=["5♣", "6♣", "6♦"],
    )
    s, events = _play(s, "A", "7♠")
    scored = {
        e.data["player"]: (sorted(e.data["cards"]), e.data["points"])
        for e in events
        if e.type == "handScored"
    }
    assert scored == {
        "A": (["JS-1"], -3),
        "B": (sorted(["JH-1", "QS-1"]), -8),
        "C": (["QC-1"], -5),
    }
    assert all(e.audience is Audience.ALL for e in events if e.type == "handScored")
    assert s.score == {"A": 10 + 3 - 3, "B": 2, "C": 0}


# -- 2 and King: the exchange --------------------------------------------------------------------


def _exchange_state(**kw: object) -> GameState:
    return _state(
        10,
        ["2♠", "5♠", "6♠"],
        b=["7♦", "8♦", "9♦"],
        c=["7♣", "8♣", "9♣"],
        draw=["A♦", "A♣", "3♥"],
        **kw,
    )


def test_paranoia_a_two_draws_one_more_and_every_player_passes_a_card() -> None:
    """004 part III, the card list: a 2 adds 2; its player draws a card from the stock and the players
    exchange one card each («одной любой картой»)."""
    s, events = _play(_exchange_state(), "A", "2♠")
    assert s.total == 12 and s.phase is Phase.EXCHANGE
    assert len(s.hands["A"]) == 4  # the card drawn for the 2, and one more
    assert s.passing == {"A": "", "B": "", "C": ""}
    assert "exchangeStarted" in event_types(events)
    assert {c.action.card_id for c in legal_choices(s, "B")} == set(s.hands["B"])


def test_paranoia_a_king_passes_cards_in_the_direction_of_play() -> None:
    """004 part III, the card list: a King adds 10; its player draws one card and every player passes one
    card to the neighbour on the side the play goes («в котором направлении идет игра»)."""
    s = _state(10, ["K♠", "5♠", "6♠"], b=["7♦", "8♦", "9♦"], c=["7♣", "8♣", "9♣"], direction=-1)
    s, _ = _play(s, "A", "K♠")
    assert s.total == 20 and s.phase is Phase.EXCHANGE
    gave = {"A": card_id(s, "A", "5♠"), "B": card_id(s, "B", "7♦"), "C": card_id(s, "C", "7♣")}
    for p in ("B", "C", "A"):
        s, _ = apply(s, p, Action(gave[p]))
    assert s.phase is Phase.PLAYING
    # counter-clockwise: A passes to C, C to B, B to A
    assert gave["A"] in s.hands["C"] and gave["C"] in s.hands["B"] and gave["B"] in s.hands["A"]
    assert s.current == "C"  # play goes on after A, the way it goes
    assert [len(s.hands[p]) for p in "ABC"] == [4, 3, 3]


def test_paranoia_the_exchanged_cards_are_seen_only_by_the_two_players_involved() -> None:
    """004 part III, the exchange of one card with the neighbour: each passed card is shown to its giver
    and its receiver alone; the others see only that a player has chosen, and each player sees their
    own choice."""
    s, _ = _play(_exchange_state(), "A", "2♠")
    five = card_id(s, "A", "5♠")
    s, events = apply(s, "A", Action(five))
    assert [(e.type, e.audience) for e in events] == [("passChosen", Audience.ALL)]
    assert all(five not in str(e.to_dict()) for e in events)
    assert player_view(s, "A")["passing"] == five and "passing" not in player_view(s, "B")
    assert [p.get("passed") for p in public_view(s)["players"]] == [True, False, False]
    assert five not in str(public_view(s)) and five not in str(player_view(s, "B"))
    assert player_view(s, "A")["myTurn"] is False and player_view(s, "B")["myTurn"] is True
    s, _ = apply(s, "B", Action(card_id(s, "B", "7♦")))
    s, events = apply(s, "C", Action(card_id(s, "C", "7♣")))
    done = [e for e in events if e.type == "exchangeDone"]
    assert [(e.player, e.audience) for e in done] == [
        ("A", Audience.ONLY),
        ("B", Audience.ONLY),
        ("C", Audience.ONLY),
    ]
    for e in done:
        seen_by = {v for v in (None, "A", "B", "C") if e.visible_to(v)}
        assert seen_by == {e.player}
    a = next(e for e in done if e.player == "A").data
    b = next(e for e in done if e.player == "B").data
    assert a["gave"]["id"] == five == b["received"]["id"] and (a["to"], b["from"]) == ("B", "A")


def test_paranoia_a_pass_is_owed_once_and_only_a_card_in_hand() -> None:
    """004 part III, «одной любой картой»: any one card of one's own hand, once; no other choice
    goes with it."""
    s, _ = _play(_exchange_state(), "A", "2♠")
    with pytest.raises(RuleError) as err:
        apply(s, "B", Action(card_id(s, "A", "5♠")))
    assert err.value.reason is Reason.CARD_NOT_IN_HAND
    with pytest.raises(RuleError) as err:
        apply(s, "B", Action(card_id(s, "B", "7♦"), dir="reverse"))
    assert err.value.reason is Reason.CHOICE_NOT_ALLOWED
    s, _ = apply(s, "B", Action(card_id(s, "B", "7♦")))
    with pytest.raises(RuleError) as err:
        apply(s, "B", Action(card_id(s, "B", "8♦")))
    assert err.value.reason is Reason.ALREADY_PASSED


def test_paranoia_a_player_out_of_time_passes_the_worst_card_for_their_hand() -> None:
    """Our choice for the timeout: the card that would score worst left in the hand (a penalty card),
    else the first card of the hand."""
    s = _state(10, ["2♠", "5♠", "6♠"], b=["7♦", "Q♠", "J♥"], c=["7♣", "8♣", "9♣"], draw=["A♦"])
    s, _ = _play(s, "A", "2♠")
    assert timeout_action(s, "B").card_id == card_id(s, "B", "Q♠")
    assert timeout_action(s, "C").card_id == s.hands["C"][0]
    assert timeout_action(s).card_id == timeout_action(s, s.current).card_id


def test_paranoia_a_two_or_king_that_ends_the_round_exchanges_before_the_penalties() -> None:
    """004 part III, «Очки за выложенные карты»: when the last card played was a 2 or a King, its player
    draws, every player exchanges a card with the neighbour, and only then («После чего») are the
    hands shown and the penalty cards counted."""
    s = _state(
        95, ["K♠", "5♠", "6♠"], b=["Q♠", "8♦", "9♦"], c=["7♣", "8♣", "9♣"], score={"C": 9}, draw=["5♦", "6♦"]
    )
    s, events = _play(s, "A", "K♠")
    assert s.phase is Phase.EXCHANGE and s.total == 105 and s.score["A"] == 3
    assert "handScored" not in event_types(events)
    s, _ = apply(s, "A", Action(card_id(s, "A", "5♠")))
    s, _ = apply(s, "B", Action(card_id(s, "B", "Q♠")))  # B passes the Queen of spades on to C
    s, events = apply(s, "C", Action(card_id(s, "C", "7♣")))
    scored = [e.data for e in events if e.type == "handScored"]
    assert scored == [{"player": "C", "cards": ["QS-1"], "points": -5}]
    assert s.round == 2 and s.score["C"] == 4 and s.phase is Phase.PLAYING


def test_paranoia_random_games_end_with_every_card_in_place() -> None:
    """A whole game by the timeout policy alone, 2 to 5 players: it ends after the agreed rounds."""
    for n in range(2, 6):
        s, _ = setup([f"p{i}" for i in range(n)], seed=n, rules=RULES)
        for _ in range(5000):
            if s.finished:
                break
            s, _ = apply(s, s.current, timeout_action(s))
        assert s.finished and s.round == n


def test_paranoia_with_two_players_an_exchange_swaps_a_card() -> None:
    """004 part III, «Сколько игроков 2-5» and the exchange with the neighbour: with two players each
    passes a card to the other; our choice: the 4 still reverses, which does not change whose turn it is."""
    hands = {"A": ["K♠", "5♠", "6♠"], "B": ["7♦", "8♦", "4♦"]}
    s = make_state(rules=RULES, total=10, hands=hands, draw=["5♦", "6♦"])
    s, _ = _play(s, "A", "K♠")
    five, seven = card_id(s, "A", "5♠"), card_id(s, "B", "7♦")
    s, _ = apply(s, "B", Action(seven))
    s, _ = apply(s, "A", Action(five))
    assert five in s.hands["B"] and seven in s.hands["A"] and s.current == "B"
    s, _ = _play(s, "B", "4♦")
    assert (s.direction, s.current) == (-1, "A")
