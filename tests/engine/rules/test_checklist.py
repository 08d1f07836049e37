"""Spec §10 (테스트 체크리스트), one test per bullet, plus the §5.4 worked example.

Each docstring quotes the bullet's scenario (Korean, as in the spec) with an English gloss;
the states are built directly with :func:`make_state` so each scenario is exactly the one
the spec describes.
"""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest

from ninetynine.engine.rules import (
    Action,
    Event,
    GameState,
    Options,
    Reason,
    RuleError,
    apply,
    build_deck,
    check_action,
    legal_choices,
    player_view,
    public_view,
    setup,
    timeout_action,
    validate_state,
)

from .builders import card_id, event_types, faces, make_state, play, snapshot

PLAYERS = ["p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "p9", "p10"]


def _deal_size(state: GameState) -> int:
    return len(state.draw_pile) + len(state.discard) + sum(len(h) for h in state.hands.values())


def _refused(state: GameState, player: str, action: Action, *, expected_seq: int | None = None) -> RuleError:
    """Apply an action that must be refused; prove the state did not change; return the error."""
    before = snapshot(state)
    with pytest.raises(RuleError) as info:
        apply(state, player, action, expected_seq=expected_seq)
    assert snapshot(state) == before
    return info.value


# -- 덱 구성 --------------------------------------------------------------------------------


def test_deck_composition() -> None:
    """덱 구성: kr-product 기본값 91장(1~8 각 7, 10이 21, ±9/±10/0 각 4, 조커 2). specialCounts=2면 85장.
    classic 52장, 7인 이상 auto면 104장.

    Deck: kr-product 91 cards by default (1-8 seven each, 21 tens, four each of ±9/±10/0, two
    jokers); 85 with specialCounts=2; classic 52, and 104 with deckCount=auto at 7+ players.
    """
    kr = build_deck("kr-product", 4, 1)
    assert len(kr) == 91
    counts = Counter(c.face for c in kr)
    assert counts == {
        **{str(v): 7 for v in range(1, 9)},
        "10": 21,
        "±9": 4,
        "±10": 4,
        "0": 4,
        "JOKER": 2,
    }
    assert "9" not in counts  # there is no plain 9 card, only ±9
    assert len({c.id for c in kr}) == 91

    state, events = setup(PLAYERS[:4], Options(), seed=1)
    assert events[0].data["deckSize"] == 91 and _deal_size(state) == 91

    state, events = setup(PLAYERS[:4], Options(special_counts=2), seed=1)
    assert events[0].data["deckSize"] == 85 and _deal_size(state) == 85
    assert Counter(c.face for c in build_deck("kr-product", 2, 1))["±10"] == 2

    classic = build_deck("classic", 4, 1)
    assert len(classic) == 52 and len({c.face for c in classic}) == 52
    for players, size in ((2, 52), (6, 52), (7, 104), (10, 104)):
        state, events = setup(PLAYERS[:players], Options(mode="classic"), seed=3)
        assert events[0].data["deckSize"] == size, players
        assert _deal_size(state) == size
        validate_state(state)


def test_same_seed_same_deal_and_first_player() -> None:
    """같은 시드면 같은 분배, 같은 선이 나온다.

    The same seed gives the same deal and the same first player.
    """
    for options in (Options(), Options(mode="classic"), Options(lives=3, hand_size=4)):
        a, events_a = setup(PLAYERS[:5], options, seed=987654321)
        b, events_b = setup(PLAYERS[:5], options, seed=987654321)
        assert a.hands == b.hands and a.current == b.current and a.draw_pile == b.draw_pile
        assert snapshot(a) == snapshot(b)
        assert [e.to_dict() for e in events_a] == [e.to_dict() for e in events_b]
    # and a different seed deals differently (the deal really depends on the seed)
    c, _ = setup(PLAYERS[:5], Options(), seed=987654322)
    assert c.hands != a.hands or c.current != a.current
    firsts = {setup(PLAYERS[:5], Options(), seed=s)[0].current for s in range(40)}
    assert len(firsts) == 5  # the first player is drawn, not always seat 0


def test_hand_size_auto_and_chosen() -> None:
    """손패 auto: kr-product 5장, classic 3장. 3/4/5를 고르면 그 장수.

    handSize auto deals 5 cards in kr-product and 3 in classic; 3/4/5 deal that many.
    """
    for mode, auto in (("kr-product", 5), ("classic", 3)):
        state, _ = setup(PLAYERS[:4], Options(mode=mode), seed=11)
        assert {len(h) for h in state.hands.values()} == {auto}
        assert state.hand_size == auto
        for size in (3, 4, 5):
            state, _ = setup(PLAYERS[:4], Options(mode=mode, hand_size=size), seed=11)
            assert {len(h) for h in state.hands.values()} == {size}, (mode, size)
            assert len(state.draw_pile) == len(build_deck(mode, 4, 1)) - 4 * size


def test_start_total_by_player_count_and_mode() -> None:
    """시작 숫자: kr-product 2명 40, 3명 20, 4명 이상 0. startTotal = zero와 classic은 항상 0.
    목숨 모드 새 라운드와 reset도 남은 인원 기준 시작 숫자로 시작한다.

    Start total: kr-product 40 for 2 players, 20 for 3, 0 for 4+; always 0 with
    startTotal=zero and in classic. New rounds (lives) and reset use the remaining count.
    """
    expected = {2: 40, 3: 20, **{n: 0 for n in range(4, 11)}}
    for n, total in expected.items():
        assert setup(PLAYERS[:n], Options(), seed=5)[0].total == total, n
        assert setup(PLAYERS[:n], Options(start_total="zero"), seed=5)[0].total == 0
        assert setup(PLAYERS[:n], Options(mode="classic"), seed=5)[0].total == 0

    # reset: 4 players, B is eliminated at 99 -> 3 remain -> new deal from 20.
    s = make_state(
        total=95,
        hands={"A": ["4"], "B": ["8", "10"], "C": ["1"], "D": ["2"]},
        after_elimination="reset",
    )
    s, events = apply(s, "A", play(s, "A", "4"))
    assert s.total == 20 and s.alive["B"] is False
    assert [e.data["total"] for e in events if e.type == "roundStarted"] == [20]

    # lives: 3 players, B loses the last life -> 2 remain -> new round from 40.
    s = make_state(
        total=95, hands={"A": ["4"], "B": ["8"], "C": ["1"]}, lives=1, lives_left={"A": 1, "B": 1, "C": 1}
    )
    s, events = apply(s, "A", play(s, "A", "4"))
    assert not s.alive["B"] and s.total == 40 and s.round == 2

    # classic lives mode: every new round from 0
    s = make_state(mode="classic", total=97, hands={"A": ["2"], "B": ["5"], "C": ["2"]})
    s, _ = apply(s, "A", play(s, "A", "2"))
    assert s.round == 2 and s.total == 0


def test_total_95_only_4_is_legal_then_next_player_out() -> None:
    """합계 95에서 손패 [8, 5, 4] (kr-product)이면 4만 합법이다. 4를 내서 99가 된다.
    다음 사람이 [1, 2, 3]만 있으면 턴 시작 때 바로 탈락한다.

    At 95 with [8, 5, 4] only the 4 is legal; it makes 99. The next player, holding only
    [1, 2, 3], is eliminated at the start of their turn.
    """
    s = make_state(total=95, hands={"A": ["8", "5", "4"], "B": ["1", "2", "3"], "C": ["10", "0"]})
    legal = legal_choices(s, "A")
    assert [faces(s, [c.action.card_id]) for c in legal] == [["4"]]
    for face in ("8", "5"):
        with pytest.raises(RuleError) as info:
            check_action(s, "A", play(s, "A", face))
        assert info.value.reason is Reason.OVER_99

    after, events = apply(s, "A", play(s, "A", "4"))
    assert after.total == 99
    assert after.alive["B"] is False and after.elimination_order == ["B"]
    assert after.current == "C"
    assert event_types(events) == ["cardPlayed", "cardDrawn", "eliminated", "turnStarted"]
    assert events[3].data["player"] == "B" and events[3].data["total"] == 99


def test_plus_minus_10_at_total_5() -> None:
    """±10: 합계 5에서 빼기는 forbid면 거부된다. clamp면 0이 된다. 더하기는 15로 허용된다.

    ±10 at 5: minus is refused with floorAtZero=forbid, makes 0 with clamp; plus makes 15.
    """
    hands = {"A": ["±10", "1"], "B": ["1"], "C": ["2"]}
    forbid = make_state(total=5, hands=hands)
    err = _refused(forbid, "A", play(forbid, "A", "±10", sign="-"))
    assert err.reason is Reason.BELOW_ZERO and err.message() == "0보다 작아져서 뺄 수 없어요"
    assert apply(forbid, "A", play(forbid, "A", "±10", sign="+"))[0].total == 15

    clamp = make_state(total=5, hands=hands, floor_at_zero="clamp")
    assert apply(clamp, "A", play(clamp, "A", "±10", sign="-"))[0].total == 0
    assert apply(clamp, "A", play(clamp, "A", "±10", sign="+"))[0].total == 15


def test_joker_at_total_20() -> None:
    """조커: 합계 20에서 조커로 99를 고르면 99가 된다. 59는 거부되고(60-99), 100도 거부된다.

    Joker at 20: choosing 99 makes 99; 59 is refused (range 60-99) and so is 100.
    """
    s = make_state(total=20, hands={"A": ["JOKER", "1"], "B": ["0"], "C": ["0"]})
    assert apply(s, "A", play(s, "A", "JOKER", joker_value=99))[0].total == 99
    assert apply(s, "A", play(s, "A", "JOKER", joker_value=60))[0].total == 60
    for value in (59, 100):
        err = _refused(s, "A", play(s, "A", "JOKER", joker_value=value))
        assert err.reason is Reason.JOKER_OUT_OF_RANGE
        assert err.message() == "조커는 60부터 99 사이 숫자만 고를 수 있어요"


def test_zero_card_direction_choice() -> None:
    """0 카드: 3인에서 A → B 차례에 B가 0을 "방향 바꾸기"로 내면 다음이 A, "방향 그대로"로 내면 다음이 C다.
    2인에서는 상대 차례 그대로다. dir 없이 내면 거부, 0이 아닌 카드에 dir이 있어도 거부된다.
    classic의 4는 고르지 않고 항상 방향이 바뀐다.

    0 card: with A -> B in a 3-player game, B's 0 with "reverse" passes to A, with "keep"
    to C. With 2 players the opponent moves next either way. Without dir it is refused, and
    dir on any other card is refused. Classic 4 always reverses, with no choice.
    """
    s = make_state(total=30, hands={"A": ["1"], "B": ["0", "3"], "C": ["2"]}, current="B")
    reversed_, events = apply(s, "B", play(s, "B", "0", dir="reverse"))
    assert reversed_.current == "A" and reversed_.direction == -1
    assert reversed_.total == 30
    assert "directionChanged" in event_types(events)
    assert events[0].data["choice"] == {"dir": "reverse"}
    kept, events = apply(s, "B", play(s, "B", "0", dir="keep"))
    assert kept.current == "C" and kept.direction == 1
    assert "directionChanged" not in event_types(events)

    two = make_state(total=30, hands={"A": ["0", "1"], "B": ["2"]})
    for choice in ("keep", "reverse"):
        assert apply(two, "A", play(two, "A", "0", dir=choice))[0].current == "B"

    err = _refused(s, "B", play(s, "B", "0"))
    assert err.reason is Reason.DIR_REQUIRED
    assert err.message() == "0 카드는 방향을 그대로 둘지 바꿀지 골라 주세요"
    err = _refused(s, "B", play(s, "B", "3", dir="keep"))
    assert err.reason is Reason.DIR_NOT_ALLOWED
    assert err.message() == "방향은 0 카드를 낼 때만 고를 수 있어요"

    classic = make_state(
        mode="classic", total=30, hands={"A": ["2"], "B": ["4", "3"], "C": ["5"]}, current="B"
    )
    after, events = apply(classic, "B", play(classic, "B", "4"))
    assert after.current == "A" and after.direction == -1 and after.total == 30
    assert "directionChanged" in event_types(events)
    assert _refused(classic, "B", play(classic, "B", "4", dir="keep")).reason is Reason.DIR_NOT_ALLOWED


def test_classic_king_then_only_4_9_10_k() -> None:
    """classic: 합계 90에서 K → 99, 그다음 사람은 4/9/10/K만 낼 수 있다. A는 1이어도 100이라 거부된다.
    합계 88에서 A를 11로 내면 99로 허용된다.

    Classic: K at 90 makes 99; the next player may then play only 4, 9, 10 or K; an ace is
    refused even as 1 (100). At 88 an ace played as 11 makes 99 and is allowed.
    """
    s = make_state(
        mode="classic",
        total=90,
        hands={"A": ["K", "2"], "B": ["A", "2", "4", "9", "10", "J", "Q", "K", "8"], "C": ["3"]},
    )
    s, _ = apply(s, "A", play(s, "A", "K"))
    assert s.total == 99 and s.current == "B"
    legal_faces = {faces(s, [c.action.card_id])[0][:-1] for c in legal_choices(s, "B")}
    assert legal_faces == {"4", "9", "10", "K"}
    for ace_value in (1, 11):
        err = _refused(s, "B", play(s, "B", "A", ace_value=ace_value))
        assert err.reason is Reason.OVER_99 and err.message() == "99를 넘어서 낼 수 없어요"
    assert apply(s, "B", play(s, "B", "10"))[0].total == 89

    s88 = make_state(mode="classic", total=88, hands={"A": ["A"], "B": ["9"], "C": ["4"]})
    assert apply(s88, "A", play(s88, "A", "A", ace_value=11))[0].total == 99
    assert apply(s88, "A", play(s88, "A", "A", ace_value=1))[0].total == 89


def test_lives_three_new_round_loser_starts_elimination_and_on_the_board() -> None:
    """lives=3: 진 사람이 목숨 1개를 잃고, 시작 숫자로 새 라운드가 시작되며 진 사람이 먼저 한다.
    목숨 0이면 탈락하고 다음 사람이 시작한다. onTheBoard면 0개에서 한 번 더 져야 탈락한다.

    lives=3: the loser loses one life, a new round starts from the start total and the loser
    starts it. At 0 lives they are out and the next player starts. With onTheBoard they
    stay in at 0 lives and are out only after one more loss.
    """
    hands = {"A": ["4"], "B": ["8", "10"], "C": ["1"], "D": ["2"]}
    s = make_state(total=95, hands=hands, lives=3)
    s, events = apply(s, "A", play(s, "A", "4"))
    assert s.lives == {"A": 3, "B": 2, "C": 3, "D": 3} and s.alive["B"]
    assert s.round == 2 and s.current == "B" and s.total == 0  # 4 players -> 0
    assert {p: len(h) for p, h in s.hands.items()} == {p: 5 for p in "ABCD"}
    assert s.discard == [] and len(s.draw_pile) == 91 - 20
    types = event_types(events)
    assert types[types.index("lifeLost") :][:2] == ["lifeLost", "handDealt"]
    lost = next(e for e in events if e.type == "lifeLost")
    assert lost.data == {"player": "B", "left": 2, "onBoard": False, "total": 99}
    started = next(e for e in events if e.type == "roundStarted")
    assert started.data["starter"] == "B" and started.data["round"] == 2
    validate_state(s)

    # B on the last life: eliminated, the next player (C) starts the new round.
    s = make_state(total=95, hands=hands, lives=3, lives_left={"B": 1})
    s, events = apply(s, "A", play(s, "A", "4"))
    assert not s.alive["B"] and s.elimination_order == ["B"] and s.current == "C"
    assert s.lives_lost["B"] == 3 and s.eliminated_round["B"] == 1
    assert s.round == 2 and s.hands["B"] == []
    assert event_types(events).count("eliminated") == 1

    # onTheBoard: the last life lost keeps B in (on the board), B starts; a further loss ends B.
    s = make_state(total=95, hands=hands, lives=3, lives_left={"B": 1}, on_the_board=True)
    s, events = apply(s, "A", play(s, "A", "4"))
    assert s.alive["B"] and s.lives["B"] == 0 and s.on_board["B"] and s.current == "B"
    assert next(e for e in events if e.type == "lifeLost").data["onBoard"] is True
    s = make_state(total=95, hands=hands, lives=3, lives_left={"B": 0}, on_board=["B"], on_the_board=True)
    s, events = apply(s, "A", play(s, "A", "4"))
    assert not s.alive["B"] and s.current == "C" and not s.on_board["B"]
    assert "lifeLost" not in event_types(events)
    assert next(e for e in events if e.type == "eliminated").data["reason"] == "lostOnTheBoard"


def test_chained_eliminations_in_one_apply() -> None:
    """연쇄 탈락(lives=0, continue): 합계 98에서 다음 두 사람 모두 낼 카드가 없으면 한 번의 apply 안에서
    두 명이 순서대로 탈락하고, 세 번째 사람 차례가 된다. 이벤트 순서가 맞다.

    Chained eliminations (lives=0, continue): at 98, when the next two players both have
    nothing to play, one apply eliminates both in turn order and the third player moves.
    """
    s = make_state(
        total=98,
        hands={"A": ["0", "5"], "B": ["2", "3", "4"], "C": ["5", "6", "7"], "D": ["1", "10"], "E": ["8"]},
        draw=["10"],
    )
    after, events = apply(s, "A", play(s, "A", "0", dir="keep"))
    assert after.elimination_order == ["B", "C"]
    assert after.current == "D" and after.total == 98
    assert event_types(events) == ["cardPlayed", "cardDrawn", "eliminated", "eliminated", "turnStarted"]
    assert [e.data["player"] for e in events if e.type == "eliminated"] == ["B", "C"]
    assert [e.data["remaining"] for e in events if e.type == "eliminated"] == [4, 3]
    assert after.discard.count(card_id(s, "B", "2")) == 1  # the hands went face down to the discard
    validate_state(after)


def test_draw_pile_exhausted_reshuffles_discard() -> None:
    """더미 소진: 보충할 때 더미가 비면 버린 카드가 섞여 보충되고 합계는 그대로다.

    When the draw pile is empty at refill, the discard is shuffled into a new pile and the
    total is unchanged.
    """
    s = make_state(total=50, hands={"A": ["3", "1"], "B": ["1"], "C": ["2"]}, draw=[])
    assert s.draw_pile == [] and len(s.discard) == 91 - 4
    after, events = apply(s, "A", play(s, "A", "3"))
    assert after.total == 53
    reshuffle = next(e for e in events if e.type == "reshuffled")
    assert reshuffle.data == {"count": 91 - 3, "total": 53}
    assert event_types(events)[:3] == ["cardPlayed", "reshuffled", "cardDrawn"]
    assert len(after.hands["A"]) == 2 and after.discard == []
    assert len(after.draw_pile) == 91 - 4
    validate_state(after)
    # every discarded card (the one just played included) went into the new pile or A's hand
    new_card = after.hands["A"][-1]
    gathered = [*s.discard, card_id(s, "A", "3")]
    assert sorted([*after.draw_pile, new_card]) == sorted(gathered)
    # ... and the new pile is shuffled, not the discard in the order it was played
    assert [*after.draw_pile, new_card] != gathered


def test_timeout_plays_smallest_total() -> None:
    """시간 초과: 손패 [10, 3, 0], 합계 50이면 자동 행동은 0(결과 50, 가장 작음)을 방향 그대로로 낸다.
    손패 [±9, 3, 0], 합계 50이면 −9(결과 41)를 낸다.

    Timeout: hand [10, 3, 0] at 50 plays the 0 (50, the smallest) keeping the direction;
    hand [±9, 3, 0] at 50 plays -9 (41).
    """
    s = make_state(total=50, hands={"A": ["10", "3", "0"], "B": ["1"], "C": ["1"]})
    action = timeout_action(s)
    assert action == Action(card_id(s, "A", "0"), dir="keep")
    after, _ = apply(s, "A", action)
    assert after.total == 50 and after.direction == 1 and after.current == "B"

    s = make_state(total=50, hands={"A": ["±9", "3", "0"], "B": ["1"], "C": ["1"]})
    action = timeout_action(s)
    assert action == Action(card_id(s, "A", "±9"), sign="-")
    assert apply(s, "A", action)[0].total == 41


def test_disconnected_player_is_played_automatically() -> None:
    """연결 끊김: 끊긴 플레이어 차례가 자동으로 진행되고 게임이 멈추지 않는다.

    A disconnected player's turns are played automatically and the game does not stall:
    here p2 never sends anything, every p2 turn is the §8.5 move, the others play at random,
    and the game reaches its end.
    """
    picker = random.Random(99)
    for seed in range(5):
        state, _ = setup(PLAYERS[:4], Options(), seed=seed)
        auto_turns = 0
        for _ in range(5000):
            if state.finished:
                break
            if state.current == "p2":
                action = timeout_action(state)
                auto_turns += 1
            else:
                action = picker.choice(legal_choices(state, state.current)).action
            state, _ = apply(state, state.current, action, expected_seq=state.seq)
        assert state.finished, f"seed {seed} did not finish"
        assert auto_turns > 0
        assert len(state.elimination_order) == 3


def _strings(value: object) -> set[str]:
    """Every string (keys included) inside a JSON-like value."""
    if isinstance(value, str):
        return {value}
    if isinstance(value, dict):
        return set().union(*(_strings(k) | _strings(v) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return set().union(*(_strings(v) for v in value))
    return set()


def test_views_leak_no_hidden_information() -> None:
    """정보 유출: 관전자와 상대 view에 남의 손패, 보충 카드 내용, 더미 순서가 없다.
    탈락자 손패도 공개되지 않는다.

    No leaks: spectator and opponent views hold no other hand, no drawn card, no draw-pile
    order; an eliminated player's hand is not shown either.
    """
    s = make_state(total=95, hands={"A": ["4", "7"], "B": ["8", "10", "7"], "C": ["1", "0"]}, draw=["JOKER"])
    b_hand = list(s.hands["B"])
    after, events = apply(s, "A", play(s, "A", "4"))  # 99: B cannot play and is out
    assert after.elimination_order == ["B"]
    drawn = card_id(after, "A", "JOKER")
    seen_by = {None: public_view(after), "C": player_view(after, "C"), "A": player_view(after, "A")}
    for viewer, view in seen_by.items():
        strings = _strings(view)
        text = json.dumps(view, ensure_ascii=False)
        for p, hand in after.hands.items():
            if p != viewer:
                assert not strings & set(hand), (viewer, p)
        assert not strings & set(after.draw_pile), viewer
        assert not strings & set(b_hand), viewer  # B's hand is never shown
        assert str(after.rng.state) not in text and str(after.seed) not in text
        assert "seed" not in view
    assert drawn in _strings(seen_by["A"])  # the drawer does see the card

    for viewer in (None, "B", "C"):
        visible = [e.to_dict() for e in events if e.visible_to(viewer)]
        assert drawn not in _strings(visible), viewer
    for viewer in (None, "A", "B", "C"):
        visible = [e.to_dict() for e in events if e.visible_to(viewer)]
        assert not _strings(visible) & set(b_hand), viewer  # the eliminated hand goes face down
    assert next(e for e in events if e.type == "eliminated").data["handCount"] == 3
    visible_to_a = [e.to_dict() for e in events if e.visible_to("A")]
    assert drawn in _strings(visible_to_a)


def test_refused_actions_change_nothing() -> None:
    """차례가 아닌 play, sign 없는 ±카드, 범위 밖 jokerValue, 중복 패킷이 거부되고 상태가 바뀌지 않는다.

    A play out of turn, a ± card without sign, an out-of-range jokerValue and a duplicate
    packet are refused and the state does not change.
    """
    s = make_state(total=50, hands={"A": ["±9", "JOKER", "3"], "B": ["±10", "1"], "C": ["2"]})
    assert _refused(s, "B", play(s, "B", "1")).reason is Reason.NOT_YOUR_TURN
    assert _refused(s, "A", play(s, "A", "±9")).reason is Reason.SIGN_REQUIRED
    assert _refused(s, "A", play(s, "A", "JOKER", joker_value=42)).reason is Reason.JOKER_OUT_OF_RANGE

    action = play(s, "A", "3")
    after, _ = apply(s, "A", action, expected_seq=0)
    # the same packet again, against the new state: refused by the seq check, and without it
    # by the rules (A's turn is over), and nothing changes either way.
    assert _refused(after, "A", action, expected_seq=0).reason is Reason.STALE_STATE
    assert _refused(after, "A", action).reason is Reason.NOT_YOUR_TURN


def test_worked_example_5_4() -> None:
    """§5.4 예시 (kr-product, 3인, 시작 숫자 20에서 진행된 판의 중간, 손패 3장):

    • 합계 85에서 A가 10을 내 95가 된다. A가 보충한다.
    • B의 손패는 [8, 7, ±9]이다. 8과 7은 99를 넘는다. ±9를 빼기로 내서 86이 된다.
    • C의 손패는 [10, 10, 0]이다. 0을 내며 방향을 바꾸기로 고른다.
      86 그대로이고 방향이 반대가 되어 B 차례가 된다.
    • B의 손패는 [8, 7, 6](보충한 6)이다. 8 → 94, 7 → 93, 6 → 92 모두 가능하다. B가 7을 내서 93.
    • 방향이 바뀌었으므로 다음은 A다. A의 손패가 [8, 10, 7]이면 101, 103, 100이라 낼 카드가 없다.
      A는 턴 시작 때 탈락하고 C 차례가 된다.

    The worked example: A plays 10 (85 -> 95) and draws; B can only play ±9 as minus (86)
    and draws a 6; C plays 0 reversing (86, B next); B can play anything and plays 7 (93);
    A, holding [8, 10, 7], is out at the start of the turn and C moves.
    """
    s = make_state(
        total=85,
        hands={"A": ["10", "8", "7"], "B": ["8", "7", "±9"], "C": ["10", "10", "0"]},
        draw=["10", "6", "1", "2"],  # A draws 10, B draws 6, C draws 1, B draws 2
        hand_size=3,
    )
    s, _ = apply(s, "A", play(s, "A", "10"))
    assert s.total == 95 and s.current == "B"
    assert sorted(faces(s, s.hands["A"])) == sorted(["8", "7", "10"])

    pm9 = next(h for h in player_view(s, "B")["hand"] if h["card"]["face"] == "±9")
    assert [(c["action"].get("sign"), c["result"], c["legal"]) for c in pm9["choices"]] == [
        ("+", 104, False),
        ("-", 86, True),
    ]
    for face in ("8", "7"):
        assert _refused(s, "B", play(s, "B", face)).reason is Reason.OVER_99
    assert _refused(s, "B", play(s, "B", "±9", sign="+")).reason is Reason.OVER_99
    s, _ = apply(s, "B", play(s, "B", "±9", sign="-"))
    assert s.total == 86 and s.current == "C"
    assert faces(s, s.hands["B"]) == ["8", "7", "6"]

    s, _ = apply(s, "C", play(s, "C", "0", dir="reverse"))
    assert s.total == 86 and s.direction == -1 and s.current == "B"

    assert sorted(c.result for c in legal_choices(s, "B")) == [92, 93, 94]
    s, events = apply(s, "B", play(s, "B", "7"))
    assert s.total == 93
    assert s.alive["A"] is False and s.current == "C"
    assert [e.data["player"] for e in events if e.type == "eliminated"] == ["A"]
    assert event_types(events) == ["cardPlayed", "cardDrawn", "eliminated", "turnStarted"]
    validate_state(s)


def test_events_are_marked_with_their_audience() -> None:
    """보충 이벤트는 본인에게만 카드 내용을 준다 (§8.3). The drawn card goes to the drawer only."""
    s = make_state(total=10, hands={"A": ["1"], "B": ["2"]}, draw=["JOKER"])
    _, events = apply(s, "A", play(s, "A", "1"))
    drawn: list[Event] = [e for e in events if e.type == "cardDrawn"]
    assert [(e.audience.value, e.player) for e in drawn] == [("only", "A"), ("except", "A")]
    assert drawn[0].data["card"]["face"] == "JOKER" and "card" not in drawn[1].data
