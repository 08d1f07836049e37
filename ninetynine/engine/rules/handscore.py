"""Points counted from the cards left in a hand (003's 1980 points version), and its rounds.

A rule set with ``hand_scores`` plays in rounds: a player who cannot play is out of the round, not
of the game; their hand is counted at once (what they hold then is what they would hold at the
round's end: they play no more) plus ``round_out_points``, and goes face down to the pile. When one
player is left in the round, their hand is counted too and a new round is dealt. Each count is a
public ``handScored`` event (the cards are laid down face up).

The end is ``End.target``: with ``End.out_at_target`` a player whose score reaches it is out of the
game and the last one left wins (if the last ones all reach it in the same round, the lowest score
among them wins); without, the game ends at the end of the round in which a score reaches it, and
the lowest score wins (``End.highest_wins`` off).
"""

from __future__ import annotations

from .cards import catalogue_of
from .ruleset import RuleSet
from .state import Event, GameState


def points_of(rules: RuleSet, rank: str, suit: str = "") -> int:
    """What one card of ``rank`` left in a hand scores (0 when the rule set lists no score for it)."""
    for h in rules.hand_scores:
        if h.rank == rank and (not h.suit or h.suit == suit):
            return h.points
    return 0


def most_per_round(rules: RuleSet) -> int:
    """The most one player can score in one round: a full hand of the dearest card, out of the round."""
    dearest = max((h.points for h in rules.hand_scores), default=0)
    return rules.hand.size * dearest + rules.round_out_points


def count(s: GameState, player: str, events: list[Event], *, out: bool) -> int:
    """Add ``player``'s hand (and, ``out`` of the round, ``round_out_points``) to their score."""
    cat = catalogue_of(s.rules.deck, s.deck_count)
    cards = list(s.hands[player])
    points = 0
    for cid in cards:
        t = cat[cid].type
        assert t is not None
        points += points_of(s.rules, t.rank)
    if out:
        points += s.rules.round_out_points
    s.score[player] += points
    events.append(Event("handScored", {"player": player, "cards": cards, "points": points}))
    return points


def still_in(s: GameState) -> list[str]:
    """At a round's end: the players who play on (seat order).

    Without ``out_at_target``, everyone. With it, the round's players under the target; if none
    is, all the round's players (the game then ends on their scores).
    """
    end = s.rules.end
    if not end.out_at_target:
        return list(s.seats)
    this_round = [p for p in s.seats if s.alive[p] or s.eliminated_round.get(p) == s.round]
    return [p for p in this_round if s.score[p] < end.target] or this_round


def game_over(s: GameState, in_game: list[str]) -> bool:
    """Whether the round just scored ends the game (``in_game``: :func:`still_in`)."""
    target = s.rules.end.target
    if s.rules.end.out_at_target:
        return len(in_game) <= 1 or all(s.score[p] >= target for p in in_game)
    return max(s.score.values()) >= target
