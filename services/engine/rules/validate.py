"""Checks that a state received from outside describes a real game (engine contract).

The engine is stateless and trusts nothing it is sent: a state that breaks any of these
invariants is refused with ``INVALID_STATE`` instead of being computed on.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import KeysView
from typing import NoReturn

from .cards import catalogue
from .errors import Reason, RuleError
from .game import has_legal_play
from .options import MAX_PLAYERS, MIN_PLAYERS
from .rng import MASK64, seed_commitment
from .state import SUPPORTED_STATE_VERSIONS, GameState, Phase


def _bad(detail: str) -> RuleError:
    return RuleError(Reason.INVALID_STATE, detail=detail)


def validate_state(s: GameState) -> None:
    if s.state_version not in SUPPORTED_STATE_VERSIONS:
        raise _bad(f"unsupported stateVersion {s.state_version}")
    n = len(s.seats)
    if not MIN_PLAYERS <= n <= MAX_PLAYERS:
        raise _bad(f"{n} seats")
    if len(set(s.seats)) != n or not all(s.seats):
        raise _bad("duplicate or empty player id")
    seats = set(s.seats)
    for name, mapping in (
        ("hands", s.hands),
        ("alive", s.alive),
        ("lives", s.lives),
        ("onBoard", s.on_board),
        ("livesLost", s.lives_lost),
    ):
        if set(mapping) != seats:
            raise _bad(f"{name} does not match the seats")
    if s.deck_count != s.options.resolved_deck_count(n) and s.deck_count not in (1, 2):
        raise _bad(f"deckCount {s.deck_count}")
    if s.options.is_kr and s.deck_count != 1:
        raise _bad("kr-product uses one deck")
    cat = catalogue(s.options, s.deck_count)
    if not _holds_each_card_once(s, cat.keys()):
        _explain_bad_cards(s, cat.keys())
    if not 0 <= s.total <= 99:
        raise _bad(f"total {s.total} out of 0..99")
    if s.direction not in (1, -1):
        raise _bad(f"direction {s.direction}")
    if not 1 <= s.hand_size <= 10:
        raise _bad(f"handSize {s.hand_size}")
    if s.start_lives < 0 or s.start_lives > 5:
        raise _bad(f"lives {s.start_lives}")
    for p in s.seats:
        if not 0 <= s.lives[p] <= s.start_lives:
            raise _bad(f"lives of {p}")
        if s.on_board[p] and (s.lives[p] != 0 or not s.alive[p]):
            raise _bad(f"onBoard of {p}")
        if not s.alive[p] and s.hands[p]:
            raise _bad(f"eliminated {p} holds cards")
    order = s.elimination_order
    if len(set(order)) != len(order) or any(p not in seats or s.alive[p] for p in order):
        raise _bad("eliminationOrder")
    if {p for p in s.seats if not s.alive[p]} != set(order):
        raise _bad("eliminationOrder does not match the eliminated players")
    if set(s.eliminated_round) != set(order):
        raise _bad("eliminatedRound does not match the eliminated players")
    alive = sum(s.alive.values())
    if s.current not in seats or not s.alive[s.current]:
        raise _bad("current player is not a live player")
    if s.phase is Phase.PLAYING:
        if alive < 2:
            raise _bad("a game in play needs two live players")
        if not has_legal_play(s, s.current):
            raise _bad("current player has no legal play")
    elif alive != 1:
        raise _bad("a finished game has exactly one survivor")
    if s.round < 1 or s.seq < 0 or s.turn_started_at < 0:
        raise _bad("round, seq and turnStartedAt must be positive")
    if not (0 <= s.rng.state <= MASK64 and 0 <= s.rng.inc <= MASK64 and s.rng.inc & 1):
        raise _bad("rng")
    if not 0 <= s.seed <= MASK64 or seed_commitment(s.seed) != s.seed_commitment:
        raise _bad("seed does not match its commitment")


def _holds_each_card_once(s: GameState, deck: KeysView[str]) -> bool:
    """The fast check (runs on every request): every card of the deck exactly once."""
    seen = set(s.draw_pile)
    seen.update(s.discard)
    held = len(s.draw_pile) + len(s.discard)
    for p in s.seats:
        hand = s.hands[p]
        seen.update(hand)
        held += len(hand)
    return held == len(seen) == len(deck) and deck >= seen


def _explain_bad_cards(s: GameState, deck: KeysView[str]) -> NoReturn:
    """The slow path: raise naming the first duplicate, unknown or missing card."""
    everything: list[str] = list(s.draw_pile) + list(s.discard)
    for p in s.seats:
        everything += s.hands[p]
    counts = Counter(everything)
    dupes = [cid for cid, k in counts.items() if k > 1]
    if dupes:
        raise _bad(f"card {dupes[0]} appears twice")
    unknown = [cid for cid in counts if cid not in deck]
    if unknown:
        raise _bad(f"unknown card {unknown[0]!r}")
    if len(counts) != len(deck):
        raise _bad(f"{len(deck) - len(counts)} cards missing")
    raise _bad("the cards do not match the deck")  # not reached: the fast check found a fault above
