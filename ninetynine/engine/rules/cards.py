"""Cards and decks (spec §3, §8.1).

A card is identified by a stable string id; the state carries only ids and this module
turns them back into cards. Decks are built in a documented canonical order (then
shuffled by the seeded RNG), so a deal can be re-run anywhere:

* kr-product: ``N1-1..N1-7``, ... ``N8-1..N8-7``, ``N10-1..N10-21``, ``PM9-1..``, ``PM10-1..``,
  ``Z-1..`` (``specialCounts`` each), ``J-1, J-2``.
* classic: for deck ``d`` in 1..deckCount, suits S, H, D, C, ranks A 2 3 4 5 6 7 8 9 10 J Q K:
  id ``{rank}{suit}-{d}`` (e.g. ``AS-1``, ``10H-2``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache

from .options import Options


class Kind(StrEnum):
    ADD = "add"  # kr 1..8, 10 / classic 2,3,5,6,7,8, J, Q
    PLUS_MINUS = "plusMinus"  # kr ±9, ±10
    REVERSE = "reverse"  # classic 4
    ZERO = "zero"  # kr 0
    HOLD = "hold"  # classic 9
    MINUS = "minus"  # classic 10
    ACE = "ace"  # classic A
    TO99 = "to99"  # classic K
    JOKER = "joker"  # kr joker


# Timeout tie-break classes (spec §8.5): no change -> number cards -> ± cards -> K/joker.
# The ace is a number card with a choice; classic 10 subtracts like a ± card.
TIMEOUT_CLASS: dict[Kind, int] = {
    Kind.ZERO: 0,
    Kind.REVERSE: 0,
    Kind.HOLD: 0,
    Kind.ADD: 1,
    Kind.ACE: 1,
    Kind.PLUS_MINUS: 2,
    Kind.MINUS: 2,
    Kind.TO99: 3,
    Kind.JOKER: 3,
}


@dataclass(frozen=True, slots=True)
class Card:
    id: str
    kind: Kind
    value: int  # the printed amount where there is one (add, plusMinus, minus), else 0
    face: str  # what is printed on the card, for display

    def to_dict(self) -> dict[str, object]:
        return {"id": self.id, "kind": str(self.kind), "value": self.value, "face": self.face}


SUITS = (("S", "♠"), ("H", "♥"), ("D", "♦"), ("C", "♣"))
RANKS = ("A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K")


def _classic_card(rank: str, suit: str, symbol: str, deck: int) -> Card:
    cid = f"{rank}{suit}-{deck}"
    face = f"{rank}{symbol}"
    if rank == "A":
        return Card(cid, Kind.ACE, 0, face)
    if rank == "4":
        return Card(cid, Kind.REVERSE, 0, face)
    if rank == "9":
        return Card(cid, Kind.HOLD, 0, face)
    if rank == "10":
        return Card(cid, Kind.MINUS, 10, face)
    if rank == "K":
        return Card(cid, Kind.TO99, 0, face)
    if rank in ("J", "Q"):
        return Card(cid, Kind.ADD, 10, face)
    return Card(cid, Kind.ADD, int(rank), face)


@lru_cache(maxsize=64)
def build_deck(mode: str, special_counts: int, deck_count: int) -> tuple[Card, ...]:
    """The unshuffled deck in canonical order."""
    cards: list[Card] = []
    if mode == "kr-product":
        for v in range(1, 9):
            cards += [Card(f"N{v}-{i}", Kind.ADD, v, str(v)) for i in range(1, 8)]
        cards += [Card(f"N10-{i}", Kind.ADD, 10, "10") for i in range(1, 22)]
        cards += [Card(f"PM9-{i}", Kind.PLUS_MINUS, 9, "±9") for i in range(1, special_counts + 1)]
        cards += [Card(f"PM10-{i}", Kind.PLUS_MINUS, 10, "±10") for i in range(1, special_counts + 1)]
        cards += [Card(f"Z-{i}", Kind.ZERO, 0, "0") for i in range(1, special_counts + 1)]
        cards += [Card(f"J-{i}", Kind.JOKER, 0, "JOKER") for i in range(1, 3)]
    else:
        for deck in range(1, deck_count + 1):
            for suit, symbol in SUITS:
                cards += [_classic_card(rank, suit, symbol, deck) for rank in RANKS]
    return tuple(cards)


@lru_cache(maxsize=64)
def _catalogue(mode: str, special_counts: int, deck_count: int) -> dict[str, Card]:
    return {c.id: c for c in build_deck(mode, special_counts, deck_count)}


def deck_for(options: Options, deck_count: int) -> tuple[Card, ...]:
    return build_deck(options.mode, options.special_counts, deck_count)


def catalogue(options: Options, deck_count: int) -> dict[str, Card]:
    """Card id -> card for this game's deck (cached; do not mutate)."""
    return _catalogue(options.mode, options.special_counts, deck_count)
