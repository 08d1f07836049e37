"""Leak test over thousands of random games of the pure rules engine.

After every move, every player's view and every spectator's view, and every event each of them
may see, is serialized to JSON; none may name a card another player holds or one still in the
draw pile (unless it was played face up before), the seed before the end, or the RNG state.
``LEAK_RULES_GAMES`` sets the games of the CI run (default 50), ``LEAK_RULES_SLOW_GAMES`` those of
the slow run (default 3000, ``make test-slow``).
"""

from __future__ import annotations

import json
import os
import random
from dataclasses import replace
from typing import Any

import pytest

from ninetynine.engine.rules import GameState, Options, Phase, apply, legal_choices, player_view, setup
from ninetynine.engine.rules.options import CHOICES

CI_GAMES = int(os.environ.get("LEAK_RULES_GAMES", "50"))
SLOW_GAMES = int(os.environ.get("LEAK_RULES_SLOW_GAMES", "3000"))
FORBIDDEN_KEYS = frozenset({"drawPile", "hands", "rng", "rngState", "deck", "discard"})


def _random_options(rng: random.Random) -> Options:
    chosen: dict[str, Any] = {attr: rng.choice(allowed) for attr, (_, allowed) in CHOICES.items()}
    return replace(Options(), **chosen)


def _keys(node: object) -> set[str]:
    if isinstance(node, dict):
        return set(node) | {k for v in node.values() for k in _keys(v)}
    if isinstance(node, list):
        return {k for v in node for k in _keys(v)}
    return set()


def _scalars(node: object) -> set[object]:
    if isinstance(node, dict):
        return {x for v in node.values() for x in _scalars(v)}
    if isinstance(node, list):
        return {x for v in node for x in _scalars(v)}
    return {node}


def _secrets(state: GameState, viewer: str | None, public: set[str]) -> set[object]:
    """Values this viewer must not see now (the RNG words as numbers and as decimal strings)."""
    hidden = {cid for p, hand in state.hands.items() if p != viewer for cid in hand}
    hidden |= set(state.draw_pile)
    found: set[object] = set(hidden - public)
    if state.phase is not Phase.FINISHED:
        # The increment is the public constant 2*54+1 (rng.py); state and seed are the secrets.
        for word in (state.seed, state.rng.state):
            found |= {word, str(word)}
    return found


def _assert_clean(payload: object, state: GameState, viewer: str | None, public: set[str]) -> None:
    leaked = _scalars(payload) & _secrets(state, viewer, public)
    text = json.dumps(payload, ensure_ascii=False)
    assert not leaked, f"{viewer or 'spectator'} sees {leaked} in {text[:300]}"
    assert not (_keys(payload) & FORBIDDEN_KEYS), f"hidden state key in {text[:300]}"
    if state.phase is not Phase.FINISHED:
        assert "seed" not in _keys(payload), "the seed is revealed only at the end"


def _assert_clean_event(payload: dict[str, object], state: GameState, viewer: str | None) -> None:
    """An event shows card faces only to their owner; the hidden state and the seed never before the end.

    (Its cards are checked against the owner, not the state after the move: a card drawn and then
    returned by a new deal within the same move was rightly shown to its drawer.)
    """
    if "cards" in payload or "card" in payload:
        assert payload["player"] == viewer, f"{viewer or 'spectator'} sees another's cards: {payload}"
    assert not (_keys(payload) & FORBIDDEN_KEYS), payload
    if payload["type"] != "gameFinished":
        words = {state.seed, str(state.seed), state.rng.state, str(state.rng.state)}
        assert not (_scalars(payload) & words), payload
        assert "seed" not in _keys(payload), payload


@pytest.mark.parametrize(
    "games", [CI_GAMES, pytest.param(SLOW_GAMES, marks=pytest.mark.slow, id="thousands")]
)
def test_no_view_or_event_leaks_hidden_cards_or_the_seed(games: int) -> None:
    rng = random.Random(99 + games)
    moves = 0
    for game in range(games):
        players = [f"p{i}" for i in range(rng.randint(2, 6))]
        state, events = setup(players, _random_options(rng), seed=rng.getrandbits(63), now_ms=game)
        viewers: list[str | None] = [*players, None]
        public: set[str] = set()
        while True:
            for event in events:
                if event.type == "cardPlayed":
                    public.add(str(event.data["cardId"]))
                for viewer in viewers:
                    if event.visible_to(viewer):
                        _assert_clean_event(event.to_dict(), state, viewer)
            for viewer in viewers:
                _assert_clean(player_view(state, viewer), state, viewer, public)
            if state.phase is Phase.FINISHED:
                break
            choice = rng.choice(legal_choices(state, state.current))
            state, events = apply(state, state.current, choice.action, now_ms=game + moves)
            moves += 1
    assert moves > games * 5, "the games were played, not just set up"
