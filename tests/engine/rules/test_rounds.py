"""Loss handling and what follows it (§5.1, §5.3, §6, §8.2 end, §8.6): new rounds in lives
mode, ``reset``, refill and reshuffle, refill off, two players, state version 1, game end.
"""

from __future__ import annotations

import pytest

from ninetynine.engine.rules import (
    Action,
    Phase,
    Reason,
    RuleError,
    apply,
    card_choices,
    card_of,
    game_result,
    timeout_action,
    validate_state,
)

from .builders import card_id, event_types, faces, make_state, play, snapshot

FOUR = {"A": ["4", "1"], "B": ["8", "10"], "C": ["1", "2"], "D": ["2", "3"]}


def test_lives_new_round_gathers_every_card_and_clears_history() -> None:
    """목숨 모드 새 라운드: 모든 카드를 거둬 섞고 남은 사람에게 다시 나눈다."""
    s = make_state(total=95, hands=FOUR, lives=2, discard=["10", "10", "±9"])
    s, events = apply(s, "A", play(s, "A", "4"))
    assert s.round == 2 and s.lives["B"] == 1 and s.lives_lost["B"] == 1
    assert s.discard == [] and s.history == []
    assert all(len(h) == 5 for h in s.hands.values())
    assert len(s.draw_pile) == 91 - 20
    started = next(e for e in events if e.type == "roundStarted")
    assert started.data["reason"] == "lifeLost" and started.data["drawPileCount"] == 71
    assert event_types(events)[-1] == "turnStarted"
    validate_state(s)


def test_lives_new_round_skips_players_already_out() -> None:
    """새 라운드 분배는 남은 사람에게만. The deal skips eliminated players."""
    s = make_state(
        total=95,
        hands={"A": ["4"], "B": ["8"], "C": [], "D": ["2"]},
        eliminated=["C"],
        lives=3,
    )
    s, _ = apply(s, "A", play(s, "A", "4"))
    assert s.hands["C"] == [] and {len(s.hands[p]) for p in "ABD"} == {5}
    assert s.total == 20  # three players left
    validate_state(s)


def test_lives_eliminated_loser_passes_start_to_next_in_direction() -> None:
    """진 사람이 탈락했으면 그 다음 사람이 먼저 한다 — in the current direction."""
    s = make_state(
        total=95,
        hands={"A": ["1"], "B": ["2"], "C": ["8"], "D": ["4"]},
        lives=3,
        lives_left={"C": 1},
        current="D",
        direction=-1,
    )
    s, _ = apply(s, "D", play(s, "D", "4"))
    assert not s.alive["C"] and s.current == "B" and s.direction == -1


def test_reset_after_elimination() -> None:
    """afterElimination=reset: 합계를 시작 숫자(남은 인원 기준)로 하고 남은 사람 손패를 모두 거둬
    다시 섞어 나눈다. 탈락자의 다음 사람이 시작한다.

    The survivors' hands (and the draw pile) are gathered, shuffled and dealt again; the
    total restarts from the start total for the players left; the next player starts.
    """
    s = make_state(total=95, hands=FOUR, after_elimination="reset", discard=["JOKER"])
    b_hand = list(s.hands["B"])
    played = card_id(s, "A", "4")
    after, events = apply(s, "A", play(s, "A", "4"))
    assert not after.alive["B"] and after.current == "C"
    assert after.total == 20 and after.round == 2
    # the discard keeps what was there, the card played, and B's face-down hand
    assert after.discard == [*s.discard, played, *b_hand]
    assert {len(after.hands[p]) for p in "ACD"} == {5} and after.hands["B"] == []
    started = next(e for e in events if e.type == "roundStarted")
    assert started.data == {
        "round": 2,
        "starter": "C",
        "total": 20,
        "reason": "reset",
        "handCounts": {"A": 5, "C": 5, "D": 5},
        "drawPileCount": len(after.draw_pile),
    }
    validate_state(after)

    zero = make_state(total=95, hands=FOUR, after_elimination="reset", start_total="zero")
    assert apply(zero, "A", play(zero, "A", "4"))[0].total == 0


def test_continue_after_elimination_keeps_the_total() -> None:
    """afterElimination=continue (공식): 같은 합계로 다음 사람 차례."""
    s = make_state(total=95, hands={**FOUR, "C": ["0", "1"]})
    after, events = apply(s, "A", play(s, "A", "4"))
    assert after.total == 99 and after.current == "C" and after.round == 1
    assert "roundStarted" not in event_types(events)


def test_reshuffle_keeps_total_and_conserves_cards() -> None:
    """더미가 비었으면 버린 카드를 모두 섞어 새 더미를 만든다(합계는 그대로)."""
    s = make_state(total=70, hands={"A": ["±10", "1"], "B": ["2"]}, draw=[])
    after, events = apply(s, "A", play(s, "A", "±10", sign="-"))
    assert after.total == 60
    assert next(e for e in events if e.type == "reshuffled").data["total"] == 60
    assert sorted(after.draw_pile + after.discard + [c for h in after.hands.values() for c in h]) == sorted(
        s.draw_pile + s.discard + [c for h in s.hands.values() for c in h]
    )


def test_refill_when_only_the_played_card_is_left() -> None:
    """그래도 없으면 보충하지 않는다: with every other card in hands, the discard holds only the card
    just played, so the reshuffle makes a one-card pile and the player draws that card back.
    (With refill on, the played card is always in the discard, so a refill never finds
    both piles empty.)"""
    s = make_state(total=10, hands={"A": ["3", "1"], "B": ["2"]}, draw=[], validate=False)
    s.hands["B"] += s.discard
    s.discard = []
    validate_state(s)
    played = card_id(s, "A", "3")
    after, events = apply(s, "A", Action(played))
    assert next(e for e in events if e.type == "reshuffled").data["count"] == 1
    assert played in after.hands["A"] and after.draw_pile == [] and after.discard == []
    assert after.total == 13


def test_refill_off_hands_shrink_and_an_empty_hand_loses() -> None:
    """refill = off: 보충하지 않는다. A player with no card left has nothing to play and loses."""
    s = make_state(total=10, hands={"A": ["1"], "B": ["2", "3"]}, refill=False)
    pile = list(s.draw_pile)
    s, events = apply(s, "A", play(s, "A", "1"))
    assert s.hands["A"] == [] and s.draw_pile == pile and "cardDrawn" not in event_types(events)
    assert s.current == "B"
    s, events = apply(s, "B", play(s, "B", "2"))
    assert s.phase is Phase.FINISHED and s.elimination_order == ["A"]
    assert event_types(events)[-2:] == ["eliminated", "gameFinished"]


def test_two_players_reverse_still_passes_to_the_opponent() -> None:
    """2인일 때 방향을 바꿔도 다음 차례는 여전히 상대다 (kr 0 and classic 4)."""
    kr = make_state(total=30, hands={"A": ["0", "1"], "B": ["2"]})
    after, _ = apply(kr, "A", play(kr, "A", "0", dir="reverse"))
    assert after.current == "B" and after.direction == -1
    classic = make_state(mode="classic", total=30, hands={"A": ["4", "2"], "B": ["2"]})
    after, _ = apply(classic, "A", play(classic, "A", "4"))
    assert after.current == "B" and after.direction == -1


def test_direction_skips_eliminated_players() -> None:
    s = make_state(total=30, hands={"A": ["3"], "B": [], "C": ["2"], "D": ["1"]}, eliminated=["B"])
    assert apply(s, "A", play(s, "A", "3"))[0].current == "C"
    s = make_state(
        total=30, hands={"A": ["3"], "B": ["1"], "C": ["2"], "D": []}, eliminated=["D"], direction=-1
    )
    assert apply(s, "A", play(s, "A", "3"))[0].current == "C"


# -- state version 1 -----------------------------------------------------------------------


def test_v1_zero_always_reverses_and_refuses_dir() -> None:
    """v1: 그 게임의 0 카드는 늘 방향 반대 (dir 없음)."""
    s = make_state(total=30, hands={"A": ["1"], "B": ["0", "3"], "C": ["2"]}, current="B", state_version=1)
    zero = card_of(s, card_id(s, "B", "0"))
    assert [c.action for c in card_choices(s, zero)] == [Action(zero.id)]
    after, events = apply(s, "B", Action(zero.id))
    assert after.current == "A" and after.direction == -1 and after.state_version == 1
    assert "directionChanged" in event_types(events)
    with pytest.raises(RuleError) as info:
        apply(s, "B", Action(zero.id, dir="reverse"))
    assert info.value.reason is Reason.DIR_NOT_ALLOWED
    assert timeout_action(s) == Action(zero.id)  # the timeout move sends no dir either


def test_v1_new_round_starts_from_zero_with_hands_as_dealt() -> None:
    """v1: 나눈 손패 장수 그대로, 새 라운드도 0부터 (v2 would use 20 and handSize 5)."""
    hands = {"A": ["4"], "B": ["8"], "C": ["1"]}
    v1 = make_state(total=95, hands=hands, lives=3, state_version=1, hand_size=3)
    after, _ = apply(v1, "A", play(v1, "A", "4"))
    assert after.round == 2 and after.total == 0
    assert {len(h) for h in after.hands.values()} == {3}

    v2 = make_state(total=95, hands=hands, lives=3, hand_size=3)
    after, _ = apply(v2, "A", play(v2, "A", "4"))
    assert after.total == 20 and {len(h) for h in after.hands.values()} == {3}

    reset = make_state(
        total=95, hands={**hands, "D": ["2"]}, after_elimination="reset", state_version=1, hand_size=4
    )
    after, _ = apply(reset, "A", play(reset, "A", "4"))
    assert after.total == 0 and {len(after.hands[p]) for p in "ACD"} == {4}


# -- the end -------------------------------------------------------------------------------


def test_game_end_result_ranking_and_summary() -> None:
    """§6/§8.6: 마지막 1명이 승자, 늦게 탈락한 사람이 앞선다, 잃은 목숨 수, summary sentence."""
    s = make_state(
        total=95,
        hands={"A": ["4", "1"], "B": ["8"], "C": []},
        eliminated=["C"],
        lives=3,
        lives_left={"A": 2, "B": 1},
        round=4,
    )
    s.names = {"A": "지호"}
    after, events = apply(s, "A", play(s, "A", "4"))
    assert after.phase is Phase.FINISHED and after.current == "A"
    assert after.elimination_order == ["C", "B"]
    result = game_result(after)
    assert result.winner == ("A",)
    assert [(r.player, r.rank, r.lives_lost, r.eliminated_at_round) for r in result.ranking] == [
        ("A", 1, 1, None),
        ("B", 2, 3, 4),
        ("C", 3, 3, 4),
    ]
    assert result.summary == "끝까지 살아남은 사람은 지호 님! 마지막 합계 99"
    assert event_types(events)[-3:] == ["lifeLost", "eliminated", "gameFinished"]
    finished = events[-1].data
    assert finished["winner"] == ["A"] and finished["seed"] == str(s.seed)
    validate_state(after)

    before = snapshot(after)
    with pytest.raises(RuleError) as info:
        apply(after, "A", Action(after.hands["A"][0]))
    assert info.value.reason is Reason.GAME_FINISHED and snapshot(after) == before


def test_game_result_of_a_game_in_play_is_refused() -> None:
    with pytest.raises(RuleError) as info:
        game_result(make_state(total=1, hands={"A": ["1"], "B": ["1"]}))
    assert info.value.reason is Reason.INVALID_STATE


def test_apply_does_not_touch_its_input_and_counts_seq() -> None:
    s = make_state(total=40, hands={"A": ["5", "6"], "B": ["1"], "C": ["2"]}, seq=3)
    before = snapshot(s)
    after, events = apply(s, "A", play(s, "A", "5"), now_ms=1_000, expected_seq=3)
    assert snapshot(s) == before
    assert after.seq == 4 and after.turn_started_at == 1_000
    assert events[0].data["seq"] == 4 and events[-1].data["deadline"] == 1_000 + 15_000
    assert faces(after, [r.card_id for r in after.history]) == ["5"]
