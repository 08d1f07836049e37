"""003's 2022 exchange: a player holding four ONO 99 cards may discard them for four new cards.

The rule set says which rank and how many (``RuleSet.discard_rank``, ``discard_count``); the
action is :attr:`Action.discard` (its ``card_id`` the first of them). It is not a play: the
total and the history do not change, and the player then plays as usual (the exchange does not
use the turn: docs/rule-sets.md, ``ono99-2022``). The discarded cards are shown to everyone
(``cardsDiscarded``): they lie face up on the pile, like any card played.
"""

from __future__ import annotations

from .cards import catalogue_of
from .errors import Reason, RuleError
from .state import Action, Audience, Event, GameState, Phase


def _matching(state: GameState, player: str) -> list[str]:
    rules = state.rules
    cat = catalogue_of(rules.deck, state.deck_count)
    return [cid for cid in state.hands[player] if cat[cid].type.rank == rules.discard_rank]  # type: ignore[union-attr]


def discard_action(state: GameState, player: str) -> Action | None:
    """The exchange ``player`` may make now (None: they may not)."""
    count = state.rules.discard_count
    if not count or state.phase is Phase.FINISHED or state.current != player or not state.alive[player]:
        return None
    ids = _matching(state, player)
    if len(ids) < count:
        return None
    chosen = tuple(ids[:count])
    return Action(chosen[0], discard=chosen)


def check(state: GameState, player: str, action: Action) -> None:
    """Raise :class:`RuleError` unless ``action`` is an exchange the player to move may make now
    (the caller has checked that ``player`` is that player)."""
    for cid in action.discard:
        if cid not in state.hands[player]:
            raise RuleError(Reason.CARD_NOT_IN_HAND, cardId=cid)
    rules = state.rules
    chosen = set(action.discard)
    plain = (action.sign, action.ace_value, action.joker_value, action.dir) == (None, None, None, None)
    if (
        not rules.discard_count
        or len(chosen) != len(action.discard)
        or len(chosen) != rules.discard_count
        or not chosen <= set(_matching(state, player))
        or action.card_id != action.discard[0]
        or not plain
    ):
        raise RuleError(Reason.DISCARD_NOT_ALLOWED, rank=rules.discard_rank, count=rules.discard_count)


def give_up(s: GameState, player: str, cards: tuple[str, ...], events: list[Event]) -> None:
    """Move ``cards`` from ``player``'s hand onto the discard pile, face up."""
    cat = catalogue_of(s.rules.deck, s.deck_count)
    for cid in cards:
        s.hands[player].remove(cid)
        s.discard.append(cid)
    shown = [cat[cid].to_dict() for cid in cards]
    events.append(Event("cardsDiscarded", {"player": player, "cards": shown}, Audience.ALL))
