"""The 36-card deck of the trick-taking game and the bid code of its suits.

Card ids are ``{rank}{suit}`` (``6S`` .. ``AS``, ``10H``); the canonical order, used
before every shuffle so that a deal can be re-run anywhere from the seed, is suit by
suit in :data:`ninetynine.engine.rules.cards.SUITS` order (S, H, D, C), ranks low to
high within each suit.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from ..rules.cards import SUITS

RANKS = ("6", "7", "8", "9", "10", "J", "Q", "K", "A")  # low to high
SUIT_SYMBOL = dict(SUITS)

# Tricks each bid card stands for, by suit (♣ 3, ♥ 2, ♠ 1, ♦ 0).
BID_VALUE = {"C": 3, "H": 2, "S": 1, "D": 0}

HAND_SIZE = 12
BID_SIZE = 3
TRICKS_PER_DEAL = HAND_SIZE - BID_SIZE


@dataclass(frozen=True, slots=True)
class Card:
    id: str
    suit: str  # S | H | D | C
    rank: str
    strength: int  # index in RANKS: higher wins within a suit

    @property
    def face(self) -> str:
        return f"{self.rank}{SUIT_SYMBOL[self.suit]}"

    def to_dict(self) -> dict[str, object]:
        return {"id": self.id, "suit": self.suit, "rank": self.rank, "face": self.face}


@lru_cache(maxsize=1)
def deck() -> tuple[Card, ...]:
    """The unshuffled deck in canonical order."""
    return tuple(Card(f"{r}{s}", s, r, i) for s, _ in SUITS for i, r in enumerate(RANKS))


@lru_cache(maxsize=1)
def _catalogue() -> dict[str, Card]:
    return {c.id: c for c in deck()}


def card(card_id: str) -> Card:
    """The card with this id; ``KeyError`` for an id that is not in the deck."""
    return _catalogue()[card_id]


def is_card(card_id: str) -> bool:
    return card_id in _catalogue()


def bid_tricks(card_ids: tuple[str, ...] | list[str]) -> int:
    """The number of tricks a set of bid cards undertakes."""
    return sum(BID_VALUE[card(c).suit] for c in card_ids)
