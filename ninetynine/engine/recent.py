"""The game states this engine answered with lately, kept decoded and keyed by their encoding.

The engine is stateless: every request carries its game's state. But the state a caller sends is,
move after move, the one the engine answered the previous move with (the session stores it and
sends its bytes back). Decoding and checking it again costs a third of ``Apply``'s own work
(``python -m bench engine_grpc``, the stage breakdown), so the states the rules produced are kept
here, by the bytes they went out as. A request whose state is byte for byte one of them reuses the
decoded state; anything else, a state from another engine replica or one a caller wrote, is
decoded and checked as before.

This is a pure memo: the rules never change a state they are given (they work on a
:meth:`~ninetynine.engine.rules.GameState.clone`), and decoding a state's encoding gives back an
equal state (``tests/engine/test_recent_states.py``), so a hit answers exactly as a miss would.
The key is the whole encoding, never a digest or the seq: a state that differs in any byte is
decoded.
"""

from __future__ import annotations

from collections import OrderedDict

from ninetynine.engine.rules import GameState

__all__ = ["RECENT_STATES", "RecentStates"]

# One entry per room that moved lately: a few thousand rooms, at about 10 KB each.
RECENT_STATES = 4096


class RecentStates:
    """At most ``size`` decoded states by their serialized ``State``, least recently used out first."""

    def __init__(self, size: int = RECENT_STATES) -> None:
        self.size = size
        self._states: OrderedDict[bytes, GameState] = OrderedDict()

    def get(self, wire: bytes) -> GameState | None:
        """The state that went out as ``wire``, if it is still here."""
        state = self._states.get(wire)
        if state is not None:
            self._states.move_to_end(wire)
        return state

    def moved(self, before: bytes | None, wire: bytes, state: GameState) -> None:
        """A move took the game from the state sent as ``before`` to ``state``, sent as ``wire``.

        The state before is let go: its room's next request carries the new one. So the memo holds
        about one state per room, and a refused move (which answers no state) keeps it.
        """
        if before is not None:
            self._states.pop(before, None)
        if self.size <= 0:
            return
        self._states[wire] = state
        if len(self._states) > self.size:
            self._states.popitem(last=False)

    def __len__(self) -> int:
        return len(self._states)
