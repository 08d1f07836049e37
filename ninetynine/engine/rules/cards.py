"""Cards and decks (spec §3, §8.1).

A card is identified by a stable string id; the state carries only ids and this module
turns them back into cards. Decks are built from a rule set's :class:`.ruleset.Deck` in a
documented canonical order (then shuffled by the seeded RNG), so a deal can be re-run anywhere:

* numbered decks (kr-product): each card type's ``count`` cards, ids ``{id_prefix}-{i}``, in the
  order the rule set lists the types: ``N1-1..N1-7``, ... ``N8-1..N8-7``, ``N10-1..N10-21``,
  ``PM9-1..``, ``PM10-1..``, ``Z-1..`` (``specialCounts`` each), ``J-1, J-2``.
* French decks (classic and the North-American family): for deck ``d`` in 1..deckCount, suits
  S, H, D, C, ranks A 2 3 4 5 6 7 8 9 10 J Q K: id ``{rank}{suit}-{d}`` (e.g. ``AS-1``, ``10H-2``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .ruleset import CardType, Deck, DeckStyle, Kind

__all__ = ["RANKS", "SUITS", "Card", "Kind", "build_deck", "cards_of", "catalogue_of"]


@dataclass(frozen=True, slots=True)
class Card:
    id: str
    kind: Kind
    value: int  # the printed amount where there is one (add, plusMinus, minus), else 0
    face: str  # what is printed on the card, for display
    type: CardType | None = field(default=None, compare=False, repr=False)

    def to_dict(self) -> dict[str, object]:
        return {"id": self.id, "kind": str(self.kind), "value": self.value, "face": self.face}


SUITS = (("S", "♠"), ("H", "♥"), ("D", "♦"), ("C", "♣"))
RANKS = ("A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K")


def cards_of(deck: Deck, deck_count: int) -> tuple[Card, ...]:
    """The unshuffled deck in canonical order (cached)."""
    return _cached(deck, deck_count)[0]


def catalogue_of(deck: Deck, deck_count: int) -> dict[str, Card]:
    """Card id -> card for this deck (cached; do not mutate)."""
    return _cached(deck, deck_count)[1]


# Keyed by the deck's identity: hashing a deck hashes every card type and play, and this runs
# for every card the rules look at. Rule sets are built once and shared (presets.rules_for).
_CACHE: dict[tuple[int, int], tuple[Deck, tuple[Card, ...], dict[str, Card]]] = {}


def _cached(deck: Deck, deck_count: int) -> tuple[tuple[Card, ...], dict[str, Card]]:
    hit = _CACHE.get((id(deck), deck_count))
    if hit is None or hit[0] is not deck:
        if len(_CACHE) > 512:
            _CACHE.clear()
        cards = _build(deck, deck_count)
        hit = (deck, cards, {c.id: c for c in cards})
        _CACHE[(id(deck), deck_count)] = hit
    return hit[1], hit[2]


def _build(deck: Deck, deck_count: int) -> tuple[Card, ...]:
    cards: list[Card] = []
    if deck.style is DeckStyle.NUMBERED:
        for t in deck.cards:
            cards += [Card(f"{t.id_prefix}-{i}", t.kind, t.value, t.rank, t) for i in range(1, t.count + 1)]
        return tuple(cards)
    by_rank = {t.rank: t for t in deck.cards}
    for d in range(1, deck_count + 1):
        for suit, symbol in SUITS:
            for rank in RANKS:
                t = by_rank[rank]
                cards.append(Card(f"{rank}{suit}-{d}", t.kind, t.value, f"{rank}{symbol}", t))
    return tuple(cards)


def build_deck(mode: str, special_counts: int, deck_count: int) -> tuple[Card, ...]:
    """The unshuffled deck of a spec mode (kr-product or classic) with its default choices."""
    from .options import Options
    from .presets import rules_for

    return cards_of(rules_for(Options(mode=mode, special_counts=special_counts)).deck, deck_count)
