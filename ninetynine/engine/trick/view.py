"""The observer: the only way trick-game data leaves toward a player or spectator.

``public_view`` is what everyone sees: each player's hand count, whether they have laid
their bid, their bid cards once face up (the declarer's at the announcement, every other
player's once their nine cards are played), the current and last trick, tricks taken,
scores and every scored deal. ``player_view`` adds the viewer's own hand (each card with
whether it may be played now and, if not, why), their own bid and their legal actions.
Never included: another player's hand or face-down bid, the deck order, the RNG state,
or the seed before the game is over.
"""

from __future__ import annotations

from typing import Any

from .cards import BID_SIZE, BID_VALUE, bid_tricks, card
from .game import deadline, game_result, led_suit, legal_actions, pending, play_refusal
from .state import TrickPhase, TrickState


def _bid(cards: tuple[str, ...]) -> dict[str, Any]:
    return {"cards": [card(c).to_dict() for c in cards], "tricks": bid_tricks(cards)}


def public_view(s: TrickState) -> dict[str, Any]:
    view: dict[str, Any] = {
        "game": "trick",
        "options": s.options.to_mapping(),
        "seq": s.seq,
        "phase": str(s.phase),
        "deal": s.deal,
        "dealer": s.dealer,
        "trumps": s.trumps,
        "current": s.current,
        "pending": list(pending(s)),
        "decisionStartedAt": s.decision_started_at,
        "deadline": None if s.finished else deadline(s),
        "declarer": s.declarer,
        "passed": list(s.passed),
        "players": [
            {
                "id": p,
                "name": s.name(p),
                "seat": i,
                "handCount": len(s.hands[p]),
                "bidPlaced": p in s.bids,
                "bid": _bid(s.bids[p]) if s.revealed[p] else None,
                "tricksTaken": s.tricks_won[p],
                "score": s.scores[p],
            }
            for i, p in enumerate(s.seats)
        ],
        "trick": {
            "number": s.trick_no,
            "leader": s.leader,
            "ledSuit": led_suit(s),
            "cards": [{"player": p, "card": card(c).to_dict()} for p, c in s.trick],
        },
        "lastTrick": [{"player": p, "card": card(c).to_dict()} for p, c in s.last_trick],
        "deals": [d.to_dict() for d in s.deals],
        "seedCommitment": s.seed_commitment,
    }
    if s.finished:
        view["seed"] = str(s.seed)
        view["result"] = game_result(s).to_dict()
    return view


def private_view(s: TrickState, viewer: str | None) -> dict[str, Any]:
    """What :func:`player_view` adds for ``viewer``; ``{"viewer": None}`` for a spectator or
    anyone not seated (they see what a spectator sees)."""
    if viewer is None or viewer not in s.hands:
        return {"viewer": None}
    view: dict[str, Any] = {"viewer": viewer}
    my_turn = viewer in pending(s)
    playing = s.phase is TrickPhase.PLAYING and my_turn
    hand = []
    for cid in s.hands[viewer]:
        why = play_refusal(s, viewer, cid) if playing else None
        hand.append({"card": card(cid).to_dict(), "playable": playing and why is None, "reason": why})
    view["hand"] = hand
    view["myBid"] = _bid(s.bids[viewer]) if viewer in s.bids else None
    view["myTurn"] = my_turn
    view["legalActions"] = [a.to_dict() for a in legal_actions(s, viewer)]
    if s.phase is TrickPhase.BIDDING and my_turn:
        view["bidChoice"] = {"count": BID_SIZE, "suitValues": dict(BID_VALUE)}
    return view


def player_view(s: TrickState, viewer: str | None) -> dict[str, Any]:
    return {**public_view(s), **private_view(s, viewer)}
