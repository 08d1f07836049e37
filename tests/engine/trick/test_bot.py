"""The trick game's bot: deterministic, blind to what its player may not see, and better than
random play (issue 19: "beats a random player over 300 matches")."""

from __future__ import annotations

import random

from ninetynine.engine.trick import (
    TrickAction,
    TrickOptions,
    TrickPhase,
    TrickState,
    apply,
    legal_actions,
    pending,
)
from ninetynine.engine.trick import setup as trick_setup
from ninetynine.engine.trick.bot import bot_action, choose_bid, expected_tricks

from .builders import SEATS

MATCHES = 300


def random_player(rng: random.Random, s: TrickState, p: str) -> TrickAction:
    """Uniformly random: any 3 cards as the bid, any legal action (announce or pass alike)."""
    if s.phase is TrickPhase.BIDDING:
        return TrickAction.bid(*rng.sample(s.hands[p], 3))
    return rng.choice(legal_actions(s, p))


def play_match(seed: int, bot_seat: str, trumps: str) -> TrickState:
    rng = random.Random(seed)
    s, _ = trick_setup(SEATS, TrickOptions(trumps=trumps), seed=seed)
    while not s.finished:
        p = pending(s)[0]
        s, _ = apply(s, p, bot_action(s, p) if p == bot_seat else random_player(rng, s, p))
    return s


def test_the_bot_beats_random_players_over_300_matches() -> None:
    """One bot against two random players, its seat rotating, trumps on in half the matches:
    it wins (alone or sharing) far more than the third a random player would."""
    wins = sum(bot in play_match(m, bot, "byContracts" if m % 2 else "none").winners for m, bot in _seats())
    assert wins / MATCHES >= 0.6, wins


def _seats() -> list[tuple[int, str]]:
    return [(m, SEATS[m % 3]) for m in range(MATCHES)]


def test_the_bot_is_deterministic() -> None:
    assert play_match(17, "b", "none") == play_match(17, "b", "none")


def _hide_differently(s: TrickState, rng: random.Random) -> TrickState:
    """``s`` with b's and c's hands and face-down bids dealt again among themselves."""
    other = s.clone()
    places = [("hand", p) for p in ("b", "c")] + [
        ("bid", p) for p in ("b", "c") if p in s.bids and not s.revealed[p]
    ]
    pool = [c for kind, p in places for c in (s.hands[p] if kind == "hand" else s.bids[p])]
    rng.shuffle(pool)
    for kind, p in places:
        size = len(s.hands[p]) if kind == "hand" else len(s.bids[p])
        taken, pool = pool[:size], pool[size:]
        if kind == "hand":
            other.hands[p] = taken
        else:
            other.bids[p] = tuple(taken)
    return other


def test_the_bot_ignores_what_it_may_not_see() -> None:
    """Dealing the other players' hands and face-down bids again between them changes nothing."""
    checked = 0
    for seed in range(12):
        rng = random.Random(seed)
        s, _ = trick_setup(SEATS, TrickOptions(max_deals=9), seed=seed)
        while not s.finished:
            p = rng.choice(pending(s))
            if p == "a":
                assert bot_action(_hide_differently(s, rng), "a") == bot_action(s, "a")
                checked += 1
            s, _ = apply(s, p, bot_action(s, p) if p == "a" else random_player(rng, s, p))
    assert checked > 500


def test_the_bid_matches_the_strength_of_the_cards_kept() -> None:
    """Strong cards kept, a high bid; weak cards kept, a low one."""
    strong = ["AS", "KS", "QS", "AH", "KH", "AD", "KD", "AC", "KC", "6C", "7C", "8C"]
    weak = ["6S", "7S", "8S", "6H", "7H", "8H", "6D", "7D", "9D", "6C", "7C", "10D"]
    strong_bid = choose_bid(strong, None)
    weak_bid = choose_bid(weak, None)
    value = {"C": 3, "H": 2, "S": 1, "D": 0}
    assert sum(value[c[-1]] for c in strong_bid) >= 6
    assert sum(value[c[-1]] for c in weak_bid) <= 1
    kept = [c for c in strong if c not in strong_bid]
    assert abs(expected_tricks(kept, None) - sum(value[c[-1]] for c in strong_bid)) < 1
