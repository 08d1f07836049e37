"""A bot for the trick-taking "99": pure and deterministic (the same state gives the same action).

It uses only what its player may know: its own hand and bid, the face-up bids, and the cards
already played (the won tricks and the trick on the table); never another hand or a face-down bid.

* **Bid.** Of the 220 ways to lay 3 of its 12 cards aside, the one whose bid value (♣ 3, ♥ 2,
  ♠ 1, ♦ 0 a card) is nearest the tricks the 9 cards kept should take (:func:`expected_tricks`:
  each card by its chance to win, from how many higher cards of its suit are out against it;
  trumps count more), preferring kept cards whose tricks are least in doubt
  (:data:`SPREAD_WEIGHT`). Ties: the lower cards laid aside.
* **Announce** only when the bid looks safe: that estimate within :data:`SAFE_MARGIN` of the bid
  *and* the hand's outcome hardly in doubt (:func:`trick_spread`, the variance of its tricks, at
  most :data:`SAFE_SPREAD`: mostly sure winners and sure losers). Declaring wins 30 more but
  loses 60 on a miss, so the bot rarely does. (Announcing ends at the first announcement.)
* **Play.** Still short of its bid: lead a card nobody can beat (a "master") or else its lowest;
  follow by winning as cheaply as is safe (the lowest winning card when it plays last, a master
  otherwise), else the lowest card. At or over its bid: duck, playing the highest card that still
  loses, discarding its highest card when void, leading its lowest; forced to win, it wins with
  its highest card of the suit to shed it.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import combinations

from .cards import BID_SIZE, BID_VALUE, RANKS, card
from .game import led_suit, legal_plays, pending, trick_winner
from .state import TrickAction, TrickPhase, TrickState

# Announce when the kept cards' expected tricks are within SAFE_MARGIN of the bid and their
# variance is at most SAFE_SPREAD (choose_bid makes the first small for most hands: it picks the
# nearest of 220 bids, so the spread is what tells a safe hand).
SAFE_MARGIN = 0.25
SAFE_SPREAD = 0.6
# A bid is chosen by its distance from the expected tricks plus this much of the kept cards'
# variance: a hand of sure winners and sure losers makes its contract more often (measured over
# the 300 matches of tests/engine/trick/test_bot.py: 34% -> 36% of its contracts made).
SPREAD_WEIGHT = 0.45
_TOP = len(RANKS) - 1
# Chance a card wins a trick by how many higher cards of its suit are out against it (0..4 or
# more), measured over the bot's own matches against random players (the length of the suit
# mattered little there).
_PLAIN = (0.95, 0.55, 0.35, 0.25, 0.1)
_TRUMP = (1.0, 0.85, 0.75, 0.6, 0.4)


def expected_tricks(cards: tuple[str, ...] | list[str], trumps: str | None) -> float:
    """A rough count of the tricks ``cards`` (a hand to play out) should take."""
    return _estimate(tuple(sorted(cards)), trumps)[0]


def trick_spread(cards: tuple[str, ...] | list[str], trumps: str | None) -> float:
    """How uncertain that count is: the variance if each card won on its own chance."""
    return _estimate(tuple(sorted(cards)), trumps)[1]


@lru_cache(maxsize=65536)
def _estimate(cards: tuple[str, ...], trumps: str | None) -> tuple[float, float]:
    by_suit: dict[str, list[int]] = {}
    for cid in cards:
        c = card(cid)
        by_suit.setdefault(c.suit, []).append(c.strength)
    total = spread = 0.0
    for suit, strengths in by_suit.items():
        table = _TRUMP if suit == trumps else _PLAIN
        for held_above, strength in enumerate(sorted(strengths, reverse=True)):
            chance = table[min(_TOP - strength - held_above, len(table) - 1)]
            total += chance
            spread += chance * (1 - chance)
    return total, spread


def choose_bid(hand: list[str], trumps: str | None) -> tuple[str, ...]:
    """The 3 cards to lay aside (see the module docstring)."""
    best: tuple[float, tuple[int, ...], tuple[str, ...]] | None = None
    for laid in combinations(sorted(hand, key=lambda c: (card(c).strength, c)), BID_SIZE):
        kept = [c for c in hand if c not in laid]
        value = sum(BID_VALUE[card(c).suit] for c in laid)
        miss = abs(expected_tricks(kept, trumps) - value) + SPREAD_WEIGHT * trick_spread(kept, trumps)
        key = (round(miss, 6), tuple(card(c).strength for c in laid), laid)
        if best is None or key < best:
            best = key
    assert best is not None
    return best[2]


def _known(s: TrickState, me: str) -> set[str]:
    """Cards whose place ``me`` knows: its hand and bid, face-up bids, every card played."""
    known = set(s.hands[me]) | set(s.bids.get(me, ()))
    for p in s.seats:
        known.update(s.won_cards[p])
        if s.revealed[p]:
            known.update(s.bids[p])
    known.update(c for _, c in s.trick)
    return known


def _is_master(cid: str, known: set[str]) -> bool:
    c = card(cid)
    return all(f"{rank}{c.suit}" in known for rank in RANKS[c.strength + 1 :])


def _low(cid: str, trumps: str | None) -> tuple[int, int, int]:
    c = card(cid)
    return (1 if c.suit == trumps else 0, c.strength, BID_VALUE[c.suit])


def _high(cid: str, trumps: str | None) -> tuple[int, int, int]:
    c = card(cid)
    return (c.strength, 0 if c.suit == trumps else 1, -BID_VALUE[c.suit])


def choose_play(s: TrickState, me: str) -> str:
    """The card ``me`` plays now (it must be ``me``'s turn to play)."""
    legal = legal_plays(s, me)
    trumps = s.trumps
    need = sum(BID_VALUE[card(c).suit] for c in s.bids[me]) - s.tricks_won[me]
    low = min(legal, key=lambda c: _low(c, trumps))
    if led_suit(s) is None:  # leading
        if need > 0:
            known = _known(s, me)
            masters = [c for c in legal if _is_master(c, known)]
            return max(masters, key=lambda c: _high(c, trumps)) if masters else low
        return low
    winning = [c for c in legal if trick_winner([*s.trick, (me, c)], trumps) == me]
    losing = [c for c in legal if c not in winning]
    last = len(s.trick) == len(s.seats) - 1
    if need > 0:
        if winning:
            cheapest = min(winning, key=lambda c: _low(c, trumps))
            if last:
                return cheapest
            known = _known(s, me)
            safe = [c for c in winning if _is_master(c, known)]
            if safe:
                return min(safe, key=lambda c: _low(c, trumps))
        return low
    if losing:
        return max(losing, key=lambda c: _high(c, trumps))
    return max(winning, key=lambda c: _high(c, trumps))


def bot_action(s: TrickState, me: str) -> TrickAction:
    """The bot's decision for ``me``, who must be among :func:`pending`."""
    if me not in pending(s):
        raise ValueError(f"{me!r} has no decision to make")
    if s.phase is TrickPhase.BIDDING:
        return TrickAction.bid(*choose_bid(s.hands[me], s.trumps))
    if s.phase is TrickPhase.ANNOUNCING:
        value = sum(BID_VALUE[card(c).suit] for c in s.bids[me])
        hand = s.hands[me]
        miss = abs(expected_tricks(hand, s.trumps) - value)
        safe = miss <= SAFE_MARGIN and trick_spread(hand, s.trumps) <= SAFE_SPREAD
        return TrickAction.announce() if safe else TrickAction.pass_()
    return TrickAction.play(choose_play(s, me))
