"""The documented timeout policy (ninetynine/engine/trick/timeout.py), one test per decision."""

from __future__ import annotations

from ninetynine.engine.trick import TrickAction, TrickPhase, apply, deadline, pending, setup, timeout_action

from .builders import SEATS, play_out, table

BIDS3 = {p: ("QC", "QD", "KD") for p in SEATS}


def test_bid_timeout_lays_aside_the_three_lowest_cards() -> None:
    """Lowest rank first; equal ranks by suit in bid-value order ♦ ♠ ♥ ♣."""
    s, _ = setup(SEATS, seed=12)
    s = s.clone()
    s.hands["a"] = ["AS", "6C", "KH", "6D", "7H", "9S", "6H", "QS", "JD", "10C", "8S", "AD"]
    assert timeout_action(s, "a") == TrickAction.bid("6D", "6H", "6C")
    assert deadline(s) == s.decision_started_at + 60_000


def test_announce_timeout_passes() -> None:
    """Announcing risks -60 and shows the bid, so the policy never announces for a player."""
    s, _ = setup(SEATS, seed=12, now_ms=1000)
    for p in pending(s):
        s, _ = apply(s, p, timeout_action(s, p), now_ms=2000)
    assert s.phase is TrickPhase.ANNOUNCING
    assert timeout_action(s, pending(s)[0]) == TrickAction.pass_()
    assert deadline(s) == 2000 + 30_000


def test_play_timeout_plays_the_lowest_legal_card_following_suit() -> None:
    s = table({"a": ["QS", "6H"], "b": ["KS", "7S", "6D"], "c": ["8S", "9H"]}, bids=BIDS3)
    assert timeout_action(s, "a") == TrickAction.play("6H")
    s, _ = play_out(s, ["QS"])
    assert timeout_action(s, "b") == TrickAction.play("7S")


def test_play_timeout_keeps_trumps_back_when_void() -> None:
    s = table({"a": ["QS"], "b": ["6H", "9D"], "c": ["8S"]}, bids=BIDS3, trumps="H")
    s, _ = play_out(s, ["QS"])
    assert timeout_action(s, "b") == TrickAction.play("9D")
