"""µs per ``rules.apply`` on realistic mid-game states, against a plain copy of equal size as baseline.

The states come from random games (the ``simulate`` random policy, fixed seeds): for
each game every position in the middle half of the game is kept together with the move
that was played there, so the pool mixes ordinary plays with refills, reshuffles,
automatic losses and (in lives mode) new rounds in the proportions real games have.
``apply`` never changes its input, so each call reuses a pool entry as is.

The baseline copies the same kr-product states' containers as plain dicts and lists
(hands, piles, per-player maps): the work of any copy-on-write step, independent of the
engine's code, so the ratio tracks engine changes while the machine's speed cancels out.
``GameState.clone()`` (the copy every apply makes) is measured as its own case.

"engine Apply in-process" is the whole work of the engine service's ``Apply`` minus gRPC:
parse the request bytes, convert and validate the state (``ninetynine.engine.convert``),
apply, build and serialize the response. The gRPC round trip itself is for
``bench/engine_grpc.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bench.framework import Report
from ninetynine.engine import convert
from ninetynine.engine.rules import Action, GameState, Options, Rng, apply, player_view, seed_rng, setup
from ninetynine.engine.rules import timeout_action as rules_timeout_action
from ninetynine.engine.simulate import PLAY_STREAM, random_action
from ninetynine.engine.v1 import engine_service_pb2 as pb

SAMPLES = 10_000


# The clock of the benchmark games: a move every 3 s from here. Requests carry it, so the engine
# answers each position with exactly the state of the game's next position.
GAME_CLOCK_MS = 1_765_000_000_000


@dataclass(frozen=True, slots=True)
class Position:
    state: GameState
    player: str
    action: Action
    now_ms: int = 0


def mid_game_positions(options: Options, players: int, games: int, seed: int) -> list[Position]:
    """Positions from the middle half of ``games`` random games, in the order they were played."""
    positions: list[Position] = []
    seats = [f"p{i + 1}" for i in range(players)]
    for game in range(games):
        state, _ = setup(seats, options, seed=seed + game)
        rng = Rng(seed_rng(seed + game, PLAY_STREAM))
        played: list[Position] = []
        while not state.finished:
            action = random_action(state, rng)
            now = GAME_CLOCK_MS + 3000 * len(played)
            played.append(Position(state, state.current, action, now))
            state, _ = apply(state, state.current, action, now_ms=now)
        quarter = len(played) // 4
        positions.extend(played[quarter : len(played) - quarter])
    return positions


def apply_request_bytes(position: Position) -> bytes:
    request = pb.ApplyRequest(player_id=position.player, now_ms=position.now_ms)
    convert.state_into(position.state, request.state)
    convert.action_into(position.action, request.action)
    return request.SerializeToString()


def engine_apply_in_process(request_bytes: bytes) -> bytes:
    """What the engine's Apply handler does with a request, without the RPC."""
    request = pb.ApplyRequest.FromString(request_bytes)
    state = convert.state_from_proto(request.state)
    new_state, events = apply(state, request.player_id, convert.action_from_proto(request.action))
    response = pb.ApplyResponse()
    convert.state_into(new_state, response.state)
    convert.events_into(events, response.events)
    return response.SerializeToString()


def plain_copy(state: GameState) -> dict[str, object]:
    """The baseline: copy the state's containers without any engine code."""
    return {
        "hands": {p: h[:] for p, h in state.hands.items()},
        "draw": state.draw_pile[:],
        "discard": state.discard[:],
        "maps": [state.alive.copy(), state.lives.copy(), state.on_board.copy(), state.lives_lost.copy()],
        "history": state.history[:],
    }


def _cycle(
    positions: list[Position], call: Callable[[Position], object]
) -> Callable[[int], Callable[[], object]]:
    def make(i: int) -> Callable[[], object]:
        position = positions[i % len(positions)]
        return lambda: call(position)

    return make


def run(report: Report) -> None:
    report.begin_suite("rules_apply", "µs per rules step on mid-game states (baseline: plain copy)")
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
        "baseline: plain copy, kr-product 4p",
        _cycle(kr, lambda p: plain_copy(p.state)),
        samples=SAMPLES,
        baseline=True,
    )
    report.time_calls(
        "GameState.clone() kr-product 4p", _cycle(kr, lambda p: p.state.clone()), samples=SAMPLES
    )
    for name, positions in scenarios.items():
        report.time_calls(
            f"apply {name}",
            _cycle(positions, lambda p: apply(p.state, p.player, p.action)),
            samples=SAMPLES,
        )
    requests = [apply_request_bytes(p) for p in kr]
    report.time_calls(
        "engine Apply in-process kr-product 4p",
        lambda i: lambda: engine_apply_in_process(requests[i % len(requests)]),
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
