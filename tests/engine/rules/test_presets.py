"""The rules of each preset, one named test per rule, each citing the passage it implements.

Sources (``/work/shared/seeds``, described in ``docs/rule-sets.md``): 000 is the spec (its
§7 lists the Wikipedia variant), 002 the survey of the North-American game and its
variations, 004 part II the Russian adding game. Docstrings give the document, the passage
and the rule in our words, with a short phrase of the source where it settles a reading.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest

from ninetynine.engine.rules import (
    Event,
    GameState,
    Phase,
    Reason,
    RuleError,
    apply,
    card_choices,
    card_of,
    cards_of,
    game_result,
    legal_choices,
    player_view,
    public_view,
    setup,
    timeout_action,
    validate_state,
)
from ninetynine.engine.rules.presets import PRESETS, preset, preset_names, with_house_rules

from .builders import card_id, event_types, faces, make_state, play


def _play(state: GameState, player: str, face: str, **choice: object) -> tuple[GameState, list[Event]]:
    return apply(state, player, play(state, player, face, **choice))


def _results(state: GameState, player: str, face: str) -> list[int]:
    """The totals ``player``'s card of this face may make now (legal choices only)."""
    card = card_of(state, card_id(state, player, face))
    return sorted(c.result for c in card_choices(state, card) if c.legal)


def _new_round(events: list[Event]) -> Event:
    return next(e for e in events if e.type == "roundStarted")


# -- the registry ------------------------------------------------------------------------------


def test_every_preset_has_a_name_summaries_and_a_source() -> None:
    """Issue 17: presets are named, each with its one-line description and source."""
    assert preset_names()[:2] == ("kr-product", "classic")
    for name in preset_names():
        rules = preset(name)
        assert rules.name == name and rules.summary and rules.summary_en and rules.source
        assert rules.game == "adding"


def test_an_unknown_preset_is_refused_with_invalid_option() -> None:
    with pytest.raises(RuleError) as err:
        preset("uno")
    assert err.value.reason is Reason.INVALID_OPTION


def test_a_preset_game_names_its_rules_in_the_view_and_the_start_event() -> None:
    state, events = setup(["a", "b"], seed=1, rules=PRESETS["na-standard"])
    assert public_view(state)["rules"] == "na-standard"
    assert events[0].data["rules"] == "na-standard"
    plain, _ = setup(["a", "b"], seed=1)
    assert "rules" not in public_view(plain)


# -- 000 §7, the Wikipedia variant ---------------------------------------------------------------

WIKI = PRESETS["wikipedia"]


def test_wikipedia_three_skips_the_next_player() -> None:
    """000 §7 (Wikipedia 'standard'): a 3 skips the next player (it still adds 3)."""
    s = make_state(
        rules=WIKI, total=40, hands={"A": ["3", "2", "5"], "B": ["2", "5", "6"], "C": ["2", "5", "6"]}
    )
    s, events = _play(s, "A", "3")
    assert (s.total, s.current) == (43, "C")
    assert next(e for e in events if e.type == "turnSkipped").data == {"player": "B", "by": "A"}


def test_wikipedia_nine_sets_99() -> None:
    """000 §7: a 9 makes the total 99."""
    s = make_state(rules=WIKI, total=12, hands={"A": ["9", "2", "5"], "B": ["9", "5", "6"]})
    assert _results(s, "A", "9") == [99]


def test_wikipedia_ten_is_plus_or_minus_ten() -> None:
    """000 §7: a 10 is ±10."""
    s = make_state(rules=WIKI, total=50, hands={"A": ["10", "2", "5"], "B": ["9", "5", "6"]})
    assert _results(s, "A", "10") == [40, 60]


def test_wikipedia_king_is_zero() -> None:
    """000 §7: a King counts 0 (the total stays)."""
    s = make_state(rules=WIKI, total=97, hands={"A": ["K", "5", "6"], "B": ["9", "5", "6"]})
    assert _results(s, "A", "K") == [97]


# -- 002, the standard North-American game ------------------------------------------------------

NA = PRESETS["na-standard"]


@pytest.mark.parametrize(("players", "cards", "pennies"), [(2, 52, 5), (4, 52, 5), (5, 104, 3), (10, 104, 3)])
def test_na_deck_and_pennies_by_player_count(players: int, cards: int, pennies: int) -> None:
    """002: 5 pennies each and 3 cards from a 52-card deck; 'if more than 4 people are playing use
    2 decks and give each player just 3 pennies'."""
    s, _ = setup([f"p{i}" for i in range(players)], seed=3, rules=NA)
    assert len(cards_of(NA.deck, s.deck_count)) == cards
    assert set(s.lives.values()) == {pennies}
    assert {len(h) for h in s.hands.values()} == {3}


def test_na_ace_is_one_or_eleven() -> None:
    """002: an Ace adds one or eleven, at the player's choice."""
    s = make_state(rules=NA, total=20, hands={"A": ["A", "2", "5"], "B": ["9", "5", "6"]})
    assert _results(s, "A", "A") == [21, 31]


def test_na_four_reverses_without_changing_the_total() -> None:
    """002: a Four leaves the total and reverses the direction of play."""
    s = make_state(rules=NA, total=30, hands={"A": ["4", "2"], "B": ["5", "6"], "C": ["5", "6"]})
    s, events = _play(s, "A", "4")
    assert (s.total, s.direction, s.current) == (30, -1, "C")
    assert "directionChanged" in event_types(events)


def test_na_four_with_two_players_acts_as_a_nine() -> None:
    """002: with two players a Four has no effect on the turn order, 'just as though you had
    played a nine'."""
    s = make_state(rules=NA, total=30, hands={"A": ["4", "2"], "B": ["5", "6"]})
    s, events = _play(s, "A", "4")
    assert (s.total, s.direction, s.current) == (30, 1, "B")
    assert "directionChanged" not in event_types(events)


def test_na_nine_leaves_the_total() -> None:
    """002: a Nine counts as zero and play passes on."""
    s = make_state(rules=NA, total=95, hands={"A": ["9", "8"], "B": ["2", "6"], "C": ["2", "6"]})
    s, _ = _play(s, "A", "9")
    assert (s.total, s.direction, s.current) == (95, 1, "B")


def test_na_ten_is_plus_or_minus_ten() -> None:
    """002: a Ten increases or reduces the total by ten, at the player's choice."""
    s = make_state(rules=NA, total=10, hands={"A": ["10", "2"], "B": ["5", "6"]})
    assert _results(s, "A", "10") == [0, 20]


def test_na_king_sets_99() -> None:
    """002: a King sets the total to 99."""
    s = make_state(rules=NA, total=10, hands={"A": ["K", "2"], "B": ["5", "6"]})
    assert _results(s, "A", "K") == [99]


def test_na_jack_and_queen_count_ten() -> None:
    """002: Jacks and queens count as 10."""
    s = make_state(rules=NA, total=10, hands={"A": ["J", "Q"], "B": ["5", "6"]})
    assert _results(s, "A", "J") == _results(s, "A", "Q") == [20]


def _a_loss(rules_name: str, **kw: object) -> tuple[GameState, list[Event]]:
    """A plays an 8 on 90; B then holds only cards that go over 99 and loses at once."""
    s = make_state(
        rules=PRESETS[rules_name],
        total=90,
        hands={"A": ["8", "2", "3"], "B": ["5", "6", "8"], "C": ["A", "3", "5"]},
        **kw,  # type: ignore[arg-type]
    )
    return _play(s, "A", "8")


def test_na_a_loss_costs_a_penny_and_ends_the_hand() -> None:
    """002: a player who cannot play without going over 99 lays down the hand; the play ends and
    they toss one penny into the centre."""
    s, events = _a_loss("na-standard")
    lost = next(e for e in events if e.type == "lifeLost")
    assert lost.data["player"] == "B" and s.lives["B"] == 4
    assert _new_round(events).data["reason"] == "lifeLost" and s.total == 0
    assert {len(h) for h in s.hands.values()} == {3}


def test_na_no_pennies_left_is_out() -> None:
    """002: 'players who have no pennies left drop out of the game'."""
    s, events = _a_loss("na-standard", lives_left={"B": 1})
    assert not s.alive["B"]
    assert next(e for e in events if e.type == "eliminated").data["reason"] == "noLivesLeft"


def test_na_the_deal_passes_left_after_each_hand() -> None:
    """002: after each hand the deal passes to the next player to the left who is still in, so
    the player who starts rotates (it is not the loser); each hand starts clockwise."""
    s = make_state(
        rules=NA,
        total=88,
        direction=-1,
        current="C",
        hands={"A": ["5", "6", "7"], "B": ["2", "3", "4"], "C": ["8", "2", "3"]},
    )
    assert s.round_starter == "C"
    s, events = _play(s, "C", "8")  # counter-clockwise: B is next, plays...
    s, events = _play(s, "B", "2")  # ... 98, too much for A's 5, 6, 7: A loses
    assert next(e for e in events if e.type == "lifeLost").data["player"] == "A"
    assert _new_round(events).data["starter"] == "A"  # the seat after C, clockwise
    assert (s.current, s.direction) == ("A", 1)


def test_na_stock_out_keeps_the_top_discard() -> None:
    """002: when the stock runs out, the top card of the discard starts a new discard pile and the
    rest is shuffled into a new stock; the count is unchanged."""
    s = make_state(rules=NA, total=20, hands={"A": ["2", "3", "4"], "B": ["5", "6", "7"]}, draw=[])
    s, events = _play(s, "A", "2")
    assert faces(s, s.discard) == ["2♠"] and s.total == 22
    assert any(e.type == "reshuffled" for e in events)
    assert len(s.hands["A"]) == 3


# -- 002, the variations -------------------------------------------------------------------------


def test_nickels_four_coins_and_five_cards() -> None:
    """002 variations: 'everyone start with 4 nickels and five cards dealt to each player'."""
    s, _ = setup(["a", "b", "c", "d", "e", "f"], seed=5, rules=PRESETS["na-nickels"])
    assert set(s.lives.values()) == {4} and {len(h) for h in s.hands.values()} == {5}


def test_seven_cards_and_going_over_puts_you_out() -> None:
    """002 variations: seven cards each and effectively one coin: going over 99 eliminates."""
    s, _ = setup(["a", "b"], seed=5, rules=PRESETS["na-seven-cards"])
    assert {len(h) for h in s.hands.values()} == {7}
    s, _ = _a_loss("na-seven-cards")
    assert not s.alive["B"]


def test_corners_four_folds_and_you_are_out() -> None:
    """002 variations: a dollar bill with a corner folded per loss; four corners folded is out."""
    s, _ = _a_loss("na-corners")
    assert s.lives["B"] == 3
    s, _ = _a_loss("na-corners", lives_left={"B": 1})
    assert not s.alive["B"]


def test_pile_a_loss_clears_only_the_pile() -> None:
    """002 variations: after a loss 'the pile is taken away' and the others play on with the cards
    in their hands, from zero; the next player starts (our choice)."""
    before = make_state(
        rules=PRESETS["na-pile"],
        total=90,
        hands={"A": ["8", "2", "3"], "B": ["5", "6", "7"], "C": ["2", "3", "5"]},
    )
    s, events = _play(before, "A", "8")
    assert s.lives["B"] == 4 and s.total == 0 and s.current == "C"
    assert _new_round(events).data["reason"] == "pileCleared"
    assert Counter(faces(s, s.hands["B"])) == Counter(faces(before, before.hands["B"]))
    assert len(s.hands["A"]) == 3  # A drew after playing the 8


def test_king_nine_swapped() -> None:
    """002 variations: some interchange Nine and King: a King is worth zero and a Nine sets 99."""
    s = make_state(rules=PRESETS["na-king-nine"], total=40, hands={"A": ["K", "9"], "B": ["5", "6"]})
    assert (_results(s, "A", "K"), _results(s, "A", "9")) == ([40], [99])


def test_four_nine_swapped() -> None:
    """002 variations: some interchange Four and Nine: a Nine reverses, a Four leaves the count."""
    s = make_state(rules=PRESETS["na-four-nine"], total=40, hands={"A": ["9", "4"], "B": ["5"], "C": ["5"]})
    after, _ = _play(s, "A", "9")
    assert (after.total, after.direction, after.current) == (40, -1, "C")
    after, _ = _play(s, "A", "4")
    assert (after.total, after.direction, after.current) == (40, 1, "B")


def test_ten_only_subtracts() -> None:
    """002 variations: 'a Ten always reduces the count by 10'."""
    s = make_state(rules=PRESETS["na-ten-minus"], total=40, hands={"A": ["10", "2"], "B": ["5", "6"]})
    assert _results(s, "A", "10") == [30]
    low = make_state(rules=PRESETS["na-ten-minus"], total=5, hands={"A": ["10", "2"], "B": ["5", "6"]})
    assert _results(low, "A", "10") == []


def test_two_players_a_four_plays_again() -> None:
    """002 variations: with only two players, 'playing a four entitles the same player to play again'."""
    s = make_state(rules=PRESETS["na-two-player-again"], total=40, hands={"A": ["4", "2"], "B": ["5", "6"]})
    s, events = _play(s, "A", "4")
    assert s.current == "A" and "playAgain" in event_types(events)
    three = make_state(
        rules=PRESETS["na-two-player-again"], total=40, hands={"A": ["4"], "B": ["5"], "C": ["5"]}
    )
    three, _ = _play(three, "A", "4")
    assert (three.current, three.direction) == ("C", -1)


def test_1950s_three_pennies_then_on_their_honor() -> None:
    """002, the 1950s version: three pennies; a player who lost them all plays 'on their honor' and
    is eliminated on losing again."""
    s, _ = _a_loss("na-1950s", lives_left={"B": 1})
    assert s.alive["B"] and s.on_board["B"] and s.lives["B"] == 0
    s, events = _a_loss("na-1950s", lives_left={"B": 0}, on_board=["B"])
    assert next(e for e in events if e.type == "eliminated").data["reason"] == "lostOnTheBoard"
    assert set(PRESETS["na-1950s"].tokens.start_by_players) == {(2, 3)}


def test_1950s_seven_reverses_and_no_card_sets_99() -> None:
    """002, the 1950s version: no card set the total to 99; seven reverses; ace 1/11; ten ±10; nine 0."""
    s = make_state(
        rules=PRESETS["na-1950s"],
        total=40,
        hands={"A": ["7", "K", "4", "9", "10", "A"], "B": ["5"], "C": ["5"]},
    )
    assert _results(s, "A", "K") == [50] and _results(s, "A", "4") == [44]
    assert _results(s, "A", "9") == [40] and _results(s, "A", "10") == [30, 50]
    assert _results(s, "A", "A") == [41, 51]
    s, _ = _play(s, "A", "7")
    assert (s.total, s.direction, s.current) == (40, -1, "C")


# -- 004 part II ---------------------------------------------------------------------------------

RU = PRESETS["ru-99"]


def test_ru_two_to_five_players() -> None:
    """004 part II: 2-5 players."""
    setup(["a", "b", "c", "d", "e"], seed=1, rules=RU)
    with pytest.raises(RuleError) as err:
        setup(["a", "b", "c", "d", "e", "f"], seed=1, rules=RU)
    assert err.value.reason is Reason.INVALID_OPTION


def test_ru_deal_three_and_draw_up_to_four() -> None:
    """004 part II: each player is dealt 3 cards and, after playing, draws up to 4."""
    s, _ = setup(["a", "b", "c"], seed=2, rules=RU)
    assert {len(h) for h in s.hands.values()} == {3}
    player = s.current
    s, _ = apply(s, player, timeout_action(s))
    assert len(s.hands[player]) == 4
    s2, _ = apply(s, s.current, timeout_action(s))
    assert len(s2.hands[s.current]) == 4


def test_ru_nine_sets_the_total_to_zero() -> None:
    """004 part II: a 9 makes the total zero."""
    s = make_state(rules=RU, total=95, hands={"A": ["9", "8"], "B": ["5", "6"]})
    assert _results(s, "A", "9") == [0]


def test_ru_card_values() -> None:
    """004 part II: Ace 1 or 11; 4 keeps the total and reverses; 10 ±10; Jack or Queen 10; King 99."""
    s = make_state(rules=RU, total=40, hands={"A": ["A", "4", "10", "J", "Q", "K"], "B": ["5"], "C": ["5"]})
    assert _results(s, "A", "A") == [41, 51] and _results(s, "A", "10") == [30, 50]
    assert _results(s, "A", "J") == _results(s, "A", "Q") == [50] and _results(s, "A", "K") == [99]
    s, _ = _play(s, "A", "4")
    assert (s.total, s.direction, s.current) == (40, -1, "C")


def test_ru_going_over_99_eliminates_and_play_goes_on() -> None:
    """004 part II: a player who takes the total over 99 loses and leaves the game; the others play
    on at the same total (our choice)."""
    s, events = _a_loss("ru-99")
    assert not s.alive["B"] and (s.total, s.current) == (98, "C")
    assert "roundStarted" not in event_types(events)


def test_ru_eight_reverses_instead_of_four() -> None:
    """004 part II, note: the card that reverses without changing the total is the 8, not the 4."""
    s = make_state(rules=PRESETS["ru-99-eight"], total=40, hands={"A": ["8", "4"], "B": ["5"], "C": ["5"]})
    assert _results(s, "A", "4") == [44] and _results(s, "A", "8") == [40]
    s, _ = _play(s, "A", "8")
    assert s.direction == -1


def test_ru_king_is_ten() -> None:
    """004 part II, note: the King has no special meaning and adds 10."""
    s = make_state(rules=PRESETS["ru-99-king-ten"], total=40, hands={"A": ["K"], "B": ["5"]})
    assert _results(s, "A", "K") == [50]


def test_ru_the_first_player_starts_from_three() -> None:
    """004 part II, note: the player who starts begins from a total of 3."""
    s, _ = setup(["a", "b", "c"], seed=4, rules=PRESETS["ru-99-start-3"])
    assert s.total == 3


# -- every preset ------------------------------------------------------------------------------


def test_the_timeout_move_of_every_preset_is_legal_and_smallest() -> None:
    """Spec §8.5 under every preset: the automatic move is the legal play with the smallest total."""
    for name, rules in PRESETS.items():
        s, _ = setup(["a", "b", "c"], seed=9, rules=rules)
        for _ in range(30):
            if s.finished:
                break
            auto = timeout_action(s)
            legal = legal_choices(s, s.current)
            chosen = next(c for c in legal if c.action == auto)
            if rules.timeout_forward:  # a play that lowers the total only when nothing else is left
                legal = [c for c in legal if c.result >= s.total] or legal
            assert chosen.result == min(c.result for c in legal), name
            s, _ = apply(s, s.current, auto)


def test_a_rule_set_the_engine_cannot_play_yet_is_refused() -> None:
    """A rule set the engine cannot play as given refuses to start: play-and-lose without any
    threshold to pay, thresholds without being out when a player cannot pay, an end after a number
    of rounds, a points target without points, or points that never run out without a target."""
    from ninetynine.engine.rules.ruleset import End, EndKind, Limit, OutWhen, Reach, Threshold, Tokens

    for changes in (
        {"over_limit": Limit.PLAY_AND_LOSE},
        {"thresholds": (Threshold(33, Reach.EXACT),)},
        {"end": End(EndKind.ROUNDS, target=5)},
        {"end": End(EndKind.POINTS_TARGET, target=15)},
        {"tokens": Tokens(((2, 3),), out_when=OutWhen.NEVER)},
    ):
        with pytest.raises(RuleError) as err:
            setup(["a", "b"], seed=1, rules=NA.with_changes(**changes))
        assert err.value.reason is Reason.INVALID_OPTION


def test_a_card_that_halves_or_doubles_under_a_condition() -> None:
    """002, the online version's 2: it halves an even total over 49 and doubles it otherwise
    (played here in the standard game: the 33/66/99 penalties are not played yet)."""
    from ninetynine.engine.rules.presets import NUMBER
    from ninetynine.engine.rules.ruleset import CardType, Deck, Kind, Op, Play, When

    two = CardType(
        "2",
        Kind.ADD,
        2,
        (Play(Op.HALVE, when=When.EVEN_OVER_49), Play(Op.DOUBLE, when=When.NOT_EVEN_OVER_49)),
        NUMBER,
    )
    cards = tuple(two if t.rank == "2" else t for t in NA.deck.cards)
    rules = NA.with_changes(
        name="online-two", deck=Deck(NA.deck.style, cards, NA.deck.decks_by_players, (1, 2))
    )
    hands = {"A": ["2", "3"], "B": ["5", "6"]}
    assert [_results(make_state(rules=rules, total=t, hands=hands), "A", "2") for t in (62, 31, 48, 51)] == [
        [31],
        [62],
        [96],
        [],
    ]


# -- 002, the online 33/66/99 version ------------------------------------------------------------

ONLINE = PRESETS["na-online"]


def _online(total: int, a: list[str], **kw: object) -> GameState:
    hands = {"A": a, "B": ["2", "3", "5"], "C": ["2", "3", "5"]}
    return make_state(rules=ONLINE, total=total, hands=hands, **kw)  # type: ignore[arg-type]


def test_online_nine_tokens_each() -> None:
    """002, online version: everyone starts the game with 9 tokens."""
    s, _ = setup(["a", "b", "c"], seed=1, rules=ONLINE)
    assert set(s.lives.values()) == {9}


def test_online_exactly_33_from_below_costs_everyone_else_a_token() -> None:
    """002, online version: making the total exactly 33 or 66 costs everyone else a penny, only
    when approached from below ('playing a 4 on 29 makes everyone else lose a penny')."""
    s, events = _play(_online(29, ["4", "6"]), "A", "4")
    assert (s.lives["A"], s.lives["B"], s.lives["C"]) == (9, 8, 8)
    assert [e.data["player"] for e in events if e.type == "tokensPaid"] == ["B", "C"]
    s, _ = _play(_online(43, ["10", "6"]), "A", "10", sign="-")
    assert set(s.lives.values()) == {9}


def test_online_crossing_33_upwards_costs_you_a_token() -> None:
    """002, online version: crossing 33 or 66 upwards costs the player a penny ('playing a 2 on 31
    increases it to 62 and costs you a penny'); coming down costs nothing."""
    s, _ = _play(_online(31, ["2", "6"]), "A", "2")
    assert s.total == 62 and s.lives["A"] == 8 and s.lives["B"] == 9
    s, _ = _play(_online(62, ["2", "6"]), "A", "2")
    assert s.total == 31 and set(s.lives.values()) == {9}


def test_online_exactly_99_costs_everyone_else_two_and_ends_the_round() -> None:
    """002, online version: making exactly 99 costs everyone else two pennies and ends the round."""
    s, events = _play(_online(90, ["9", "6"]), "A", "9")
    assert s.total == 90  # the 9 leaves the total: nothing paid
    s, events = _play(_online(93, ["6", "5"]), "A", "6")
    assert (s.lives["A"], s.lives["B"], s.lives["C"]) == (9, 7, 7)
    assert _new_round(events).data["reason"] == "thresholdEnded" and s.total == 0


def test_online_over_99_may_be_played_and_costs_you_two() -> None:
    """002, online version: a player who makes the total more than 99 loses two pennies and the
    round ends."""
    s = _online(95, ["8", "6"])
    assert _results(s, "A", "8") == [103]
    s, events = _play(s, "A", "8")
    assert s.lives["A"] == 7 and s.total == 0 and _new_round(events).data["starter"] == "B"


def test_online_out_when_you_cannot_pay() -> None:
    """002, online version: you may stay in with no pennies, but having to pay one you do not have
    eliminates you."""
    s, _ = _play(_online(31, ["2", "6"], lives_left={"A": 0}), "A", "2")
    assert not s.alive["A"] and s.current == "B"
    s, _ = _play(_online(29, ["4", "6"], lives_left={"B": 0}), "A", "4")
    assert s.alive["B"] is False and s.lives["C"] == 8


def test_an_exchange_card_whose_player_goes_out_on_it_still_ends_the_round() -> None:
    """Rule sets are data (docs/rule-sets.md, "The exchange"): a round that a play of an exchange card
    ended waits for the exchange, and when the card's player went out paying for that play there is
    no exchange ("its player draws one more"), so the round ends at once. Here the online version's 2
    is an exchange card: doubling 51 crosses 66, which A cannot pay, and makes 102."""
    two = next(c for c in ONLINE.deck.cards if c.rank == "2")
    cards = tuple(replace(c, exchange=True) if c is two else c for c in ONLINE.deck.cards)
    rules = replace(ONLINE, deck=replace(ONLINE.deck, cards=cards))
    s = make_state(
        rules=rules, total=51, hands={"A": ["2", "6"], "B": ["3", "5"], "C": ["3", "5"]}, lives_left={"A": 0}
    )
    s, events = _play(s, "A", "2")
    assert not s.alive["A"] and s.phase is Phase.PLAYING
    assert s.total == 0 and _new_round(events).data["reason"] == "thresholdEnded"
    validate_state(s)  # the engine takes back the state it answered with


def test_online_jack_skips_and_four_reverses_with_more_than_two() -> None:
    """002, online version: a Jack adds 10 and skips the next player; a four adds 4 and reverses if
    there are more than 2 players."""
    s, _ = _play(_online(10, ["J", "4"]), "A", "J")
    assert (s.total, s.current) == (20, "C")
    s, _ = _play(_online(10, ["J", "4"]), "A", "4")
    assert (s.total, s.direction, s.current) == (14, -1, "C")
    two = make_state(rules=ONLINE, total=10, hands={"A": ["4", "6"], "B": ["2", "3"]})
    two, _ = _play(two, "A", "4")
    assert (two.total, two.direction, two.current) == (14, 1, "B")


def test_online_two_halves_an_even_total_over_49_and_doubles_otherwise() -> None:
    """002, online version: a 2 divides an even total over 49 by 2 and otherwise doubles it."""
    hands = {"A": ["2", "3"], "B": ["5", "6"]}
    got = [_results(make_state(rules=ONLINE, total=t, hands=hands), "A", "2") for t in (62, 51, 48, 20)]
    assert got == [[31], [102], [96], [40]]


def test_online_teaching_plain_jack_and_four_and_a_simpler_two() -> None:
    """002, the teaching simplification: Jacks and fours have no special abilities; a 2 doubles an odd
    total and halves an even one."""
    rules = PRESETS["na-online-teaching"]
    hands = {"A": ["2", "J", "4"], "B": ["5", "6"], "C": ["5", "6"]}
    assert [_results(make_state(rules=rules, total=t, hands=hands), "A", "2") for t in (20, 21)] == [
        [10],
        [42],
    ]
    s, _ = _play(make_state(rules=rules, total=10, hands=hands), "A", "J")
    assert (s.total, s.current) == (20, "B")


# -- 002, the game-points version --------------------------------------------------------------

POINTS = PRESETS["na-points"]


def _points(total: int, a: list[str], **kw: object) -> GameState:
    hands = {"A": a, "B": ["2", "3", "5"], "C": ["2", "3", "5"]}
    return make_state(rules=POINTS, total=total, hands=hands, **kw)  # type: ignore[arg-type]


def test_points_eight_reverses_and_the_king_is_ten() -> None:
    """002, the game-points version: the card that reverses without changing the total is the 8,
    not the 4, and the King 'has no special property' (10 card points)."""
    s = _points(40, ["8", "4", "K"])
    assert _results(s, "A", "4") == [44] and _results(s, "A", "K") == [50]
    s, events = _play(s, "A", "8")
    assert (s.total, s.direction, s.current) == (40, -1, "C")
    assert "directionChanged" in event_types(events)


def test_points_a_point_is_lost_at_every_border_crossing_either_way() -> None:
    """002, the game-points version: a game point is lost by the player whose card takes the
    total across 33:34, 66:67 or 99:100, going backwards too ('if the pile is 75 and you play a
    ten as -10 you will lose a game point')."""
    s, events = _play(_points(30, ["5", "6"]), "A", "5")
    assert s.total == 35 and (s.lives["A"], s.lives["B"]) == (2, 3)
    assert next(e for e in events if e.type == "tokensPaid").data["at"] == 33
    s, _ = _play(_points(75, ["10", "6"]), "A", "10", sign="-")
    assert s.total == 65 and s.lives["A"] == 2
    s, _ = _play(_points(33, ["K", "6"]), "A", "K")  # 33 -> 43: from 33 the border is crossed
    assert s.lives["A"] == 2
    s, _ = _play(_points(20, ["K", "6"]), "A", "K")
    assert s.lives["A"] == 3


def test_points_a_point_owed_with_none_left_is_not_paid() -> None:
    """002, the game-points version, our choice: the document does not say what a player with no
    points left pays; they pay nothing and stay in (there is no elimination in this version)."""
    s, events = _play(_points(30, ["5", "6"], lives_left={"A": 0}), "A", "5")
    assert s.alive["A"] and s.lives["A"] == 0 and s.current == "B"
    assert next(e for e in events if e.type == "tokensPaid").data["tokens"] == 0


def test_points_going_over_99_ends_the_hand_and_deals_a_new_one() -> None:
    """002, the game-points version: 'when the score exceeds 99 the play ends and a new hand is
    dealt'; the card that does it may be played and costs its player the 99:100 point."""
    s = _points(95, ["7", "6"])
    assert _results(s, "A", "7") == [102]
    s, events = _play(s, "A", "7")
    assert _new_round(events).data["reason"] == "thresholdEnded"
    assert s.total == 0 and s.round == 2 and {len(h) for h in s.hands.values()} == {3}
    assert _new_round(events).data["starter"] == "B"  # the deal passes left, as in the standard game


def test_points_three_points_a_hand_and_what_is_kept_is_added_to_the_score() -> None:
    """002, the game-points version: each player starts each hand with three game points, and the
    points left at the end of the hand are added to their cumulative score."""
    fresh, _ = setup(["a", "b", "c"], seed=2, rules=POINTS)
    assert set(fresh.lives.values()) == {3} and set(fresh.score.values()) == {0}
    s, events = _play(_points(95, ["7", "6"], lives_left={"B": 1}, score={"C": 4}), "A", "7")
    scored = next(e for e in events if e.type == "roundScored").data
    assert scored["kept"] == {"A": 2, "B": 1, "C": 3}
    assert s.score == {"A": 2, "B": 1, "C": 7} == scored["score"]
    assert set(s.lives.values()) == {3}
    assert [p["score"] for p in public_view(s)["players"]] == [2, 1, 7]


def test_points_the_first_to_15_ends_the_game_and_the_highest_score_wins() -> None:
    """002, the game-points version: when anyone achieves a score of 15 or more, the game ends and
    the player with the highest score wins (here B passes A, who also reached 15)."""
    s = _points(95, ["7", "6"], lives_left={"A": 2, "B": 3, "C": 3}, score={"A": 14, "B": 13, "C": 2})
    s, events = _play(s, "A", "7")  # A loses the 99:100 point: A keeps 1, B 3, C 3
    assert s.finished and s.score == {"A": 15, "B": 16, "C": 5}
    result = game_result(s)
    assert result.winner == ("B",) and s.current == "B"
    assert [(r.player, r.rank, r.score) for r in result.ranking] == [("B", 1, 16), ("A", 2, 15), ("C", 3, 5)]
    assert next(e for e in events if e.type == "gameFinished").data["winner"] == ["B"]


def test_points_equal_best_scores_share_the_win() -> None:
    """002, the game-points version, our choice: the document names no tie-break, so equal highest
    scores share first place."""
    s = _points(95, ["7", "6"], lives_left={"A": 3}, score={"A": 14, "B": 13, "C": 1})
    s, _ = _play(s, "A", "7")
    assert s.score["A"] == s.score["B"] == 16
    assert game_result(s).winner == ("A", "B")


# -- 002, the start-card version ---------------------------------------------------------------

START_CARD = PRESETS["na-start-card"]


def test_start_card_the_first_ordinary_card_turned_up_sets_the_start_total() -> None:
    """002, the start-card version: after the deal a card is turned up; a special card goes back to
    the middle of the deck and the next is turned, and the first ordinary card gives the initial
    count. Everyone sees it (a public event)."""
    ordinary = {"2", "3", "5", "6", "7", "8", "J", "Q"}
    returned_seen = False
    for seed in range(40):
        s, events = setup(["a", "b", "c"], seed=seed, rules=START_CARD)
        shown = next(e for e in events if e.type == "startCard")
        card = card_of(s, shown.data["card"]["id"])
        assert card.face[:-1] in ordinary and shown.audience.value == "all"
        assert s.total == shown.data["total"] == (10 if card.face[:-1] in "JQ" else int(card.face[:-1]))
        assert s.discard == [card.id] and len(s.draw_pile) == 52 - 9 - 1
        assert _new_round(events).data["total"] == s.total
        returned_seen = returned_seen or shown.data["returned"] > 0
    assert returned_seen, "some deal turned a special card back first"


def test_start_card_no_coins_and_over_99_is_out_at_once() -> None:
    """002, the start-card version: there are no coins, and a player who would go over 99 is
    eliminated at once; the others play on at the same total (our choice, as in ru-99)."""
    fresh, _ = setup(["a", "b", "c"], seed=1, rules=START_CARD)
    assert set(fresh.lives.values()) == {0}
    s, events = _a_loss("na-start-card")
    assert not s.alive["B"] and (s.total, s.current) == (98, "C")
    assert next(e for e in events if e.type == "eliminated").data["reason"] == "noPlayableCard"


def test_start_card_no_king_in_your_first_five_turns() -> None:
    """002, the start-card version: 'it is forbidden to set the total to 99 by playing a King
    during your first five turns'; from the sixth turn a King sets 99 as usual."""
    hands = {"A": ["K", "2", "3"], "B": ["K", "3", "5"]}
    s = make_state(rules=START_CARD, total=20, hands=hands, turns_taken={"A": 4, "B": 5})
    king = card_of(s, card_id(s, "A", "K"))
    assert [c.reason for c in card_choices(s, king)] == [Reason.CARD_TOO_EARLY]
    # each player's view counts their own turns, whoever is to move
    views = {p: next(h for h in player_view(s, p)["hand"] if h["card"]["face"][0] == "K") for p in "AB"}
    assert (views["A"]["playable"], views["B"]["playable"]) == (False, True)
    with pytest.raises(RuleError) as err:
        _play(s, "A", "K")
    assert err.value.reason is Reason.CARD_TOO_EARLY
    assert err.value.message("en") == "A K cannot be played in your first 5 turns"
    assert err.value.message("ko") == "K은(는) 내 차례 5번이 지나야 낼 수 있어요"
    s, _ = _play(s, "A", "2")  # A's fifth turn
    assert s.turns_taken["A"] == 5
    s, _ = _play(s, "B", "3")
    assert _results(s, "A", "K") == [99]


def test_start_card_three_kings_in_hand_win_at_once() -> None:
    """002, the start-card version: 'a player who has three Kings immediately wins' (here on
    drawing the third)."""
    hands = {"A": ["K", "K", "2"], "B": ["2", "3", "5"], "C": ["2", "3", "5"]}
    s = make_state(rules=START_CARD, total=20, hands=hands, draw=["K"])
    s, events = _play(s, "A", "2")
    assert s.finished and s.special_end == "K"
    assert next(e for e in events if e.type == "specialHand").data == {
        "player": "A",
        "rank": "K",
        "count": 3,
        "holderWins": True,
    }
    result = game_result(s)
    assert result.winner == ("A",) and [r.player for r in result.ranking] == ["A", "B", "C"]
    assert "turnStarted" not in event_types(events)


def test_start_card_three_sixes_end_the_game_with_everyone_losing() -> None:
    """002, the start-card version: 'a hand of three Sixes causes the game to end immediately with
    all players losing'."""
    hands = {"A": ["6", "6", "2"], "B": ["2", "3", "5"], "C": ["2", "3", "5"]}
    s = make_state(rules=START_CARD, total=20, hands=hands, draw=["6"])
    s, events = _play(s, "A", "2")
    assert s.finished and s.special_end == "6"
    assert next(e for e in events if e.type == "specialHand").data["holderWins"] is False
    result = game_result(s)
    assert result.winner == () and {r.rank for r in result.ranking} == {1}
    assert result.summary_en == "A holds 3 × 6: everyone loses"


def test_start_card_a_special_hand_dealt_ends_the_game_before_the_first_turn() -> None:
    """002, the start-card version: 'certain hands immediately end the game', the dealt hand too. A
    one-Ace special hand (a derived rule set) makes the check visible: the first player in seat order
    from the starter who was dealt an Ace wins before anyone plays."""
    from ninetynine.engine.rules.ruleset import SpecialHand

    rules = START_CARD.with_changes(name="ace-wins", special_hands=(SpecialHand("A", 1, holder_wins=True),))
    s, events = setup(["a", "b", "c", "d"], seed=3, rules=rules)
    order = [s.seats[(s.seats.index(s.round_starter) + k) % 4] for k in range(4)]
    holders = [p for p in order if any(c.startswith("A") for c in s.hands[p])]
    assert s.finished and holders and game_result(s).winner == (holders[0],)
    assert "turnStarted" not in event_types(events)


# -- 000 §7, the house rules as options ---------------------------------------------------------


def test_house_rules_derive_a_named_rule_set_and_refuse_unknown_keys() -> None:
    """000 §7 lists house rules to switch on and off; any preset takes them by name."""
    rules = with_house_rules(NA, "exact99Bonus")
    assert rules.name == "na-standard+exact99Bonus" and rules.exact_limit_bonus
    both = with_house_rules(rules, "noSameNumberTwice")
    assert both.name == "na-standard+exact99Bonus+noSameNumberTwice" and both.no_same_number_twice
    assert not NA.exact_limit_bonus and with_house_rules(preset("classic"), "exact99Bonus").name == (
        "classic+exact99Bonus"
    )
    with pytest.raises(RuleError) as err:
        with_house_rules(NA, "exactly69")
    assert err.value.reason is Reason.INVALID_OPTION


def test_house_rule_exactly_99_wins_back_a_token() -> None:
    """000 §7: 'exactly 99 earns a bonus'. Our choice of bonus: the player who makes the total
    exactly 99 wins back one token they lost (a life, a penny, a game point)."""
    rules = with_house_rules(NA, "exact99Bonus")
    hands = {"A": ["K", "9", "2"], "B": ["9", "3", "5"], "C": ["9", "3", "5"]}
    s, events = _play(make_state(rules=rules, total=40, hands=hands, lives_left={"A": 3}), "A", "K")
    assert (s.total, s.lives["A"], s.lives_lost["A"]) == (99, 4, 1)
    assert next(e for e in events if e.type == "bonus").data == {"player": "A", "tokens": 1, "left": 4}
    full, events = _play(make_state(rules=rules, total=40, hands=hands), "A", "K")
    assert full.lives["A"] == 5 and next(e for e in events if e.type == "bonus").data["tokens"] == 0
    held, events = _play(make_state(rules=rules, total=99, hands=hands, lives_left={"A": 3}), "A", "9")
    assert held.lives["A"] == 3 and "bonus" not in event_types(events)  # 99 stays 99: not made
    plain, events = _play(make_state(rules=NA, total=40, hands=hands, lives_left={"A": 3}), "A", "K")
    assert plain.lives["A"] == 3 and "bonus" not in event_types(events)


def test_house_rule_exactly_69_wins_back_a_token() -> None:
    """002: some play that making the total exactly 69 has "some sort of effect", for example
    getting a penny from the pool. Our choice: as with §7's exactly 99, the player wins back one
    token they lost."""
    rules = with_house_rules(NA, "exact69Bonus")
    assert rules.name == "na-standard+exact69Bonus" and rules.exact_69_bonus
    hands = {"A": ["9", "J", "2"], "B": ["9", "3", "5"], "C": ["9", "3", "5"]}
    s, events = _play(make_state(rules=rules, total=59, hands=hands, lives_left={"A": 3}), "A", "J")
    assert (s.total, s.lives["A"], s.lives_lost["A"]) == (69, 4, 1)
    assert next(e for e in events if e.type == "bonus").data == {"player": "A", "tokens": 1, "left": 4}
    held, events = _play(make_state(rules=rules, total=69, hands=hands, lives_left={"A": 3}), "A", "9")
    assert held.lives["A"] == 3 and "bonus" not in event_types(events)  # 69 stays 69: not made
    plain, events = _play(make_state(rules=NA, total=59, hands=hands, lives_left={"A": 3}), "A", "J")
    assert plain.total == 69 and plain.lives["A"] == 3 and "bonus" not in event_types(events)


def test_house_rule_the_same_number_may_not_be_played_twice_in_a_row() -> None:
    """000 §7: 'the same number may not be played twice in a row': a card of the rank just played
    is refused (SAME_NUMBER_TWICE); any other card in between lifts it."""
    rules = with_house_rules(NA, "noSameNumberTwice")
    hands = {"A": ["7", "2", "3"], "B": ["7", "5", "6"], "C": ["7", "5", "6"]}
    s, _ = _play(make_state(rules=rules, total=20, hands=hands), "A", "7")
    seven = card_of(s, card_id(s, "B", "7"))
    assert [c.reason for c in card_choices(s, seven)] == [Reason.SAME_NUMBER_TWICE]
    assert not any(c.action.card_id == seven.id for c in legal_choices(s, "B"))
    shown = next(h for h in player_view(s, "B")["hand"] if h["card"]["id"] == seven.id)
    assert not shown["playable"] and shown["choices"][0]["reason"] == "SAME_NUMBER_TWICE"
    with pytest.raises(RuleError) as err:
        _play(s, "B", "7")
    assert err.value.reason is Reason.SAME_NUMBER_TWICE
    assert err.value.message("en") == "The same number (7) cannot be played twice in a row"
    s, _ = _play(s, "B", "5")
    assert _results(s, "C", "7") == [39]


def test_house_rule_a_player_left_with_only_the_same_number_loses() -> None:
    """000 §7 with §5.1: the refused card counts as unplayable, so a player holding only cards of
    the number just played loses the turn-start check."""
    rules = with_house_rules(NA, "noSameNumberTwice")
    hands = {"A": ["7", "2", "3"], "B": ["7", "7", "7"], "C": ["5", "5", "6"]}
    s, events = _play(make_state(rules=rules, total=20, hands=hands), "A", "7")
    assert next(e for e in events if e.type == "lifeLost").data["player"] == "B" and s.lives["B"] == 4
