""" "한 판 더": the players of a finished game meet again in one new room with the same settings."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import grpc

from ninetynine.engine.v1 import game_pb2
from ninetynine.session.v1 import session_service_pb2 as pb
from tests.session.conftest import Stack
from tests.session.helpers import refused, room_of, wait_finished

MakeStack = Callable[..., Awaitable[Stack]]


async def _finished_game(stack: Stack) -> tuple[str, pb.CreateRoomResponse, pb.JoinRoomResponse]:
    """A 3-seat game of two people (who let their turns time out) and a bot, played to its end."""
    options = game_pb2.Options(lives=0, turn_seconds=10)
    host = await stack.stub.CreateRoom(pb.CreateRoomRequest(name="지호", max_seats=3, options=options))
    room_id = host.room.room_id
    guest = await stack.stub.JoinRoom(pb.JoinRoomRequest(room_id=room_id, name="민서"))
    await stack.stub.AddBot(pb.AddBotRequest(token=host.seat_token))
    await stack.stub.StartGame(pb.StartGameRequest(token=host.seat_token))
    await wait_finished(stack.stub, room_id)
    return room_id, host, guest


async def test_the_first_to_ask_hosts_the_rematch_and_the_others_join_it(make_stack: MakeStack) -> None:
    stack = await make_stack()
    room_id, host, guest = await _finished_game(stack)
    old = await room_of(stack.stub, room_id)

    first = (await stack.stub.Rematch(pb.RematchRequest(token=guest.seat_token))).joined
    again = (await stack.stub.Rematch(pb.RematchRequest(token=host.seat_token))).joined
    new_id = first.room.room_id
    assert new_id != room_id and again.room.room_id == new_id, "both in one new room"
    room = await room_of(stack.stub, new_id)
    assert room.phase == pb.ROOM_PHASE_LOBBY
    assert [s.name for s in room.seats] == ["민서", "지호"], "seated in the order they asked"
    assert room.host_player_id == first.player_id, "who asked first hosts it"
    assert room.max_seats == old.max_seats and room.options == old.options
    assert first.seat_token != guest.seat_token and again.player_id != first.player_id
    # The finished seat has moved on: asking again seats nobody twice.
    await refused(
        stack.stub.Rematch(pb.RematchRequest(token=guest.seat_token)),
        grpc.StatusCode.UNAUTHENTICATED,
        "INVALID_TOKEN",
    )
    assert len((await room_of(stack.stub, new_id)).seats) == 2
    replay = await stack.stub.GetReplay(pb.GetReplayRequest(room_id=room_id))
    assert replay.events, "the finished game's replay stays"


async def test_a_rematch_needs_a_finished_game_and_a_seat(make_stack: MakeStack) -> None:
    stack = await make_stack()
    host = await stack.stub.CreateRoom(pb.CreateRoomRequest(name="지호", max_seats=2))
    await refused(
        stack.stub.Rematch(pb.RematchRequest(token=host.seat_token)),
        grpc.StatusCode.FAILED_PRECONDITION,
        "GAME_NOT_FINISHED",
    )
    room_id, _, _ = await _finished_game(stack)
    watcher = await stack.stub.Spectate(pb.SpectateRequest(room_id=room_id))
    await refused(
        stack.stub.Rematch(pb.RematchRequest(token=watcher.spectator_token)),
        grpc.StatusCode.PERMISSION_DENIED,
        "SPECTATOR_CANNOT_ACT",
    )
