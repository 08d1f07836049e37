"""The timeout policy: the move made for a player whose deadline passed.

Each decision has one, chosen to be deterministic, to use only what that player may see
(their own hand and the public table), and never to take a risk on their behalf:

* **bid** (``bidSeconds`` from the deal): lay aside the three lowest cards of the hand,
  lowest rank first, equal ranks by suit in bid-value order ♦ ♠ ♥ ♣ (so the cheaper suit
  goes first). Low cards are the ones least likely to win tricks, whatever they bid.
* **announce or pass** (``turnSeconds``): pass. Announcing risks -60 and shows the bid.
* **play** (``turnSeconds``): the lowest legal card, preferring a non-trump; equal ranks
  by suit in bid-value order. Following suit is forced by the legal set.
"""

from __future__ import annotations

from ..rules.errors import Reason
from .cards import BID_SIZE, BID_VALUE, card
from .errors import TrickError, TrickReason
from .game import legal_plays, pending
from .state import TrickAction, TrickPhase, TrickState


def _low_key(card_id: str, trumps: str | None) -> tuple[int, int, int]:
    c = card(card_id)
    return (1 if c.suit == trumps else 0, c.strength, BID_VALUE[c.suit])


def timeout_action(state: TrickState, player: str) -> TrickAction:
    """The automatic action for ``player``, who must be among :func:`pending`."""
    if state.phase is TrickPhase.FINISHED:
        raise TrickError(Reason.GAME_FINISHED)
    if player not in pending(state):
        raise TrickError(TrickReason.WRONG_PHASE, action="timeout", phase=state.phase)
    if state.phase is TrickPhase.BIDDING:
        hand = sorted(state.hands[player], key=lambda c: _low_key(c, None))
        return TrickAction.bid(*hand[:BID_SIZE])
    if state.phase is TrickPhase.ANNOUNCING:
        return TrickAction.pass_()
    return TrickAction.play(min(legal_plays(state, player), key=lambda c: _low_key(c, state.trumps)))
