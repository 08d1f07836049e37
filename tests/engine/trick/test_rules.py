"""Source 004 part I, one named test per rule; each docstring quotes the sentence it implements.

Where the source is silent or wrong the test says which choice of docs/games/trick-taking.md
it pins.
"""

from __future__ import annotations

import pytest

from ninetynine.engine.rules.errors import Reason
from ninetynine.engine.rules.state import Audience
from ninetynine.engine.trick import (
    TrickAction,
    TrickError,
    TrickOptions,
    TrickPhase,
    TrickReason,
    TrickState,
    apply,
    bid_tricks,
    deck,
    pending,
    player_view,
    public_view,
    score_lines,
    setup,
    timeout_action,
    trick_winner,
)

from .builders import SEATS, play_out, table

# Bids that are irrelevant to a test: 3 tricks each (♣♦♦).
BIDS3 = {p: ("QC", "QD", "KD") for p in SEATS}


def refused(s: TrickState, player: str, action: TrickAction) -> TrickError:
    before = s.clone()
    with pytest.raises(TrickError) as info:
        apply(s, player, action)
    assert s == before
    return info.value


def bid_all(s: TrickState) -> TrickState:
    for p in pending(s):
        s, _ = apply(s, p, timeout_action(s, p))
    return s


# -- deck, players, deal -------------------------------------------------------------------


def test_deck_is_36_cards_six_to_ace() -> None:
    """«Карт в колоде 36» · «Ранжирование карт 6, 7, 8, 9, 10, В, Д, К, Т»."""
    cards = deck()
    assert len(cards) == 36 == len({c.id for c in cards})
    spades = sorted((c for c in cards if c.suit == "S"), key=lambda c: c.strength)
    assert [c.rank for c in spades] == ["6", "7", "8", "9", "10", "J", "Q", "K", "A"]


def test_exactly_three_players() -> None:
    """«Сколько игроков 3»."""
    for ids in (["a", "b"], ["a", "b", "c", "d"]):
        with pytest.raises(TrickError) as info:
            setup(ids, seed=1)
        assert info.value.reason is TrickReason.INVALID_PLAYER_COUNT


def test_each_player_is_dealt_twelve_cards_from_the_whole_deck() -> None:
    """«каждому игроку раздается по 12 карт»."""
    s, events = setup(SEATS, seed=3)
    assert [len(s.hands[p]) for p in SEATS] == [12, 12, 12]
    assert sorted(c for p in SEATS for c in s.hands[p]) == sorted(c.id for c in deck())
    dealt = [e for e in events if e.type == "trickHandDealt"]
    assert {(e.player, e.audience) for e in dealt} == {(p, Audience.ONLY) for p in SEATS}


def test_first_dealer_is_drawn_by_lot_from_the_seed() -> None:
    """«Первый сдатчик карт в первой игре определяется жребием»."""
    dealers = {setup(SEATS, seed=seed)[0].dealer for seed in range(30)}
    assert dealers == set(SEATS)
    assert setup(SEATS, seed=11)[0].dealer == setup(SEATS, seed=11)[0].dealer


def test_deal_passes_clockwise() -> None:
    """«в следующих играх игроки сдают карты по очереди по часовой стрелке»."""
    s, _ = setup(SEATS, seed=5)
    first = s.dealer
    deal = s.deal
    while s.deal == deal:
        p = pending(s)[0]
        s, _ = apply(s, p, timeout_action(s, p))
    assert s.deal == 2 and s.dealer == s.left_of(first)
    assert [len(s.hands[p]) for p in SEATS] == [12, 12, 12]


# -- bids ----------------------------------------------------------------------------------


def test_bid_is_three_cards_laid_face_down() -> None:
    """«каждый игрок кладет перед собой лицом вниз 3 карты из своих двенадцати»."""
    s, _ = setup(SEATS, seed=2)
    chosen = tuple(s.hands["a"][:3])
    s2, events = apply(s, "a", TrickAction.bid(*chosen))
    assert len(s2.hands["a"]) == 9 and s2.bids["a"] == chosen
    only = [e for e in events if e.type == "bidPlaced" and e.audience is Audience.ONLY]
    others = [e for e in events if e.type == "bidPlaced" and e.audience is Audience.EXCEPT]
    assert only[0].data["tricks"] == bid_tricks(chosen) and "cards" not in others[0].data
    seat_a = public_view(s2)["players"][0]
    assert seat_a["bidPlaced"] is True and seat_a["bid"] is None and seat_a["handCount"] == 9


def test_bid_suits_count_three_two_one_zero_tricks() -> None:
    """«♣ — 3 взятки; ♥ — 2 взятки; ♠ — 1 взятка; ♦ — 0 взяток» and the examples 9, 0 and three 3s."""
    assert bid_tricks(("6C", "7C", "8C")) == 9
    assert bid_tricks(("6D", "7D", "8D")) == 0
    assert (
        bid_tricks(("6C", "6D", "7D"))
        == bid_tricks(("6H", "6S", "6D"))
        == bid_tricks(("6S", "7S", "8S"))
        == 3
    )


def test_bid_refusals_leave_the_state_untouched() -> None:
    """A bid is exactly 3 different cards of one's own hand, laid once."""
    s, _ = setup(SEATS, seed=2)
    hand = s.hands["a"]
    assert refused(s, "a", TrickAction.bid(*hand[:2])).reason is TrickReason.BID_CARD_COUNT
    assert refused(s, "a", TrickAction.bid(hand[0], hand[0], hand[1])).reason is TrickReason.BID_CARD_COUNT
    assert refused(s, "a", TrickAction.bid(*hand[:2], s.hands["b"][0])).reason is Reason.CARD_NOT_IN_HAND
    s2, _ = apply(s, "a", TrickAction.bid(*hand[:3]))
    assert refused(s2, "a", TrickAction.bid(*s2.hands["a"][:3])).reason is TrickReason.BID_ALREADY_PLACED
    assert refused(s2, "b", TrickAction.play(s2.hands["b"][0])).reason is TrickReason.WRONG_PHASE


# -- announcing ----------------------------------------------------------------------------


def test_announcing_starts_left_of_the_dealer_and_goes_clockwise() -> None:
    """«Объявления ставок ... начинаются с игрока слева от сдатчика и проходят по кругу,
    по часовой стрелке»."""
    s = bid_all(setup(SEATS, seed=4)[0])
    first = s.left_of(s.dealer)
    assert s.phase is TrickPhase.ANNOUNCING and pending(s) == (first,)
    s, _ = apply(s, first, TrickAction.pass_())
    assert pending(s) == (s.left_of(first),)
    assert refused(s, first, TrickAction.announce()).reason is Reason.NOT_YOUR_TURN


def test_first_to_announce_is_the_declarer_and_shows_the_bid() -> None:
    """«Игрок, который первым объявит количество взяток, считается разыгрывающим и открывает свои
    карты-ставки, чтобы их видели все остальные игроки»."""
    s = bid_all(setup(SEATS, seed=4)[0])
    first = s.left_of(s.dealer)
    second = s.left_of(first)
    s, _ = apply(s, first, TrickAction.pass_())
    s, events = apply(s, second, TrickAction.announce())
    assert s.declarer == second and s.phase is TrickPhase.PLAYING
    seen = next(pl for pl in public_view(s)["players"] if pl["id"] == second)["bid"]
    assert [c["id"] for c in seen["cards"]] == list(s.bids[second])
    assert next(e for e in events if e.type == "announced").audience is Audience.ALL
    hidden = [pl["bid"] for pl in public_view(s)["players"] if pl["id"] != second]
    assert hidden == [None, None]


def test_nobody_announcing_plays_the_deal_without_a_declarer() -> None:
    """Choice (the source is silent): three passes leave the deal without a declarer."""
    s = bid_all(setup(SEATS, seed=4)[0])
    events = []
    for _ in range(3):
        s, ev = apply(s, pending(s)[0], TrickAction.pass_())
        events += ev
    assert s.declarer is None and s.phase is TrickPhase.PLAYING
    assert [e.type for e in events].count("noDeclarer") == 1


def test_bids_stay_face_down_until_the_players_nine_cards_are_played() -> None:
    """«Обычно карты-ставки лежат лицевой стороной вниз до тех пор, пока не будут сыграны все
    остальные 9 карт игрока»."""
    s = table({"a": ["AS"], "b": ["6S"], "c": ["7S"]}, bids=BIDS3, tricks_won={"a": 2, "b": 3, "c": 3})
    s, events = play_out(s, ["AS"])
    bids = {pl["id"]: pl["bid"] for pl in public_view(s)["players"]}
    assert bids["a"] is not None and bids["b"] is None and bids["c"] is None
    assert [e.player or e.data["player"] for e in events if e.type == "bidRevealed"] == ["a"]


# -- trick play ----------------------------------------------------------------------------


def test_player_left_of_the_dealer_leads_the_first_trick() -> None:
    """«Розыгрыш первой взятки (первых карт) начинает игрок слева от сдатчика»."""
    s = bid_all(setup(SEATS, seed=8)[0])
    for _ in range(3):
        s, _ = apply(s, pending(s)[0], TrickAction.pass_())
    assert s.current == s.leader == s.left_of(s.dealer)


def test_must_follow_suit_when_able() -> None:
    """«каждый следующий игрок по часовой стрелке должен положить карту такой же масти»."""
    s = table({"a": ["AS", "6H"], "b": ["7S", "KH"], "c": ["8S", "9H"]}, bids=BIDS3)
    s, _ = play_out(s, ["AS"])
    err = refused(s, "b", TrickAction.play("KH"))
    assert err.reason is TrickReason.MUST_FOLLOW_SUIT and err.meta["suit"] == "S"
    hand = {h["card"]["id"]: h for h in player_view(s, "b")["hand"]}
    assert hand["KH"] == {**hand["KH"], "playable": False, "reason": "MUST_FOLLOW_SUIT"}
    assert hand["7S"]["playable"] is True
    assert player_view(s, "b")["legalActions"] == [{"kind": "play", "card": "7S"}]


def test_a_player_void_in_the_led_suit_may_play_any_card() -> None:
    """«если карты такой масти нет, то должен положить свою любую карту»."""
    s = table({"a": ["AS", "6H"], "b": ["7D", "KH"], "c": ["8S", "9H"]}, bids=BIDS3)
    s, _ = play_out(s, ["AS"])
    for c in ("7D", "KH"):
        apply(s, "b", TrickAction.play(c))


def test_highest_card_of_the_led_suit_wins_and_its_player_leads_next() -> None:
    """«эти карты ... забираются игроком, который положил самую старшую карту, этот же игрок
    начинает первым розыгрыш следующей взятки». Choice: a card off the led suit never wins
    (no trumps by default), however high."""
    s = table({"a": ["9S", "6H"], "b": ["AH", "KH"], "c": ["10S", "9H"]}, bids=BIDS3)
    s, events = play_out(s, ["9S", "AH", "10S"])
    assert s.tricks_won == {"a": 0, "b": 0, "c": 1} and s.current == "c" == s.leader
    assert [e.data["player"] for e in events if e.type == "trickWon"] == ["c"]


def test_a_trick_is_three_cards_one_from_each_player() -> None:
    """«Когда все 4 карты (по одной от каждого игрока) будут выложены» — with three players a
    trick is complete at three cards (choice: "4" read as a slip for "one from each player")."""
    s = table({"a": ["9S", "6H"], "b": ["AS", "KH"], "c": ["10S", "9H"]}, bids=BIDS3)
    s, _ = play_out(s, ["9S", "AS"])
    assert len(s.trick) == 2 and s.tricks_won["b"] == 0
    s, _ = play_out(s, ["10S"])
    assert s.trick == [] and s.tricks_won["b"] == 1 and [c for _, c in s.last_trick] == ["9S", "AS", "10S"]


def test_nine_tricks_are_played_then_the_deal_is_scored() -> None:
    """«Таким образом, игроки разыгрывают все карты. После того, как все карты будут разыграны,
    игроки подсчитывают очки»: 12 - 3 bid cards = 9 tricks."""
    s, _ = setup(SEATS, seed=6)
    tricks = 0
    while s.deal == 1:
        p = pending(s)[0]
        s, events = apply(s, p, timeout_action(s, p))
        tricks += sum(1 for e in events if e.type == "trickWon")
        if any(e.type == "dealScored" for e in events):
            lines = next(e for e in events if e.type == "dealScored").data["lines"]
            assert sum(ln["tricks"] for ln in lines) == 9
    assert tricks == 9


# -- trumps (option) -----------------------------------------------------------------------


def test_trump_beats_the_led_suit_when_trumps_are_on() -> None:
    """Option ``trumps=byContracts`` (Parlett): a trump played takes the trick."""
    trick = [("a", "AS"), ("b", "6H"), ("c", "KS")]
    assert trick_winner(trick, None) == "a"
    assert trick_winner(trick, "H") == "b"
    assert trick_winner(trick, "D") == "a"


def test_trumps_rotate_by_contracts_made_in_the_previous_deal() -> None:
    """Option ``trumps=byContracts``: first deal at no trump, then the suit whose bid value is the
    number of contracts made in the deal before (♦ 0, ♠ 1, ♥ 2, ♣ 3)."""
    opts = TrickOptions(trumps="byContracts")
    assert setup(SEATS, opts, seed=1)[0].trumps is None
    s = table(
        {"a": ["AS"], "b": ["6S"], "c": ["7S"]}, bids=BIDS3, tricks_won={"a": 2, "b": 3, "c": 3}, options=opts
    )
    s, _ = play_out(s, ["AS", "6S", "7S"])
    assert s.deal == 2 and s.trumps == "C"  # all three made their 3
    assert setup(SEATS, seed=1)[0].options.trumps == "none"


# -- scoring -------------------------------------------------------------------------------

BIDS = {"a": ("6S", "6D", "7D"), "b": ("6H", "7D", "8D"), "c": ("6C", "9D", "10D")}  # 1, 2, 3


def _points(tricks: dict[str, int], declarer: str | None = None) -> tuple[int, dict[str, int]]:
    made, lines = score_lines(SEATS, BIDS, tricks, declarer, {p: 0 for p in SEATS})
    return made, {ln.player: ln.total for ln in lines}


def test_one_point_per_trick_taken() -> None:
    """«За каждую взятую взятку игрок получает 1 очко, независимо от торговли»."""
    assert _points({"a": 0, "b": 0, "c": 9}) == (0, {"a": 0, "b": 0, "c": 9})


def test_three_contracts_made_score_ten_each() -> None:
    """«если выполнены 3 контракта, то каждый игрок выполнивший контракт получает по 10 очков»."""
    exact = {"a": ("6S", "6D", "7D"), "b": ("6H", "7D", "8D"), "c": ("6C", "7C", "9D")}  # 1, 2, 6
    made, lines = score_lines(SEATS, exact, {"a": 1, "b": 2, "c": 6}, None, {p: 0 for p in SEATS})
    assert made == 3 and [ln.total for ln in lines] == [11, 12, 16]


def test_two_contracts_made_score_twenty_each() -> None:
    """«если выполнены 2 контракта, то каждый игрок выполнивший контракт получает по 20 очков»."""
    assert _points({"a": 1, "b": 2, "c": 6}) == (2, {"a": 21, "b": 22, "c": 6})


def test_one_contract_made_scores_thirty() -> None:
    """«если выполнен 1 контракт, то игрок выполнивший его получает 30 очков»."""
    assert _points({"a": 1, "b": 0, "c": 8}) == (1, {"a": 31, "b": 0, "c": 8})


def test_no_contract_made_scores_tricks_only() -> None:
    """Nobody made a contract: only «1 очко» a trick."""
    assert _points({"a": 4, "b": 4, "c": 1}) == (0, {"a": 4, "b": 4, "c": 1})


def test_declarer_scores_thirty_more_for_making_the_contract() -> None:
    """«Игрок, который объявлял свой контракт, получает дополнительные 30 очков за его исполнение»."""
    assert _points({"a": 1, "b": 0, "c": 8}, declarer="a") == (1, {"a": 61, "b": 0, "c": 8})


def test_declarer_loses_sixty_for_failing_the_contract() -> None:
    """«и минус 60 очков, если его не исполнит»."""
    assert _points({"a": 1, "b": 0, "c": 8}, declarer="c") == (1, {"a": 31, "b": 0, "c": -52})


def test_the_deal_adds_its_points_to_the_running_scores() -> None:
    """Scores run across deals; each scored deal stays in the public view."""
    s = table(
        {"a": ["AS"], "b": ["6S"], "c": ["7S"]},
        bids=BIDS3,
        tricks_won={"a": 2, "b": 3, "c": 3},
        scores={"a": 5, "b": 6, "c": 7},
    )
    s, _ = play_out(s, ["AS", "6S", "7S"])
    assert s.scores == {"a": 18, "b": 19, "c": 20}
    assert public_view(s)["deals"][0]["contractsMade"] == 3


# -- the end -------------------------------------------------------------------------------

LAST = {"a": ["AS"], "b": ["6S"], "c": ["7S"]}
BEFORE_LAST = {"a": 2, "b": 3, "c": 3}  # a takes the last trick: all three make 3, +13 each


def test_first_to_reach_one_hundred_wins() -> None:
    """«Игрок, который первым наберет 100 или более очков, становится победителем»."""
    s = table(LAST, bids=BIDS3, tricks_won=BEFORE_LAST, scores={"a": 87, "b": 60, "c": 40})
    s, events = play_out(s, ["AS", "6S", "7S"])
    assert s.phase is TrickPhase.FINISHED and s.scores["a"] == 100 and s.winners == ("a",)
    view = public_view(s)
    assert view["result"]["winner"] == ["a"] and view["seed"] == str(s.seed)
    assert [e.type for e in events][-1] == "trickGameFinished"


def test_below_one_hundred_another_deal_follows() -> None:
    """Nobody at 100: the next deal is dealt."""
    s = table(LAST, bids=BIDS3, tricks_won=BEFORE_LAST, scores={"a": 86, "b": 60, "c": 40})
    s, _ = play_out(s, ["AS", "6S", "7S"])
    assert s.phase is TrickPhase.BIDDING and s.deal == 2 and s.scores["a"] == 99


def test_several_over_one_hundred_the_highest_wins() -> None:
    """Choice (the source is silent): of several at 100 or more after one deal, the highest wins."""
    s = table(LAST, bids=BIDS3, tricks_won=BEFORE_LAST, scores={"a": 90, "b": 95, "c": 40})
    s, _ = play_out(s, ["AS", "6S", "7S"])
    assert s.winners == ("b",)
    assert [r["rank"] for r in public_view(s)["result"]["ranking"]] == [1, 2, 3]


def test_equal_highest_share_the_win_or_play_on() -> None:
    """Choice: equal highest scores share the win (``ties=share``) or deal again (``playOn``)."""
    scores = {"a": 90, "b": 90, "c": 40}
    s = table(LAST, bids=BIDS3, tricks_won=BEFORE_LAST, scores=scores)
    s, _ = play_out(s, ["AS", "6S", "7S"])
    assert s.winners == ("a", "b")
    assert [r["rank"] for r in public_view(s)["result"]["ranking"]] == [1, 1, 3]
    s = table(LAST, bids=BIDS3, tricks_won=BEFORE_LAST, scores=scores, options=TrickOptions(ties="playOn"))
    s, _ = play_out(s, ["AS", "6S", "7S"])
    assert s.phase is TrickPhase.BIDDING and s.deal == 2


def test_the_deal_cap_ends_a_match_nobody_can_win() -> None:
    """Choice: after ``maxDeals`` deals the highest score wins even under 100."""
    s, _ = setup(SEATS, TrickOptions(max_deals=9), seed=3)
    while not s.finished:
        p = pending(s)[0]
        s, _ = apply(s, p, timeout_action(s, p))
    assert len(s.deals) <= 9
    assert max(s.scores.values()) >= 100 or len(s.deals) == 9


# -- requests ------------------------------------------------------------------------------


def test_stale_sequence_and_strangers_are_refused() -> None:
    """Like the adding game: ``expected_seq`` guards against a stale client; unknown players are refused."""
    s, _ = setup(SEATS, seed=1)
    with pytest.raises(TrickError) as info:
        apply(s, "a", TrickAction.bid(*s.hands["a"][:3]), expected_seq=5)
    assert info.value.reason is Reason.STALE_STATE
    assert refused(s, "zed", TrickAction.pass_()).reason is Reason.UNKNOWN_PLAYER
    assert TrickError(TrickReason.MUST_FOLLOW_SUIT, suit="S").message("en").startswith("You must follow")
    assert TrickError(Reason.NOT_YOUR_TURN).message() == "지금은 내 차례가 아니에요"
