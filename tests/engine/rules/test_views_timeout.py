"""Views (§8.3): what each viewer gets and never gets; the seed reveal; the §8.5 timeout
policy including its tie-breaks.
"""

from __future__ import annotations

import hashlib
import json

from ninetynine.engine.rules import (
    Action,
    Options,
    apply,
    player_view,
    public_view,
    setup,
    timeout_action,
)

from .builders import card_id, make_state, play


def test_player_view_previews_every_choice() -> None:
    """본인만: 각 카드의 합법 여부와 결과 미리보기 (예: ±9 → 더하면 104 불가 / 빼면 86)."""
    s = make_state(total=95, hands={"A": ["±9", "8", "0", "JOKER"], "B": ["1"]})
    view = player_view(s, "A")
    assert view["myTurn"] is True
    by_face = {h["card"]["face"]: h for h in view["hand"]}
    assert [(c["result"], c["legal"], c["reason"]) for c in by_face["±9"]["choices"]] == [
        (104, False, "OVER_99"),
        (86, True, None),
    ]
    assert by_face["8"]["playable"] is False and by_face["8"]["choices"][0]["reason"] == "OVER_99"
    assert [c["action"]["dir"] for c in by_face["0"]["choices"]] == ["keep", "reverse"]
    assert by_face["JOKER"]["jokerRange"] == {"min": 60, "max": 99}
    sent = [p["action"] for p in view["legalPlays"]]
    assert {"cardId": card_id(s, "A", "±9"), "sign": "-"} in sent
    assert all(a["cardId"] != card_id(s, "A", "8") for a in sent)
    # every legal play offered is accepted by apply
    for p in view["legalPlays"]:
        a = p["action"]
        action = Action(a["cardId"], a.get("sign"), a.get("aceValue"), a.get("jokerValue"), a.get("dir"))
        assert apply(s, "A", action)[0].total == p["result"]


def test_not_my_turn_view_has_hand_but_no_legal_plays() -> None:
    s = make_state(total=10, hands={"A": ["1"], "B": ["2", "3"]})
    view = player_view(s, "B")
    assert view["myTurn"] is False and view["legalPlays"] == []
    assert [h["card"]["id"] for h in view["hand"]] == s.hands["B"]


def test_public_view_shows_the_table() -> None:
    """모두: 합계, 방향, 차례, 손패 장수, 목숨, 생존, 탈락 순서, 더미 장수, 최근 낸 카드와 합계."""
    s = make_state(
        total=40, hands={"A": ["5", "6"], "B": ["1", "2", "3"], "C": []}, eliminated=["C"], lives=0
    )
    s, _ = apply(s, "A", play(s, "A", "5"), now_ms=5_000)
    view = public_view(s)
    assert (view["total"], view["direction"], view["current"], view["phase"]) == (45, 1, "B", "playing")
    assert [(p["id"], p["handCount"], p["alive"]) for p in view["players"]] == [
        ("A", 2, True),
        ("B", 3, True),
        ("C", 0, False),
    ]
    assert view["eliminationOrder"] == ["C"] and view["drawPileCount"] == len(s.draw_pile)
    assert view["recentPlays"] == [
        {"player": "A", "cardId": s.history[0].card_id, "face": "5", "before": 40, "total": 45, "choice": {}}
    ]
    assert view["deadline"] == 5_000 + 15_000
    assert "hand" not in view and "seed" not in view and "result" not in view
    assert player_view(s, None) == {**view, "viewer": None}
    assert player_view(s, "stranger") == {**view, "viewer": "stranger"}


def test_views_never_carry_hands_pile_or_rng() -> None:
    """절대 보내지 않는 것: 남의 손패, 더미 순서, RNG 상태 (a freshly dealt 6-player game)."""
    state, _ = setup([f"p{i}" for i in range(6)], Options(lives=3), seed=2**63 + 12345)
    secrets = {str(state.seed), str(state.rng.state), str(state.rng.inc)}
    for viewer in [None, *state.seats]:
        text = json.dumps(player_view(state, viewer), ensure_ascii=False)
        for other, hand in state.hands.items():
            if other != viewer:
                assert not any(f'"{cid}"' in text for cid in hand), (viewer, other)
        assert not any(f'"{cid}"' in text for cid in state.draw_pile)
        assert not any(secret in text for secret in secrets)


def test_seed_is_revealed_at_the_end_and_matches_the_commitment() -> None:
    """게임이 끝나면 시드를 공개하고, SHA-256이 처음 공개한 commitment와 같다."""
    s = make_state(total=95, hands={"A": ["4", "1"], "B": ["8"]}, seed=2**40 + 7)
    commitment = public_view(s)["seedCommitment"]
    end, _ = apply(s, "A", play(s, "A", "4"))
    view = public_view(end)
    assert view["phase"] == "finished"
    seed = int(view["seed"])
    assert hashlib.sha256(seed.to_bytes(8, "big")).hexdigest() == commitment == view["seedCommitment"]
    assert view["result"]["winner"] == ["A"]
    assert [r["player"] for r in view["result"]["ranking"]] == ["A", "B"]


# -- §8.5 timeout policy -------------------------------------------------------------------


def test_timeout_tie_no_change_card_before_a_clamped_minus() -> None:
    """같으면 0/4/9 → 일반 숫자 → ±카드 → K/조커. Total 0 with clamp: 0 card and ±9-minus both give 0."""
    s = make_state(total=0, hands={"A": ["±9", "0"], "B": ["1"]}, floor_at_zero="clamp")
    assert timeout_action(s) == Action(card_id(s, "A", "0"), dir="keep")


def test_timeout_tie_number_card_before_joker() -> None:
    """At 50 a 10 and a joker at 60 both give 60: the number card goes first."""
    s = make_state(total=50, hands={"A": ["JOKER", "10"], "B": ["1"]})
    assert timeout_action(s) == Action(card_id(s, "A", "10"))


def test_timeout_tie_number_before_plus_minus() -> None:
    """At 5 (forbid) a 10 and a ±10 played plus both give 15: the number card goes first."""
    s = make_state(total=5, hands={"A": ["±10", "10"], "B": ["1"]})
    assert timeout_action(s) == Action(card_id(s, "A", "10"))
    # ... but a smaller result always wins over the class order: ±10 minus at 12 gives 2
    s = make_state(total=12, hands={"A": ["3", "±10"], "B": ["1"]})
    assert timeout_action(s) == Action(card_id(s, "A", "±10"), sign="-")


def test_timeout_tie_same_card_kind_by_card_id() -> None:
    """그래도 같으면 카드 ID 순."""
    s = make_state(total=10, hands={"A": ["10", "10"], "B": ["1"]})
    s.hands["A"].reverse()
    assert timeout_action(s) == Action(min(s.hands["A"]))


def test_timeout_classic_at_99_plays_a_no_change_card_before_k() -> None:
    s = make_state(mode="classic", total=99, hands={"A": ["K", "9", "4"], "B": ["2"]}, lives=0)
    assert timeout_action(s) == Action(card_id(s, "A", "4"))
    s = make_state(mode="classic", total=99, hands={"A": ["K", "10"], "B": ["2"]}, lives=0)
    assert timeout_action(s) == Action(card_id(s, "A", "10"))  # 89 is smallest


def test_timeout_ace_counts_one() -> None:
    s = make_state(mode="classic", total=50, hands={"A": ["2", "A"], "B": ["2"]})
    assert timeout_action(s) == Action(card_id(s, "A", "A"), ace_value=1)


def test_timeout_joker_takes_the_range_minimum() -> None:
    """조커는 jokerRange 최소값(60)으로 낸다."""
    s = make_state(total=95, hands={"A": ["JOKER", "10"], "B": ["1"]})
    assert timeout_action(s) == Action(card_id(s, "A", "JOKER"), joker_value=60)
    s = make_state(total=95, hands={"A": ["JOKER", "10"], "B": ["1"]}, joker_range="0-99")
    assert timeout_action(s) == Action(card_id(s, "A", "JOKER"), joker_value=0)
