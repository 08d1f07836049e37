"""Property tests over random games of every preset (the invariants of test_properties.py).

Each game is played to its end with random legal moves: after every step the cards are
conserved and the state validates; views and events never show a viewer a hidden card, the
RNG or the seed (a turned-up start card is public); refused actions leave the state untouched;
the end has its winners: the last one standing, the best scores of a game-points game, or the
holder of a special hand (nobody, for a hand where everyone loses). The same seed and actions
replay to byte-identical states and events.

Budget: 30 fully checked games drawn among the presets, 16 with the §7 house rules on (any preset,
kr-product and classic too), plus one light game per preset at its fewest and most players.
"""

from __future__ import annotations

import random
from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ninetynine.engine.rules import GameState, apply, game_result, setup
from ninetynine.engine.rules.presets import PRESETS, preset, preset_names, with_house_rules
from ninetynine.engine.rules.presets_ono import ONO_PRESETS

from .builders import snapshot
from .test_properties import (
    NO_SHRINK,
    _check_end,
    _check_step_invariants,
    _check_views,
    _deck,
    _play_to_end,
    public_cards,
    seed_strategy,
)


def _check_preset_end(state: GameState) -> None:
    """The end as the preset has it; every player ranked once, places in order."""
    rules = state.rules
    if not (state.special_end or rules.scores):
        _check_end(state)
        return
    assert state.finished
    result = game_result(state)
    assert sorted(r.player for r in result.ranking) == sorted(state.seats)
    places = [r.rank for r in result.ranking]
    assert places == sorted(places) and places[0] == 1
    assert all(state.hands[p] == [] for p in state.elimination_order)
    if state.special_end:
        hand = rules.special_hand(state.special_end)
        assert hand is not None
        held = [c for c in state.hands[state.current] if c.startswith(hand.rank)]
        assert len(held) >= hand.count
        assert result.winner == ((state.current,) if hand.holder_wins else ())
    else:  # the best score among the players still in (003's hand scores: the lowest)
        sign = 1 if rules.end.highest_wins else -1
        in_game = [p for p in state.seats if state.alive[p]]
        best = max(sign * state.score[p] for p in in_game)
        if not rules.points:  # a game of rounds (paranoia): the agreed number was played
            assert state.round == (rules.end.target or len(state.seats))
        elif not rules.end.out_at_target:
            assert max(state.score.values()) >= rules.end.target
        ranked = (r.player for r in result.ranking)
        assert result.winner == tuple(p for p in ranked if p in in_game and sign * state.score[p] == best)


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
    _check_random_game(game, seed, play_seed)


def _check_random_game(game: tuple[str, int], seed: int, play_seed: int) -> None:
    name, players = game
    rules = PRESETS[name]
    seats = [f"player-{i}" for i in range(players)]
    start, setup_events = setup(seats, seed=seed, rules=rules)
    assert start.rules is rules
    _check_step_invariants(start, Counter(_deck(start)))
    _check_views(start, setup_events, public_cards(setup_events))

    end, log, events = _play_to_end(start, random.Random(play_seed), full_checks=True)
    _check_preset_end(end)

    again, _ = setup(seats, seed=seed, rules=rules)
    assert snapshot(again) == snapshot(start)
    for (player, action, now_ms), expected in zip(log, events, strict=True):
        again, replay_events = apply(again, player, action, now_ms=now_ms)
        assert [e.to_dict() | {"@": (e.audience.value, e.player)} for e in replay_events] == expected
    assert snapshot(again) == snapshot(end)


ONO_NAMES = sorted(r.name for r in ONO_PRESETS)


@st.composite
def ono_games(draw: st.DrawFn) -> tuple[str, int]:
    name = draw(st.sampled_from(ONO_NAMES))
    fewest, most = PRESETS[name].players
    return name, draw(st.integers(fewest, most))


@settings(max_examples=18, deadline=None, phases=NO_SHRINK, suppress_health_check=[HealthCheck.too_slow])
@given(game=ono_games(), seed=seed_strategy, play_seed=st.integers(0, 2**32))
def test_random_games_of_the_ono99_presets_keep_every_invariant_and_replay_identically(
    game: tuple[str, int], seed: int, play_seed: int
) -> None:
    """003's presets get games of their own: cards conserved through exchanges and counted hands,
    no secret in a view or an event for another audience, the debt of two cards always 0..2 (and 0
    at the end), replays identical, every game ends."""
    _check_random_game(game, seed, play_seed)


@settings(max_examples=16, deadline=None, phases=NO_SHRINK, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(preset_names()),
    players=st.integers(2, 5),
    seed=seed_strategy,
    play_seed=st.integers(0, 2**32),
)
def test_random_games_with_the_house_rules_keep_every_invariant(
    name: str, players: int, seed: int, play_seed: int
) -> None:
    """000 §7's house rules (exactly 99 earns a bonus, no same number twice in a row) and 002's
    exactly 69 on any preset, kr-product and classic included."""
    rules = with_house_rules(preset(name), "exact99Bonus", "noSameNumberTwice", "exact69Bonus")
    start, setup_events = setup([f"player-{i}" for i in range(players)], seed=seed, rules=rules)
    _check_views(start, setup_events, public_cards(setup_events))
    end, _, _ = _play_to_end(start, random.Random(play_seed), full_checks=True)
    _check_preset_end(end)


def test_every_preset_is_drawn_by_the_property_test() -> None:
    """Every preset plays a whole game from a fixed seed with its fewest and its most players."""
    for rules in PRESETS.values():
        for players in sorted(set(rules.players)):
            state, _ = setup([f"p{i}" for i in range(players)], seed=players, rules=rules)
            end, _, _ = _play_to_end(state, random.Random(players), full_checks=False)
            _check_preset_end(end)
