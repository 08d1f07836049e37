"""Property tests over random games of every preset (the invariants of test_properties.py).

Each game is played to its end with random legal moves: after every step the cards are
conserved and the state validates; views and events never show a viewer a hidden card, the
RNG or the seed; refused actions leave the state untouched; the end has one winner. The
same seed and actions replay to byte-identical states and events.

Budget: 30 fully checked games drawn among the presets, plus one light game per preset at its
fewest and most players.
"""

from __future__ import annotations

import random
from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ninetynine.engine.rules import apply, setup
from ninetynine.engine.rules.presets import PRESETS

from .builders import snapshot
from .test_properties import (
    NO_SHRINK,
    _check_end,
    _check_step_invariants,
    _check_views,
    _deck,
    _play_to_end,
    seed_strategy,
)


@st.composite
def preset_games(draw: st.DrawFn) -> tuple[str, int]:
    name = draw(st.sampled_from(sorted(PRESETS)))
    fewest, most = PRESETS[name].players
    return name, draw(st.integers(fewest, most))


@settings(max_examples=30, deadline=None, phases=NO_SHRINK, suppress_health_check=[HealthCheck.too_slow])
@given(game=preset_games(), seed=seed_strategy, play_seed=st.integers(0, 2**32))
def test_random_games_of_every_preset_keep_every_invariant_and_replay_identically(
    game: tuple[str, int], seed: int, play_seed: int
) -> None:
    name, players = game
    rules = PRESETS[name]
    seats = [f"player-{i}" for i in range(players)]
    start, setup_events = setup(seats, seed=seed, rules=rules)
    assert start.rules is rules
    _check_step_invariants(start, Counter(_deck(start)))
    _check_views(start, setup_events, set())

    end, log, events = _play_to_end(start, random.Random(play_seed), full_checks=True)
    _check_end(end)

    again, _ = setup(seats, seed=seed, rules=rules)
    assert snapshot(again) == snapshot(start)
    for (player, action, now_ms), expected in zip(log, events, strict=True):
        again, replay_events = apply(again, player, action, now_ms=now_ms)
        assert [e.to_dict() | {"@": (e.audience.value, e.player)} for e in replay_events] == expected
    assert snapshot(again) == snapshot(end)


def test_every_preset_is_drawn_by_the_property_test() -> None:
    """Every preset plays a whole game from a fixed seed with its fewest and its most players."""
    for rules in PRESETS.values():
        for players in sorted(set(rules.players)):
            state, _ = setup([f"p{i}" for i in range(players)], seed=players, rules=rules)
            end, _, _ = _play_to_end(state, random.Random(players), full_checks=False)
            _check_end(end)
