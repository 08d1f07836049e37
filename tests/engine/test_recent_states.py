"""The engine's memo of the states it answered with: a state sent back as it went out on an
ApplyMany stream is not decoded again, and every answer is byte for byte what a fresh decode
would give. Calls go through ``apply_many`` as the server runs it: request bytes in, answer
bytes out."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from google.rpc import error_details_pb2, status_pb2
from prometheus_client import CollectorRegistry

from ninetynine.common.wire import length_delimited
from ninetynine.engine import convert
from ninetynine.engine.applymany import apply_many
from ninetynine.engine.handlers import EngineHandlers, RulesMetrics
from ninetynine.engine.recent import RecentStates
from ninetynine.engine.rules import GameState, timeout_action
from ninetynine.engine.rules.presets import preset_names
from ninetynine.engine.v1 import engine_service_pb2 as pb
from ninetynine.engine.v1 import state_pb2
from tests.engine.forged import move_with_state_in_two_parts


async def _items(data: list[bytes]) -> AsyncIterator[bytes]:
    for item in data:
        yield item


def _call(handlers: EngineHandlers, call: pb.ApplyManyRequest | bytes) -> pb.ApplyManyResponse:
    """One call on an ApplyMany stream of its own, answered as the engine server answers it."""
    data = call if isinstance(call, bytes) else call.SerializeToString()

    async def run() -> list[bytes]:
        return [out async for out in apply_many(handlers, _items([data]), "ko", None)]

    (answer,) = asyncio.run(run())
    return pb.ApplyManyResponse.FromString(answer)


class Refused(Exception):
    """A call answered with a failure, by its ErrorInfo reason."""

    def __init__(self, failure: pb.CallFailure) -> None:
        status = status_pb2.Status.FromString(failure.status_details)
        info = error_details_pb2.ErrorInfo()
        (detail,) = status.details
        detail.Unpack(info)
        super().__init__(info.reason)
        self.reason = info.reason


def _applied(handlers: EngineHandlers, request: pb.ApplyRequest) -> pb.ApplyResponse:
    """Apply on the stream; a refusal raised as :class:`Refused`."""
    answer = _call(handlers, pb.ApplyManyRequest(call_id=1, apply=request))
    if answer.HasField("failure"):
        raise Refused(answer.failure)
    return answer.applied


def _handlers(size: int | None = None) -> EngineHandlers:
    recent = None if size is None else RecentStates(size)
    return EngineHandlers(RulesMetrics.create(CollectorRegistry()), log_fields=False, recent=recent)


def _reused(handlers: EngineHandlers) -> tuple[float, float]:
    counter = handlers.metrics.states_received
    return counter.labels("reused")._value.get(), counter.labels("decoded")._value.get()


PLAYERS = ["p1", "p2", "p3"]  # every preset seats three


def _decoded(state: state_pb2.State) -> GameState:
    return convert.state_from_proto(state)


@pytest.mark.parametrize("name", preset_names())
def test_a_whole_game_answers_the_same_with_and_without_the_memo(name: str) -> None:
    """Every preset, to its end: each request carries the state the previous answer went out with
    (as the session sends it back), one engine keeps its memo, the other has none; every answer is
    byte for byte the same, and every move after the first reuses the state it was sent."""
    with_memo, without = _handlers(), _handlers(size=0)
    setup = pb.SetupRequest(player_ids=PLAYERS, seed=7, now_ms=1, rules=name)
    wire = with_memo.setup(setup).state.SerializeToString()
    assert without.setup(setup).state.SerializeToString() == wire
    moves = 0
    while True:
        state = state_pb2.State.FromString(wire)
        game = _decoded(state)
        if game.finished:
            break
        if moves % 2 == 0:  # half the moves through Apply, half through Timeout
            request = pb.ApplyRequest(state=state, player_id=game.current, now_ms=1000 + moves)
            convert.action_into(timeout_action(game), request.action)
            call = pb.ApplyManyRequest(call_id=1, apply=request)
        else:
            call = pb.ApplyManyRequest(call_id=1, timeout=pb.TimeoutRequest(state=state, now_ms=1000 + moves))
        first, second = (_call(h, call) for h in (with_memo, without))
        assert not first.HasField("failure"), first.failure.message
        assert first.SerializeToString() == second.SerializeToString(), f"move {moves} of {name}"
        answered = first.applied if first.HasField("applied") else first.timed_out
        wire = answered.state.SerializeToString()
        moves += 1
    assert moves > 0
    reused, decoded = _reused(with_memo)
    assert (reused, decoded) == (moves - 1, 1)  # the first move's state came from Setup
    assert _reused(without) == (0, moves)


def _first_move(handlers: EngineHandlers, seed: int = 3) -> state_pb2.State:
    """The state a new three-player game is in after its first move (the engine now holds it)."""
    setup = handlers.setup(pb.SetupRequest(player_ids=PLAYERS, seed=seed, now_ms=1))
    return _move(handlers, setup.state, None).state


def _move(handlers: EngineHandlers, state: state_pb2.State, player: str | None) -> pb.ApplyResponse:
    """The rules' own timeout choice played on ``state`` by ``player`` (None: whoever's turn it is)."""
    game = _decoded(state)
    request = pb.ApplyRequest(state=state, player_id=player or game.current, now_ms=2)
    convert.action_into(timeout_action(game), request.action)
    return _applied(handlers, request)


def test_a_state_that_differs_in_one_field_is_decoded_and_checked() -> None:
    """A caller's own edit of a remembered state is read as sent, and refused when it is invalid."""
    handlers = _handlers()
    answered = _first_move(handlers)
    forged = state_pb2.State()
    forged.CopyFrom(answered)
    forged.total = 500  # past any limit: no rule set plays from here
    game = _decoded(answered)
    request = pb.ApplyRequest(state=forged, player_id=game.current, now_ms=2)
    convert.action_into(timeout_action(game), request.action)
    with pytest.raises(Refused) as refused:
        _applied(handlers, request)
    assert refused.value.reason == "INVALID_STATE"
    assert _reused(handlers) == (0, 2)  # Setup's state, then the forged one
    _move(handlers, answered, None)
    assert _reused(handlers) == (1, 2)


def test_a_refused_move_keeps_the_state_for_the_next_try() -> None:
    """A play the rules refuse answers no state, so the room's next play still finds its state;
    once the room moved on, the state before is let go."""
    handlers = _handlers()
    answered = _first_move(handlers)
    game = _decoded(answered)
    with pytest.raises(Refused) as refused:
        _move(handlers, answered, next(p for p in game.seats if p != game.current))
    assert refused.value.reason == "NOT_YOUR_TURN"
    _move(handlers, answered, None)
    assert _reused(handlers) == (2, 1)
    _move(handlers, answered, None)  # the same play sent again: read as any unknown state
    assert _reused(handlers) == (2, 2)


def test_the_memo_holds_at_most_its_size() -> None:
    handlers = _handlers(size=2)
    for seed in range(5):
        _first_move(handlers, seed)
    assert len(handlers.recent) == 2


def test_a_state_sent_in_two_parts_is_read_as_their_merge() -> None:
    """Protobuf merges a field sent twice: the call's state is then no single slice of its bytes,
    so it is decoded as the merge, never matched against a remembered state by its first part."""
    handlers = _handlers()
    forged = move_with_state_in_two_parts(_first_move(handlers), now_ms=2)
    apply_field = pb.ApplyManyRequest.DESCRIPTOR.fields_by_name["apply"].number
    call = pb.ApplyManyRequest(call_id=1).SerializeToString() + length_delimited(apply_field, forged)
    answer = _call(handlers, call)
    assert Refused(answer.failure).reason == "INVALID_STATE"
    assert _reused(handlers) == (0, 2)
