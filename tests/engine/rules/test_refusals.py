"""Every refusal reason (§8.2): the stable code, the Korean text (the spec's own words where
it gives them) and an unchanged state afterwards, compared as a full canonical snapshot.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from ninetynine.engine.rules import (
    Action,
    GameState,
    Phase,
    Reason,
    RuleError,
    apply,
    check_action,
    check_replayable,
    timeout_action,
    validate_state,
)
from ninetynine.engine.rules.errors import TEXTS

from .builders import card_id, make_state, snapshot


@dataclass(frozen=True)
class Refusal:
    name: str
    state: Callable[[], GameState]
    player: str
    action: Callable[[GameState], Action]
    reason: Reason
    korean: str | None  # the spec's reason text, when §8.2 gives one
    expected_seq: int | None = None


def kr(total: int = 50, **kw: object) -> Callable[[], GameState]:
    hands = {"A": ["1", "±9", "±10", "0", "JOKER", "8"], "B": ["2", "3"], "C": ["4"]}
    return lambda: make_state(total=total, hands=hands, **kw)  # type: ignore[arg-type]


def classic(total: int = 50, **kw: object) -> Callable[[], GameState]:
    hands = {"A": ["A", "10", "4", "K", "2"], "B": ["3"], "C": ["5"]}
    return lambda: make_state(mode="classic", total=total, hands=hands, **kw)  # type: ignore[arg-type]


def by_face(face: str, **choice: object) -> Callable[[GameState], Action]:
    return lambda s: Action(card_id(s, "A", face), **choice)  # type: ignore[arg-type]


def finished() -> GameState:
    return make_state(total=99, hands={"A": ["1"], "B": []}, eliminated=["B"], phase=Phase.FINISHED)


CASES = [
    Refusal("not your turn", kr(), "B", lambda s: Action(s.hands["B"][0]), Reason.NOT_YOUR_TURN, None),
    Refusal(
        "card of another player", kr(), "A", lambda s: Action(s.hands["B"][0]), Reason.CARD_NOT_IN_HAND, None
    ),
    Refusal(
        "card from the draw pile", kr(), "A", lambda s: Action(s.draw_pile[-1]), Reason.CARD_NOT_IN_HAND, None
    ),
    Refusal("made-up card id", kr(), "A", lambda s: Action("N9-1"), Reason.CARD_NOT_IN_HAND, None),
    Refusal("game finished", finished, "A", lambda s: Action(s.hands["A"][0]), Reason.GAME_FINISHED, None),
    Refusal(
        "± card without sign",
        kr(),
        "A",
        by_face("±9"),
        Reason.SIGN_REQUIRED,
        "더하기와 빼기 중 하나를 골라 주세요",
    ),
    Refusal("± card with bad sign", kr(), "A", by_face("±10", sign="*"), Reason.SIGN_REQUIRED, None),
    Refusal(
        "joker below range",
        kr(),
        "A",
        by_face("JOKER", joker_value=59),
        Reason.JOKER_OUT_OF_RANGE,
        "조커는 60부터 99 사이 숫자만 고를 수 있어요",
    ),
    Refusal(
        "joker above range (0-99)",
        kr(joker_range="0-99"),
        "A",
        by_face("JOKER", joker_value=100),
        Reason.JOKER_OUT_OF_RANGE,
        "조커는 0부터 99 사이 숫자만 고를 수 있어요",
    ),
    Refusal(
        "joker negative (0-99)",
        kr(joker_range="0-99"),
        "A",
        by_face("JOKER", joker_value=-1),
        Reason.JOKER_OUT_OF_RANGE,
        None,
    ),
    Refusal("joker without value", kr(), "A", by_face("JOKER"), Reason.JOKER_VALUE_REQUIRED, None),
    Refusal(
        "0 without dir",
        kr(),
        "A",
        by_face("0"),
        Reason.DIR_REQUIRED,
        "0 카드는 방향을 그대로 둘지 바꿀지 골라 주세요",
    ),
    Refusal("0 with unknown dir", kr(), "A", by_face("0", dir="left"), Reason.DIR_REQUIRED, None),
    Refusal(
        "dir on a number card",
        kr(),
        "A",
        by_face("8", dir="reverse"),
        Reason.DIR_NOT_ALLOWED,
        "방향은 0 카드를 낼 때만 고를 수 있어요",
    ),
    Refusal(
        "dir on the joker",
        kr(),
        "A",
        by_face("JOKER", joker_value=70, dir="keep"),
        Reason.DIR_NOT_ALLOWED,
        None,
    ),
    Refusal("dir on classic 4", classic(), "A", by_face("4", dir="reverse"), Reason.DIR_NOT_ALLOWED, None),
    Refusal(
        "dir on a v1 zero", kr(state_version=1), "A", by_face("0", dir="keep"), Reason.DIR_NOT_ALLOWED, None
    ),
    Refusal(
        "ace without value",
        classic(),
        "A",
        by_face("A"),
        Reason.ACE_VALUE_REQUIRED,
        "A는 1과 11 중 하나를 골라 주세요",
    ),
    Refusal("ace as 5", classic(), "A", by_face("A", ace_value=5), Reason.ACE_VALUE_INVALID, None),
    Refusal(
        "ace as 11 with aceHigh 10",
        classic(ace_high=10),
        "A",
        by_face("A", ace_value=11),
        Reason.ACE_VALUE_INVALID,
        None,
    ),
    Refusal("sign on a number card", kr(), "A", by_face("8", sign="+"), Reason.CHOICE_NOT_ALLOWED, None),
    Refusal(
        "jokerValue on a ± card",
        kr(),
        "A",
        by_face("±9", sign="-", joker_value=70),
        Reason.CHOICE_NOT_ALLOWED,
        None,
    ),
    Refusal(
        "aceValue on the joker",
        kr(),
        "A",
        by_face("JOKER", joker_value=70, ace_value=1),
        Reason.CHOICE_NOT_ALLOWED,
        None,
    ),
    Refusal("sign on classic K", classic(), "A", by_face("K", sign="+"), Reason.CHOICE_NOT_ALLOWED, None),
    Refusal(
        "number card over 99", kr(total=92), "A", by_face("8"), Reason.OVER_99, "99를 넘어서 낼 수 없어요"
    ),
    Refusal(
        "± plus over 99",
        kr(total=91),
        "A",
        by_face("±9", sign="+"),
        Reason.OVER_99,
        "99를 넘어서 낼 수 없어요",
    ),
    Refusal("classic ace over 99", classic(total=89), "A", by_face("A", ace_value=11), Reason.OVER_99, None),
    Refusal(
        "± minus below 0",
        kr(total=8),
        "A",
        by_face("±9", sign="-"),
        Reason.BELOW_ZERO,
        "0보다 작아져서 뺄 수 없어요",
    ),
    Refusal(
        "classic 10 below 0",
        classic(total=9),
        "A",
        by_face("10"),
        Reason.BELOW_ZERO,
        "0보다 작아져서 뺄 수 없어요",
    ),
    Refusal("stale seq", kr(seq=7), "A", by_face("8"), Reason.STALE_STATE, None, expected_seq=6),
    Refusal("player not seated", kr(), "Z", by_face("8"), Reason.UNKNOWN_PLAYER, None),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_refusal_has_reason_text_and_changes_nothing(case: Refusal) -> None:
    state = case.state()
    action = case.action(state)
    before = snapshot(state)
    with pytest.raises(RuleError) as info:
        apply(state, case.player, action, expected_seq=case.expected_seq, now_ms=123)
    err = info.value
    assert err.reason is case.reason
    assert snapshot(state) == before
    if case.korean is not None:
        assert err.message("ko") == case.korean
    # both languages render fully (no unfilled template field) and the English one is English
    assert "?" not in err.message("ko") and "{" not in err.message("ko")
    assert err.message("en") and err.message("en") != err.message("ko")
    if case.expected_seq is None:  # check_action is the same validation without applying
        with pytest.raises(RuleError) as again:
            check_action(state, case.player, action)
        assert again.value.reason is case.reason


def test_refusal_metadata_names_the_numbers() -> None:
    """An OVER_99 refusal carries the card, the total and the result it would make."""
    s = make_state(total=92, hands={"A": ["8", "1"], "B": ["1"]})
    with pytest.raises(RuleError) as info:
        apply(s, "A", Action(s.hands["A"][0]))
    assert info.value.meta == {"cardId": s.hands["A"][0], "total": "92", "result": "100"}


def test_every_reason_has_korean_and_english_text() -> None:
    assert set(TEXTS) == set(Reason)
    for ko, en in TEXTS.values():
        assert ko and en and ko != en


def test_timeout_on_a_finished_game_is_refused() -> None:
    s = finished()
    with pytest.raises(RuleError) as info:
        timeout_action(s)
    assert info.value.reason is Reason.GAME_FINISHED


def test_finished_version_1_game_cannot_be_replayed() -> None:
    """v1로 끝난 게임은 다시 보기를 할 수 없다. A v1 game that finished cannot be replayed."""
    v1_done = make_state(
        total=99, hands={"A": ["1"], "B": []}, eliminated=["B"], phase=Phase.FINISHED, state_version=1
    )
    with pytest.raises(RuleError) as info:
        check_replayable(v1_done)
    assert info.value.reason is Reason.REPLAY_UNSUPPORTED
    assert info.value.message() == "버전 1로 끝난 게임은 다시 볼 수 없어요"
    check_replayable(finished())  # a finished v2 game can
    check_replayable(
        make_state(total=10, hands={"A": ["1"], "B": ["2"]}, state_version=1)
    )  # a v1 game in play can


def _broken(change: Callable[[GameState], None]) -> GameState:
    s = make_state(total=50, hands={"A": ["1", "2"], "B": ["3"], "C": ["4"]})
    change(s)
    return s


@pytest.mark.parametrize(
    ("name", "change"),
    [
        ("duplicate card", lambda s: s.hands["B"].append(s.hands["A"][0])),
        ("lost card", lambda s: s.draw_pile.pop()),
        ("unknown card", lambda s: s.draw_pile.append("N9-1")),
        ("total over 99", lambda s: setattr(s, "total", 100)),
        ("negative total", lambda s: setattr(s, "total", -1)),
        ("direction 0", lambda s: setattr(s, "direction", 0)),
        ("stateVersion 3", lambda s: setattr(s, "state_version", 3)),
        ("current not seated", lambda s: setattr(s, "current", "Z")),
        ("seed does not match commitment", lambda s: setattr(s, "seed", s.seed + 1)),
        ("even rng increment", lambda s: setattr(s, "rng", type(s.rng)(s.rng.state, 2))),
        ("eliminated but holding cards", lambda s: s.alive.update(C=False)),
        ("lives above start", lambda s: s.lives.update(A=4)),
        ("kr with two decks", lambda s: setattr(s, "deck_count", 2)),
    ],
)
def test_validate_state_rejects_broken_states(name: str, change: Callable[[GameState], None]) -> None:
    """INVALID_STATE: the stateless engine trusts no state it is sent."""
    with pytest.raises(RuleError) as info:
        validate_state(_broken(change))
    assert info.value.reason is Reason.INVALID_STATE, name


def test_validate_state_rejects_a_current_player_without_a_legal_play() -> None:
    s = make_state(total=95, hands={"A": ["8"], "B": ["1"]}, validate=False)
    with pytest.raises(RuleError) as info:
        validate_state(s)
    assert info.value.reason is Reason.INVALID_STATE
