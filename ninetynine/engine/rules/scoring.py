"""Game points scored in play and for the cards left in hand, in a game of rounds (``EndKind.ROUNDS``).

004 part III (Paranoia): a play that crosses 33/34, 66/67 or 99/100 scores the threshold's
``points`` (a Jack's or Queen's ``CardType.cross_points`` instead; a pair's ``Pair.cross_points``
or ``cross_take`` instead), and at a round's end every card left in a hand scores its
``RuleSet.hand_scores``. After ``End.target`` rounds the best score wins.

A score never goes below 0: a point that is not there is not taken (the protocol's scores are
unsigned, as in 002's game points), and every ``pointsScored`` / ``handScored`` event carries the
change actually made (``handScored``: what the cards count; the score takes what it can).
"""

from __future__ import annotations

from .cards import catalogue_of
from .ruleset import CardType, Pair, Threshold
from .state import Event, GameState


def add_points(s: GameState, player: str, points: int) -> int:
    """Add ``points`` to ``player``'s score, not below 0; return the change made."""
    before = s.score[player]
    s.score[player] = max(0, before + points)
    return s.score[player] - before


def score_crossing(
    s: GameState,
    player: str,
    t: Threshold,
    card: CardType | None,
    pair: Pair | None,
    events: list[Event],
) -> None:
    """What crossing ``t`` with ``card`` (or ``pair``) scores, as ``pointsScored`` events."""
    why: dict[str, object] = {"at": t.at, "by": player}
    if pair is not None and pair.cross_take:
        gained = 0
        for p in s.seats:
            if p == player or not s.alive[p]:
                continue
            taken = -add_points(s, p, -pair.cross_take)
            gained += taken
            events.append(Event("pointsScored", {"player": p, "points": -taken, "score": s.score[p], **why}))
        add_points(s, player, gained)
        events.append(
            Event("pointsScored", {"player": player, "points": gained, "score": s.score[player], **why})
        )
        return
    points = t.points
    if pair is not None and pair.cross_points is not None:
        points = pair.cross_points
    elif pair is None and card is not None and card.cross_points is not None:
        points = card.cross_points
    made = add_points(s, player, points)
    events.append(Event("pointsScored", {"player": player, "points": made, "score": s.score[player], **why}))


def score_hands(s: GameState, events: list[Event]) -> None:
    """The round is over: every player shows their hand and scores the cards in ``hand_scores``."""
    rules = s.rules
    if not rules.hand_scores:
        return
    cat = catalogue_of(rules.deck, s.deck_count)
    for p in s.seats:
        counted: list[str] = []
        points = 0
        for cid in s.hands[p]:
            card = cat[cid]
            assert card.type is not None
            value = rules.hand_score(card.type.rank, suit_of(cid))
            if value:
                counted.append(cid)
                points += value
        if counted:
            add_points(s, p, points)
            events.append(Event("handScored", {"player": p, "cards": counted, "points": points}))


def suit_of(card_id: str) -> str:
    """The suit letter (S, H, D, C) of a French card id ``{rank}{suit}-{deck}``; "" for others."""
    face = card_id.split("-", 1)[0]
    return face[-1] if face[-1:] in ("S", "H", "D", "C") else ""


def rounds(s: GameState) -> int:
    """The rounds the game lasts: ``End.target``, or one per seat (each player deals once) for 0."""
    return s.rules.end.target or len(s.seats)


def last_round(s: GameState) -> bool:
    """The round that just ended was the game's last."""
    return s.round >= rounds(s)
