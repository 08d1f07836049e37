"""The in-process engine answers exactly like the engine service: same responses, same refusals.

Each test asks a real engine server (the production command, tests/engine/conftest.py) through
:class:`EngineClient` and a :class:`LocalEngine` the same thing, and compares what comes back as
the session would see it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import grpc
import pytest
from prometheus_client import CollectorRegistry

from ninetynine.common.context import request_scope
from ninetynine.common.errors import ServiceError
from ninetynine.engine import convert
from ninetynine.engine.client import EngineClient
from ninetynine.engine.handlers import rules_metrics
from ninetynine.engine.local import LocalEngine
from ninetynine.engine.rules import GameState
from ninetynine.engine.v1 import game_pb2, state_pb2
from tests.engine.rules.builders import card_id, make_state
from tests.engine.service_fixtures import RunningEngine

PLAYERS = ["ann", "bob", "cho"]
C = grpc.StatusCode
Call = Callable[[EngineClient], Awaitable[object]]


def _proto(state: GameState) -> state_pb2.State:
    return convert.state_to_proto(state)


def _refusal_cases() -> list[tuple[str, C, str, Call]]:
    """(name, expected code, expected reason, the call)."""
    over = make_state(total=95, hands={"A": ["8", "1"], "B": ["2"]}, current="A")
    eight = game_pb2.Action(card_id=card_id(over, "A", "8"))
    one = game_pb2.Action(card_id=card_id(over, "A", "1"))
    state = _proto(over)
    stranger = "z" * 300  # echoed in the metadata, which the engine shortens
    return [
        ("over-99", C.FAILED_PRECONDITION, "OVER_99", lambda e: e.apply(state, "A", eight, now_ms=5)),
        (
            "stale-apply",
            C.ABORTED,
            "STALE_STATE",
            lambda e: e.apply(state, "A", one, expected_seq=state.seq + 3, now_ms=5),
        ),
        (
            "stale-timeout",
            C.ABORTED,
            "STALE_STATE",
            lambda e: e.timeout(state, expected_seq=state.seq + 1, now_ms=5),
        ),
        ("not-your-turn", C.FAILED_PRECONDITION, "NOT_YOUR_TURN", lambda e: e.apply(state, "B", one)),
        ("unknown-long-id", C.FAILED_PRECONDITION, "UNKNOWN_PLAYER", lambda e: e.apply(state, stranger, one)),
        ("one-player", C.INVALID_ARGUMENT, "INVALID_PLAYER_COUNT", lambda e: e.setup(["solo"], seed=1)),
        (
            "name-of-nobody",
            C.INVALID_ARGUMENT,
            "INVALID_PLAYER_ID",
            lambda e: e.setup(PLAYERS, seed=1, display_names={"dan": "Dan"}),
        ),
        ("empty-state", C.INVALID_ARGUMENT, "INVALID_STATE", lambda e: e.view(state_pb2.State(), "A")),
    ]


def _as_seen(err: ServiceError) -> tuple[Any, ...]:
    return (err.code, err.reason, err.domain, err.metadata, err.message("ko"), err.message("en"))


@pytest.mark.parametrize(
    ("code", "reason", "call"), [c[1:] for c in _refusal_cases()], ids=[c[0] for c in _refusal_cases()]
)
async def test_a_refusal_is_the_same_service_error_from_both_engines(
    engine: RunningEngine, code: C, reason: str, call: Call
) -> None:
    errors: list[ServiceError] = []
    async with EngineClient(engine.target) as remote, LocalEngine() as local:
        for rules_engine in (remote, local):
            with pytest.raises(ServiceError) as caught:
                await call(rules_engine)
            errors.append(caught.value)
    remote_err, local_err = errors
    assert (remote_err.code, remote_err.reason, remote_err.domain) == (code, reason, "engine.ninetynine")
    assert _as_seen(local_err) == _as_seen(remote_err)


async def test_unknown_player_metadata_is_shortened_the_same_way() -> None:
    over = make_state(total=95, hands={"A": ["8", "1"], "B": ["2"]}, current="A")
    action = game_pb2.Action(card_id=card_id(over, "A", "1"))
    async with LocalEngine() as local:
        with pytest.raises(ServiceError) as caught:
            await local.apply(_proto(over), "z" * 300, action)
    assert caught.value.metadata["playerId"] == "z" * 99 + "…"


async def test_a_whole_game_gives_equal_responses_from_both_engines(engine: RunningEngine) -> None:
    registry = CollectorRegistry()
    async with (
        EngineClient(engine.target) as remote,
        EngineClient(engine.target, lang="en") as remote_en,
        LocalEngine(metrics=rules_metrics(registry)) as local,
        LocalEngine(lang="en") as local_en,
    ):
        options = game_pb2.Options(lives=2)
        started = await remote.setup(PLAYERS, options, seed=42, display_names={"ann": "Ann"}, now_ms=1_000)
        assert (
            await local.setup(PLAYERS, options, seed=42, display_names={"ann": "Ann"}, now_ms=1_000)
            == started
        )
        state = started.state
        moves = 0
        while state.phase == state_pb2.PHASE_PLAYING:
            assert moves < 2000, "the game does not end"
            now = 2_000 + moves
            view = await remote.view(state, state.current)
            assert await local.view(state, state.current) == view
            assert await local_en.view(state, state.current) == await remote_en.view(state, state.current)
            assert await local.view(state) == await remote.view(state)  # a spectator's
            if moves % 4 == 3:
                timed = await remote.timeout(state, expected_seq=state.seq, now_ms=now)
                assert await local.timeout(state, expected_seq=state.seq, now_ms=now) == timed
                state = timed.state
            else:
                action = view.view.legal_plays[0].action
                applied = await remote.apply(state, state.current, action, expected_seq=state.seq, now_ms=now)
                local_applied = await local.apply(
                    state, state.current, action, expected_seq=state.seq, now_ms=now
                )
                assert local_applied == applied
                state = applied.state
            moves += 1
        assert await local.view(state, "ann") == await remote.view(state, "ann")
    # The rules counters of the in-process engine count what the engine process would.
    assert registry.get_sample_value("ninetynine_engine_games_setup_total", {"mode": "kr-product"}) == 1
    assert registry.get_sample_value("ninetynine_engine_games_finished_total", {"mode": "kr-product"}) == 1
    applied_total = sum(
        registry.get_sample_value(
            "ninetynine_engine_moves_applied_total", {"mode": "kr-product", "source": s}
        )
        or 0
        for s in ("player", "timeout")
    )
    assert applied_total == moves


async def test_local_calls_leave_the_callers_log_fields_alone() -> None:
    # In the session, the engine's mode/seq/phase/player_id would overwrite the Play RPC's own.
    async with LocalEngine() as local:
        with request_scope("caller") as fields:
            fields["seq"] = 7
            started = await local.setup(PLAYERS, seed=3, now_ms=1)
            await local.timeout(started.state, now_ms=2)
    assert fields == {"seq": 7}
