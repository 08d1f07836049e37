"""The engine's game registry: every game kind it hosts, by the name ``SetupRequest.game`` takes.

Each :class:`GameKind` names its pure rules (setup, apply, view, timeout policy, legal actions,
bot, state validation: what the CLI's ``simulate`` and tests drive) and how the engine's RPCs
reach it: which received ``State`` is its own, its RPC side (``service``), its ``ListRules``
entries. :class:`ninetynine.engine.handlers.EngineHandlers` dispatches on this table only; the
adding game (``""`` or ``"adding"``) is served by the handlers themselves (``service`` None).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, Protocol

from ninetynine.common.errors import Lang
from ninetynine.engine import rules, trick
from ninetynine.engine.trick import TrickError, TrickReason
from ninetynine.engine.trick.bot import bot_action
from ninetynine.engine.trick.validate import validate_state as validate_trick
from ninetynine.engine.trick_service import TrickService, default_options
from ninetynine.engine.v1 import engine_service_pb2 as pb
from ninetynine.engine.v1 import game_pb2, rules_pb2, state_pb2

if TYPE_CHECKING:
    from ninetynine.engine.handlers import RulesMetrics

__all__ = [
    "ADDING",
    "GAMES",
    "TRICK",
    "GameKind",
    "GameService",
    "PureRules",
    "kind_listing",
    "kind_named",
    "kind_of",
]

ADDING = "adding"
TRICK = "trick"


class GameService(Protocol):
    """One game's side of Setup / Apply / View / Timeout (the adding game's: EngineHandlers)."""

    def setup(self, request: pb.SetupRequest) -> pb.SetupResponse: ...

    def apply_to(
        self,
        msg: state_pb2.State,
        player_id: str,
        action_msg: game_pb2.Action,
        *,
        expected_seq: int | None,
        now_ms: int,
        state_out: state_pb2.State | None = None,
    ) -> pb.ApplyResponse: ...

    def view(self, request: pb.ViewRequest, lang: Lang) -> pb.ViewResponse: ...

    def timeout_of(
        self,
        msg: state_pb2.State,
        *,
        expected_seq: int | None,
        now_ms: int,
        state_out: state_pb2.State | None = None,
    ) -> pb.TimeoutResponse: ...


@dataclass(frozen=True)
class PureRules:
    """A game's rules library, state in and state and events out (signatures are the game's)."""

    setup: Callable[..., Any]
    apply: Callable[..., Any]
    player_view: Callable[..., Any]
    timeout_action: Callable[..., Any]
    legal_actions: Callable[..., Any]
    bot: Callable[..., Any] | None
    validate: Callable[[Any], None]


@dataclass(frozen=True)
class GameKind:
    name: str
    # The received state is a state of this game.
    holds: Callable[[state_pb2.State], bool]
    rules: PureRules
    # Its RPC side; None for the adding game, which EngineHandlers serves itself.
    service: Callable[[RulesMetrics, Callable[..., None]], GameService] | None
    # Its ListRules entries (None: the adding game's presets, listed by the handlers).
    listing: Callable[[], Sequence[rules_pb2.RulePreset]] | None


def _trick_listing() -> list[rules_pb2.RulePreset]:
    return [
        rules_pb2.RulePreset(
            name=TRICK,
            game=TRICK,
            summary="트릭 테이킹 99 (파렛): 3명, 36장, 카드 3장으로 입찰, 먼저 100점",
            summary_en="Trick-taking 99 (Parlett): 3 players, 36 cards, bid with 3 cards, first to 100",
            source="004 part I",
            min_players=3,
            max_players=3,
            trick_options=default_options(),
        )
    ]


GAMES: dict[str, GameKind] = {
    ADDING: GameKind(
        name=ADDING,
        holds=lambda msg: not msg.HasField("trick"),
        rules=PureRules(
            setup=rules.setup,
            apply=rules.apply,
            player_view=rules.player_view,
            timeout_action=rules.timeout_action,
            legal_actions=rules.legal_choices,
            bot=None,  # the session's bots (ninetynine/session/bots.py) play the adding game
            validate=rules.validate_state,
        ),
        service=None,
        listing=None,
    ),
    TRICK: GameKind(
        name=TRICK,
        holds=lambda msg: msg.HasField("trick"),
        rules=PureRules(
            setup=trick.setup,
            apply=trick.apply,
            player_view=trick.player_view,
            timeout_action=trick.timeout_action,
            legal_actions=trick.legal_actions,
            bot=bot_action,
            validate=validate_trick,
        ),
        service=TrickService,
        listing=_trick_listing,
    ),
}


def kind_named(name: str) -> GameKind:
    """The game ``SetupRequest.game`` names ("" = the adding game); ``UNKNOWN_GAME`` otherwise."""
    found = GAMES.get(name or ADDING)
    if found is None:
        raise TrickError(TrickReason.UNKNOWN_GAME, game=name[:32])
    return found


@cache
def _listed() -> dict[str, GameKind]:
    return {entry.name: kind for kind in GAMES.values() if kind.listing for entry in kind.listing()}


def kind_listing(name: str) -> GameKind | None:
    """The game whose ListRules entries include ``name`` (None: none does, or the adding game's)."""
    return _listed().get(name)


def kind_of_setup(game: str, rules_name: str) -> GameKind:
    """The game a SetupRequest sets up: the one ``game`` names, else (``game`` empty) the one
    whose ListRules entry ``rules`` names (``rules = "trick"``), else the adding game."""
    if game:
        return kind_named(game)
    return kind_listing(rules_name) or GAMES[ADDING]


def kind_of(msg: state_pb2.State) -> GameKind:
    """The game a received state is of."""
    return next(kind for kind in GAMES.values() if kind.holds(msg))
