"""Presence (who is connected) and the session's metrics, through real Subscribe streams."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import grpc
import grpc.aio

from ninetynine.engine.v1 import game_pb2, state_pb2
from ninetynine.session.v1 import session_service_pb2 as pb
from tests.session.conftest import Stack
from tests.session.helpers import eventually, refused, room_of, sample, wait_finished

MakeStack = Callable[..., Awaitable[Stack]]
Stream = grpc.aio.UnaryStreamCall[pb.SubscribeRequest, pb.SubscribeResponse]


async def _connected(stack: Stack, room_id: str) -> dict[str, bool]:
    return {s.player_id: s.connected for s in (await room_of(stack.stub, room_id)).seats}


async def _first_event(stream: Stream) -> None:
    async for item in stream:
        if item.HasField("event"):
            return
    raise AssertionError("stream ended")


async def test_presence_follows_the_stream_and_absent_players_run_on_the_deadline(
    make_stack: MakeStack,
) -> None:
    stack = await make_stack(time_scale=0.01)  # 15 s turns -> 150 ms
    a = await stack.stub.CreateRoom(
        pb.CreateRoomRequest(name="A", max_seats=3, options=game_pb2.Options(mode=game_pb2.MODE_CLASSIC))
    )
    room_id = a.room.room_id
    b = await stack.stub.JoinRoom(pb.JoinRoomRequest(room_id=room_id, name="B"))
    bot = await stack.stub.AddBot(pb.AddBotRequest(token=a.seat_token))
    assert await _connected(stack, room_id) == {a.player_id: False, b.player_id: False, bot.player_id: True}
    gauge = "ninetynine_session_subscribers"

    b_stream = stack.stub.Subscribe(pb.SubscribeRequest(token=b.seat_token, after_seq=0))
    await _first_event(b_stream)
    a_stream = stack.stub.Subscribe(pb.SubscribeRequest(token=a.seat_token, after_seq=0))
    await _first_event(a_stream)
    await eventually(lambda: _is(sample(stack.registry, gauge) == 2))
    connected = await eventually(lambda: _if(_connected(stack, room_id), lambda c: c[a.player_id]))
    assert connected == {a.player_id: True, b.player_id: True, bot.player_id: True}

    await stack.stub.StartGame(pb.StartGameRequest(token=a.seat_token))
    a_stream.cancel()  # A's client goes away mid-game
    await eventually(lambda: _if(_connected(stack, room_id), lambda c: not c[a.player_id]))
    await eventually(lambda: _is(sample(stack.registry, gauge) == 1))

    # B's stream saw A come and go, and plays B's turns until the end; A's turns time out.
    presence: list[tuple[str, bool]] = []
    client_seq = 0
    async for item in b_stream:
        if item.HasField("event") and item.event.HasField("presence_changed"):
            changed = item.event.presence_changed
            presence.append((changed.player_id, changed.connected))
        if not item.HasField("view") or not item.view.HasField("view"):
            continue
        view = item.view.view
        if view.phase == state_pb2.PHASE_FINISHED:
            break
        if view.my_turn and view.legal_plays:
            client_seq += 1
            try:
                await stack.stub.Play(
                    pb.PlayRequest(
                        token=b.seat_token, client_seq=client_seq, action=view.legal_plays[0].action
                    )
                )
            except grpc.aio.AioRpcError as err:  # B's own 150 ms deadline may win on a busy machine
                assert err.code() == grpc.StatusCode.FAILED_PRECONDITION, err
    b_stream.cancel()
    await eventually(
        lambda: _is(sample(stack.registry, gauge) == 0)
    )  # a finished room's idle stream ends too
    assert (a.player_id, True) in presence and (b.player_id, True) in presence
    assert presence.index((a.player_id, False)) > presence.index((a.player_id, True))
    assert not any(pid == bot.player_id for pid, _ in presence), "bots have no presence to change"

    room = await wait_finished(stack.stub, room_id)
    assert not next(s for s in room.seats if s.player_id == a.player_id).connected
    replay = await stack.stub.GetReplay(pb.GetReplayRequest(room_id=room_id))
    sources = {(m.player_id, m.source) for m in replay.moves}
    assert (a.player_id, "timeout") in sources and (a.player_id, "player") not in sources
    assert (bot.player_id, "bot") in sources

    # The metrics a dashboard reads, on this stack's registry.
    reg = stack.registry
    moves = "ninetynine_session_move_duration_seconds_count"
    durable = {
        src: sample(reg, moves, {"mode": "classic", "source": src, "stage": "durable"})
        for src in ("player", "timeout", "bot")
    }
    timeouts = sum(1 for m in replay.moves if m.source == "timeout")
    assert durable["timeout"] == timeouts and durable["bot"] == sum(
        1 for m in replay.moves if m.source == "bot"
    )
    assert durable["player"] == sum(1 for m in replay.moves if m.source == "player")
    fanned = sum(
        sample(reg, moves, {"mode": "classic", "source": src, "stage": "fanout"})
        for src in ("player", "timeout", "bot")
    )
    assert 0 < fanned <= sum(durable.values()), "B's stream fanned the moves out"
    assert sample(reg, "ninetynine_session_timeouts_total", {"mode": "classic"}) == timeouts
    assert sample(reg, "ninetynine_session_eliminations_total", {"mode": "classic"}) >= 1
    assert (
        sample(
            reg, "ninetynine_session_engine_call_duration_seconds_count", {"method": "Apply", "code": "OK"}
        )
        >= 1
    )

    await refused(
        stack.stub.Play(
            pb.PlayRequest(token=b.seat_token, client_seq=0, action=game_pb2.Action(card_id="x"))
        ),
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_CLIENT_SEQ",
    )
    assert sample(reg, "ninetynine_session_refusals_total", {"reason": "INVALID_CLIENT_SEQ"}) == 1


async def _is(value: bool) -> bool:
    return value


async def _if(
    value: Awaitable[dict[str, bool]], predicate: Callable[[dict[str, bool]], bool]
) -> dict[str, bool] | None:
    got = await value
    return got if predicate(got) else None


async def test_two_streams_of_one_seat_count_as_one_presence(make_stack: MakeStack) -> None:
    stack = await make_stack()
    a = await stack.stub.CreateRoom(pb.CreateRoomRequest(name="A", max_seats=2))
    room_id = a.room.room_id
    first = stack.stub.Subscribe(pb.SubscribeRequest(token=a.seat_token))
    second = stack.stub.Subscribe(pb.SubscribeRequest(token=a.seat_token))
    await asyncio.gather(_first_event(first), _first_event(second))
    await eventually(lambda: _if(_connected(stack, room_id), lambda c: c[a.player_id]))
    first.cancel()  # e.g. a second tab closes: the seat is still connected
    await eventually(lambda: _is(sample(stack.registry, "ninetynine_session_subscribers") == 1))
    assert (await _connected(stack, room_id))[a.player_id]
    second.cancel()
    await eventually(lambda: _if(_connected(stack, room_id), lambda c: not c[a.player_id]))
