"""Pairs: two cards of one rank played together as one play (``RuleSet.pairs``, 004 part III).

An action names the first card in ``card_id`` and the second in ``pair_card_id``; the pair's
``plays`` are chosen like a card's (``dir`` for 3-3, 6-6 and 9-9). The player then draws as many
cards as they played. The views list pair plays with the legal plays only (a hand entry's choices
stay the card's own).
"""

from __future__ import annotations

from itertools import combinations

from . import game as g
from .cards import Card, catalogue_of
from .errors import Reason, RuleError
from .ruleset import Effect, Pair, Play
from .state import Action, GameState


def _action(first: str, second: str, play: Play) -> Action:
    a = g._action_for(first, play)
    return Action(a.card_id, a.sign, a.ace_value, a.joker_value, a.dir, pair_card_id=second)


def pair_choices(s: GameState, player: str) -> list[tuple[Pair, Play, g.Choice]]:
    """Every way ``player`` can play a pair now, legal or not, hand order (first card first)."""
    rules = s.rules
    if not rules.pairs:
        return []
    cat = catalogue_of(rules.deck, s.deck_count)
    out: list[tuple[Pair, Play, g.Choice]] = []
    hand = s.hands[player]
    for i, j in combinations(range(len(hand)), 2):
        a, b = cat[hand[i]], cat[hand[j]]
        assert a.type is not None and b.type is not None
        if a.type.rank != b.type.rank:
            continue
        pair = rules.pair(a.type.rank)
        if pair is None:
            continue
        for play in pair.plays:
            if not g.applies(play, s.total):
                continue
            result, why = g._outcome(rules, s.total, play)
            out.append((pair, play, g.Choice(_action(a.id, b.id, play), result, why)))
    return out


def resolve_pair(
    s: GameState, player: str, action: Action
) -> tuple[list[Card], int, Effect, dict[str, object], Pair]:
    """Validate a pair play: (its two cards, the new total, the turn effect, the choice, the pair)."""
    assert action.pair_card_id is not None
    first, second = action.card_id, action.pair_card_id
    hand = s.hands[player]
    for cid in (first, second):
        if cid not in hand:
            raise RuleError(Reason.CARD_NOT_IN_HAND, cardId=cid)
    a, b = g.card_of(s, first), g.card_of(s, second)
    assert a.type is not None and b.type is not None
    pair = s.rules.pair(a.type.rank)
    if first == second or a.type.rank != b.type.rank or pair is None:
        raise RuleError(Reason.NOT_A_PAIR, cardId=first, pairCardId=second)
    plays = [p for p in pair.plays if g.applies(p, s.total)]
    fields = {p.select[0] for p in plays if p.select is not None}
    if action.dir is not None and "dir" not in fields:
        raise RuleError(Reason.DIR_NOT_ALLOWED, cardId=first)
    for field in ("sign", "aceValue", "jokerValue"):
        if getattr(action, g._SELECT_ATTR[field]) is not None:
            raise RuleError(Reason.CHOICE_NOT_ALLOWED, cardId=first, field=field)
    choice: dict[str, object] = {}
    play = plays[0]
    if fields:
        chosen = next((p for p in plays if p.select is not None and p.select[1] == action.dir), None)
        if chosen is None:
            raise RuleError(Reason.DIR_REQUIRED, cardId=first)
        play, choice = chosen, {"dir": action.dir}
    result, why = g._outcome(s.rules, s.total, play)
    if why is not None:
        raise RuleError(why, cardId=first, total=s.total, result=result)
    choice["pairCardId"] = second
    return [a, b], result, play.effect_for(sum(s.alive.values())), choice, pair
