"""Ninety-nine rules engine: a pure, deterministic library (no I/O, no gRPC).

Typical use::

    state, events = setup(["ann", "bob", "cho"], Options(), seed=7)
    view = player_view(state, "ann")
    state, events = apply(state, state.current, timeout_action(state), now_ms=...)
"""

from .cards import Card, Kind, build_deck, cards_of, catalogue_of
from .discard import discard_action
from .errors import Reason, RuleError, message
from .game import (
    Choice,
    GameResult,
    RankEntry,
    apply,
    card_choices,
    card_of,
    check_action,
    check_replayable,
    game_result,
    has_legal_play,
    legal_choices,
    setup,
    timeout_action,
)
from .options import CLASSIC, KR, Options
from .presets import PRESETS, preset, rules_for
from .rng import Rng, RngState, seed_commitment, seed_rng
from .ruleset import RuleSet
from .state import CURRENT_STATE_VERSION, Action, Audience, Event, GameState, Phase, PlayRecord
from .validate import validate_state
from .view import player_view, private_view, public_view

__all__ = [
    "CLASSIC",
    "CURRENT_STATE_VERSION",
    "KR",
    "PRESETS",
    "Action",
    "Audience",
    "Card",
    "Choice",
    "Event",
    "GameResult",
    "GameState",
    "Kind",
    "Options",
    "Phase",
    "PlayRecord",
    "RankEntry",
    "Reason",
    "Rng",
    "RngState",
    "RuleError",
    "RuleSet",
    "apply",
    "build_deck",
    "card_choices",
    "card_of",
    "cards_of",
    "catalogue_of",
    "check_action",
    "check_replayable",
    "discard_action",
    "game_result",
    "has_legal_play",
    "legal_choices",
    "message",
    "player_view",
    "preset",
    "private_view",
    "public_view",
    "rules_for",
    "seed_commitment",
    "seed_rng",
    "setup",
    "timeout_action",
    "validate_state",
]
