"""The trick-taking "99" (Parlett's Ninety-Nine, source 004 part I): a pure rules library.

A second game next to the adding game in :mod:`ninetynine.engine.rules`, written the same
way (state in, state and events out; no I/O; time only as ``now_ms``; one seeded PCG32
and the same seed commitment). Rules as implemented: docs/games/trick-taking.md.

Typical use::

    state, events = setup(["ann", "bob", "cho"], TrickOptions(), seed=7)
    for p in pending(state):
        state, events = apply(state, p, timeout_action(state, p), now_ms=...)
"""

from .cards import BID_VALUE, Card, bid_tricks, card, deck
from .errors import TrickError, TrickReason
from .game import (
    Standing,
    TrickResult,
    apply,
    check_action,
    deadline,
    game_result,
    legal_actions,
    legal_plays,
    pending,
    score_lines,
    setup,
    trick_winner,
)
from .options import TrickOptions
from .state import ActionKind, DealLine, DealRecord, TrickAction, TrickPhase, TrickState
from .timeout import timeout_action
from .view import player_view, private_view, public_view

__all__ = [
    "BID_VALUE",
    "ActionKind",
    "Card",
    "DealLine",
    "DealRecord",
    "Standing",
    "TrickAction",
    "TrickError",
    "TrickOptions",
    "TrickPhase",
    "TrickReason",
    "TrickResult",
    "TrickState",
    "apply",
    "bid_tricks",
    "card",
    "check_action",
    "deadline",
    "deck",
    "game_result",
    "legal_actions",
    "legal_plays",
    "pending",
    "player_view",
    "private_view",
    "public_view",
    "score_lines",
    "setup",
    "timeout_action",
    "trick_winner",
]
