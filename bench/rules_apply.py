"""µs per ``rules.apply`` on realistic mid-game states, against ``GameState.clone()`` as baseline.

The states come from random games (the ``simulate`` random policy, fixed seeds): for
each game every position in the middle half of the game is kept together with the move
that was played there, so the pool mixes ordinary plays with refills, reshuffles,
automatic losses and (in lives mode) new rounds in the proportions real games have.
``apply`` never changes its input, so each call reuses a pool entry as is.

The baseline is ``GameState.clone()`` on the same kr-product states: the one copy that
every apply makes, i.e. the floor of what a copy-on-write rules step can cost.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bench.framework import Report
from services.engine.rules import Action, GameState, Options, Rng, apply, player_view, seed_rng, setup
from services.engine.rules import timeout_action as rules_timeout_action
from services.engine.simulate import PLAY_STREAM, random_action

SAMPLES = 10_000


@dataclass(frozen=True, slots=True)
class Position:
    state: GameState
    player: str
    action: Action


def mid_game_positions(options: Options, players: int, games: int, seed: int) -> list[Position]:
    """Positions from the middle half of ``games`` random games."""
    positions: list[Position] = []
    seats = [f"p{i + 1}" for i in range(players)]
    for game in range(games):
        state, _ = setup(seats, options, seed=seed + game)
        rng = Rng(seed_rng(seed + game, PLAY_STREAM))
        played: list[Position] = []
        while not state.finished:
            action = random_action(state, rng)
            played.append(Position(state, state.current, action))
            state, _ = apply(state, state.current, action)
        quarter = len(played) // 4
        positions.extend(played[quarter : len(played) - quarter])
    return positions


def _cycle(
    positions: list[Position], call: Callable[[Position], object]
) -> Callable[[int], Callable[[], object]]:
    def make(i: int) -> Callable[[], object]:
        position = positions[i % len(positions)]
        return lambda: call(position)

    return make


def run(report: Report) -> None:
    report.begin_suite("rules_apply", "µs per rules step on mid-game states (baseline: GameState.clone)")
    scenarios = {
        "kr-product 4p": mid_game_positions(Options(), 4, games=40, seed=1000),
        "classic 6p (3 lives)": mid_game_positions(Options(mode="classic"), 6, games=3, seed=2000),
        "kr-product 4p lives=3": mid_game_positions(Options(lives=3), 4, games=8, seed=3000),
    }
    report.note(
        "positions: " + ", ".join(f"{name} {len(positions)}" for name, positions in scenarios.items())
    )
    kr = scenarios["kr-product 4p"]
    report.time_calls(
        "GameState.clone() kr-product 4p",
        _cycle(kr, lambda p: p.state.clone()),
        samples=SAMPLES,
        baseline=True,
    )
    for name, positions in scenarios.items():
        report.time_calls(
            f"apply {name}",
            _cycle(positions, lambda p: apply(p.state, p.player, p.action)),
            samples=SAMPLES,
        )
    report.time_calls(
        "timeout_action kr-product 4p", _cycle(kr, lambda p: rules_timeout_action(p.state)), samples=SAMPLES
    )
    report.time_calls(
        "player_view (own) kr-product 4p",
        _cycle(kr, lambda p: player_view(p.state, p.player)),
        samples=SAMPLES,
    )
