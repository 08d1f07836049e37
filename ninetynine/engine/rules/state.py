"""The game state (spec §8.1), actions (§8.2) and events, as plain Python values.

The state carries card ids only; :mod:`.cards` maps them back to cards. It is never
mutated in place by the rules: :func:`GameState.clone` copies the containers the rules
change, and ``apply`` works on the copy and returns it.

Conventions written down for other implementations:

* ``draw_pile[-1]`` is the top of the draw pile (cards are drawn with ``pop()``).
* ``direction`` is ``1`` (clockwise, seat order) or ``-1``.
* Times are integer milliseconds since the Unix epoch, supplied by the caller.

State version 1 (games saved before handSize/startTotal/zero existed) looks like version
2 with three differences the rules honour: ``hand_size`` is whatever was dealt (the
``handSize`` option is ignored), every new round (lives mode or ``reset``) starts from 0
whatever ``startTotal`` says, and a 0 card always reverses the direction (``dir`` must be
absent). A finished version-1 game cannot be replayed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from .options import Options
from .presets import rules_for
from .rng import RngState
from .ruleset import RuleSet

CURRENT_STATE_VERSION = 2
SUPPORTED_STATE_VERSIONS = (1, 2)
HISTORY_LENGTH = 10


class Phase(StrEnum):
    PLAYING = "playing"
    FINISHED = "finished"
    # Every player owes one card to pass to their neighbour at once (``CardType.exchange``);
    # ``Action.card_id`` names it. The exchange resolves when the last player has chosen.
    EXCHANGE = "exchange"


@dataclass(frozen=True, slots=True)
class Action:
    """The one player action, ``play`` (§8.2). Unused choice fields stay ``None``.

    ``discard`` (003's 2022 ONO 99 exchange, :mod:`.discard`): the cards given up for as many new
    ones instead of a play; ``card_id`` is then the first of them.
    """

    card_id: str
    sign: str | None = None  # "+" | "-"
    ace_value: int | None = None  # 1 | aceHigh
    joker_value: int | None = None
    dir: str | None = None  # "keep" | "reverse"
    discard: tuple[str, ...] = ()
    pair_card_id: str | None = None  # the second card of a pair (``RuleSet.pairs``)

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"cardId": self.card_id}
        if self.sign is not None:
            out["sign"] = self.sign
        if self.ace_value is not None:
            out["aceValue"] = self.ace_value
        if self.joker_value is not None:
            out["jokerValue"] = self.joker_value
        if self.dir is not None:
            out["dir"] = self.dir
        if self.discard:
            out["discard"] = list(self.discard)
        if self.pair_card_id is not None:
            out["pairCardId"] = self.pair_card_id
        return out


@dataclass(frozen=True, slots=True)
class PlayRecord:
    """One entry of the public play history (recent cards and the totals they made)."""

    player: str
    card_id: str
    face: str
    before: int
    total: int
    choice: dict[str, object]

    def to_dict(self) -> dict[str, object]:
        return {
            "player": self.player,
            "cardId": self.card_id,
            "face": self.face,
            "before": self.before,
            "total": self.total,
            "choice": dict(self.choice),
        }


class Audience(StrEnum):
    ALL = "all"
    ONLY = "only"  # only ``Event.player`` sees it
    EXCEPT = "except"  # everyone but ``Event.player`` (the redacted twin of an ONLY event)


@dataclass(frozen=True, slots=True)
class Event:
    """Something that happened, in order. ``data`` keys are camelCase and JSON-friendly."""

    type: str
    data: dict[str, Any]
    audience: Audience = Audience.ALL
    player: str | None = None  # the player an ONLY/EXCEPT audience refers to

    def visible_to(self, viewer: str | None) -> bool:
        """``viewer=None`` is a spectator."""
        if self.audience is Audience.ALL:
            return True
        if self.audience is Audience.ONLY:
            return viewer is not None and viewer == self.player
        return viewer != self.player

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, **self.data}


@dataclass(slots=True)
class GameState:
    state_version: int
    options: Options
    seats: tuple[str, ...]
    names: dict[str, str]
    hand_size: int  # as dealt (resolved handSize)
    deck_count: int
    start_lives: int  # resolved lives
    hands: dict[str, list[str]]
    draw_pile: list[str]
    discard: list[str]
    total: int
    direction: int
    current: str
    alive: dict[str, bool]
    lives: dict[str, int]
    on_board: dict[str, bool]
    lives_lost: dict[str, int]
    eliminated_round: dict[str, int]
    elimination_order: list[str]
    round: int
    phase: Phase
    turn_started_at: int
    seq: int
    rng: RngState
    seed: int
    seed_commitment: str
    history: list[PlayRecord] = field(default_factory=list)
    # A preset played instead of the rule set ``options`` describe (None: kr-product or classic).
    # Held by the library only: the protobuf State carries kr-product and classic games.
    preset: RuleSet | None = None
    round_starter: str = ""  # who started this round (the deal rotates from it)
    # Game points (``RuleSet.points``): each player's running score; empty in other games.
    score: dict[str, int] = field(default_factory=dict)
    # Turns each player has played, counted up to ``RuleSet.locked_turns()``; empty without locked cards.
    turns_taken: dict[str, int] = field(default_factory=dict)
    special_end: str = ""  # the rank of the special hand that ended the game (held by ``current``)
    # Cards ``current`` still owes this turn (003's Play 2, :mod:`.obligation`): 0, 2 or 1.
    obligation: int = 0
    # ``Phase.EXCHANGE``: the card each player has chosen to pass ("" not yet); empty otherwise.
    passing: dict[str, str] = field(default_factory=dict)
    # ``Phase.EXCHANGE``: who played the card that started it ("" otherwise); ``current`` is
    # then the first player from them in seat order who still owes a card.
    exchange_by: str = ""
    # ``Phase.EXCHANGE``: the play that started it ended the round (the round ends once it resolves).
    exchange_ends_round: bool = False

    def clone(self) -> GameState:
        """A copy whose containers can be changed without touching ``self``.

        Runs on every apply, so it fills the slots directly: a 32-keyword ``__init__``
        call costs twice as much. Every field must be listed here (a forgotten one
        raises AttributeError on first use).
        """
        c: GameState = object.__new__(GameState)
        c.state_version = self.state_version
        c.options = self.options
        c.seats = self.seats
        c.names = self.names
        c.hand_size = self.hand_size
        c.deck_count = self.deck_count
        c.start_lives = self.start_lives
        c.hands = {p: h[:] for p, h in self.hands.items()}
        c.draw_pile = self.draw_pile[:]
        c.discard = self.discard[:]
        c.total = self.total
        c.direction = self.direction
        c.current = self.current
        c.alive = self.alive.copy()
        c.lives = self.lives.copy()
        c.on_board = self.on_board.copy()
        c.lives_lost = self.lives_lost.copy()
        c.eliminated_round = self.eliminated_round.copy()
        c.elimination_order = self.elimination_order[:]
        c.round = self.round
        c.phase = self.phase
        c.turn_started_at = self.turn_started_at
        c.seq = self.seq
        c.rng = self.rng
        c.seed = self.seed
        c.seed_commitment = self.seed_commitment
        c.history = self.history[:]
        c.preset = self.preset
        c.round_starter = self.round_starter
        c.score = self.score.copy()
        c.turns_taken = self.turns_taken.copy()
        c.special_end = self.special_end
        c.obligation = self.obligation
        c.passing = self.passing.copy()
        c.exchange_by = self.exchange_by
        c.exchange_ends_round = self.exchange_ends_round
        return c

    @property
    def rules(self) -> RuleSet:
        """The rule set this game plays."""
        return self.preset or rules_for(self.options, self.state_version)

    @property
    def finished(self) -> bool:
        return self.phase is Phase.FINISHED

    def alive_players(self) -> list[str]:
        return [p for p in self.seats if self.alive[p]]

    def name(self, player: str) -> str:
        return self.names.get(player) or player
