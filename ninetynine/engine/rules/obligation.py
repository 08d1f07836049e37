"""003's Play 2 (the 1980 Double Play): the next player owes two cards, played one, draw, the other.

The debt is data on the state: :attr:`GameState.obligation` is what the player to move still owes
this turn (0: an ordinary turn, 2: two cards, 1: the second of them). A card played owing two

* whose play :meth:`~.ruleset.Play.passes_for` the players left (2022: a Reverse or a Play 2;
  1980: a Reverse or a Hold) is the turn's only card, and the next player (after its turn
  effect) owes the two instead;
* else is the first of the two: the player draws as usual and moves again, owing one. A play
  marked ``not_first_of_two`` (1980: the Double Play) is refused.

Owing one, the play is an ordinary one: its turn effect applies, and a Play 2 makes the next
player owe two. Passing replaces the debt, it never adds to it ("never more than two cards").
A loss clears it: the next player "is then not forced" (see :func:`clear`).
"""

from __future__ import annotations

from collections.abc import Callable

from .errors import Reason
from .ruleset import Play
from .state import Event, GameState

OWED = 2  # 003 '카드 2장 플레이': two cards


def refusal(state: GameState, play: Play) -> Reason | None:
    """Why ``play`` may not be made now because of the debt (None: it may)."""
    if state.obligation == OWED and play.not_first_of_two:
        return Reason.NOT_FIRST_OF_TWO
    return None


def owe(s: GameState, by: str, events: list[Event]) -> None:
    """``s.current`` now owes two cards, because of ``by``'s play."""
    s.obligation = OWED
    events.append(Event("obligationPassed", {"player": s.current, "by": by, "cards": OWED}))


def next_turn(
    s: GameState, player: str, play: Play, events: list[Event], next_alive: Callable[[GameState, str], str]
) -> bool:
    """After ``player``'s play (drawn, direction already changed): set who moves while a debt runs.

    True when the debt decided it; False for an ordinary turn end (the debt, if any, was the
    last card and is cleared), which the caller resolves with the play's turn effect.
    """
    if s.obligation != OWED:
        s.obligation = 0
        return False
    if play.passes_for(sum(s.alive.values())):
        s.current = next_alive(s, player)
        owe(s, player, events)
    else:
        s.obligation = 1
        s.current = player
        events.append(Event("secondCardOwed", {"player": player}))
    return True


def clear(s: GameState) -> None:
    """A loss or a new deal ends the debt: nobody is forced to play two after it."""
    s.obligation = 0
