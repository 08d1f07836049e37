"""Build trick-game states for scenario tests, and drive a game with a policy."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping

from ninetynine.engine.rules.state import Event
from ninetynine.engine.trick import (
    TrickAction,
    TrickOptions,
    TrickPhase,
    TrickState,
    apply,
    legal_actions,
    setup,
)

SEATS = ("a", "b", "c")


def table(
    hands: dict[str, list[str]],
    *,
    bids: Mapping[str, tuple[str, ...]],
    dealer: str = "c",
    trumps: str | None = None,
    declarer: str | None = None,
    tricks_won: dict[str, int] | None = None,
    scores: dict[str, int] | None = None,
    options: TrickOptions | None = None,
) -> TrickState:
    """A deal in play with these hands and bids; ``dealer`` c puts a on lead."""
    s, _ = setup(SEATS, options, seed=1)
    s = s.clone()
    s.hands = {p: list(h) for p, h in hands.items()}
    s.bids = dict(bids)
    s.revealed = {p: p == declarer for p in SEATS}
    s.declarer = declarer
    s.dealer = dealer
    s.trumps = trumps
    s.phase = TrickPhase.PLAYING
    s.leader = s.current = s.left_of(dealer)
    s.trick_no = 10 - len(hands[s.leader])
    s.tricks_won = dict(tricks_won or {p: 0 for p in SEATS})
    s.scores = dict(scores or {p: 0 for p in SEATS})
    return s


def play_out(s: TrickState, cards: list[str], now_ms: int = 0) -> tuple[TrickState, list[Event]]:
    """Play ``cards`` in order, each by whoever's turn it is; all events concatenated."""
    events: list[Event] = []
    for c in cards:
        assert s.current is not None
        s, ev = apply(s, s.current, TrickAction.play(c), now_ms=now_ms)
        events += ev
    return s, events


Policy = Callable[[TrickState, str], TrickAction]


def random_policy(rng: random.Random, announce_chance: float = 0.2) -> Policy:
    def choose(s: TrickState, p: str) -> TrickAction:
        if s.phase is TrickPhase.BIDDING:
            return TrickAction.bid(*rng.sample(s.hands[p], 3))
        if s.phase is TrickPhase.ANNOUNCING:
            return TrickAction.announce() if rng.random() < announce_chance else TrickAction.pass_()
        return rng.choice(legal_actions(s, p))

    return choose
