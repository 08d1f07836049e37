"""Expiry through the real session service: abandoned waiting rooms go, finished rooms keep their
replay for the retention period and then go, and replicas on Redis delete each room once."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import grpc
import grpc.aio
import pytest

from ninetynine.session.v1 import session_service_pb2 as pb
from tests.session.conftest import Stack
from tests.session.helpers import eventually, refused, sample, wait_finished

C = grpc.StatusCode
MakeStack = Callable[..., Awaitable[Stack]]
EXPIRED = "ninetynine_session_rooms_expired_total"
IDLE_S = 0.4


async def _gone(stack: Stack, room_id: str) -> bool:
    try:
        await stack.stub.GetRoom(pb.GetRoomRequest(room_id=room_id))
    except grpc.aio.AioRpcError as err:
        assert err.code() == C.NOT_FOUND, err
        return True
    return False


async def _listed(stack: Stack) -> set[str]:
    page = await stack.stub.ListRooms(pb.ListRoomsRequest(page_size=100))
    return {room.room_id for room in page.rooms}


async def test_an_abandoned_waiting_room_expires_but_not_one_a_player_waits_in(make_stack: MakeStack) -> None:
    stack = await make_stack(lobby_idle_expiry_s=IDLE_S)
    abandoned = await stack.stub.CreateRoom(pb.CreateRoomRequest(name="떠난사람", max_seats=4))
    waiting = await stack.stub.CreateRoom(pb.CreateRoomRequest(name="기다림", max_seats=4))
    stream = stack.stub.Subscribe(pb.SubscribeRequest(token=waiting.seat_token, after_seq=0))
    async for item in stream:  # the host's client is connected (its presence is recorded)
        if item.HasField("view"):
            break
    abandoned_id, waiting_id = abandoned.room.room_id, waiting.room.room_id

    await eventually(lambda: _gone(stack, abandoned_id), timeout=30)
    assert abandoned_id not in await _listed(stack)
    assert await stack.rooms.store.read_events(abandoned_id, 0) == [], "its event log went with it"
    await asyncio.sleep(IDLE_S * 2)  # long past the idle time: the waiting host keeps the room
    await stack.rooms.expiry.sweep()
    assert waiting_id in await _listed(stack)
    await refused(
        stack.stub.JoinRoom(pb.JoinRoomRequest(room_id=abandoned_id, name="늦은손님")),
        C.NOT_FOUND,
        "ROOM_NOT_FOUND",
    )

    stream.cancel()  # the tab closes: the room is abandoned from now on
    await eventually(lambda: _gone(stack, waiting_id), timeout=30)
    assert sample(stack.registry, EXPIRED, {"reason": "lobby_idle"}) == 2
    assert sample(stack.registry, EXPIRED, {"reason": "finished_retention"}) == 0


async def test_a_finished_room_keeps_its_replay_until_the_retention_ends(make_stack: MakeStack) -> None:
    retention_s = 3.0
    stack = await make_stack(time_scale=0.005, finished_retention_s=retention_s)
    host = await stack.stub.CreateRoom(pb.CreateRoomRequest(name="A", max_seats=2))
    room_id = host.room.room_id
    await stack.stub.AddBot(pb.AddBotRequest(token=host.seat_token))
    await stack.stub.StartGame(pb.StartGameRequest(token=host.seat_token))
    await wait_finished(stack.stub, room_id)  # the host's turns run on the (compressed) deadline

    replay = await stack.stub.GetReplay(pb.GetReplayRequest(room_id=room_id))
    assert replay.events and replay.moves
    assert (await stack.stub.GetResult(pb.GetResultRequest(room_id=room_id))).result.ranking

    async def replay_gone() -> bool:
        try:
            await stack.stub.GetReplay(pb.GetReplayRequest(room_id=room_id))
        except grpc.aio.AioRpcError as err:
            assert err.code() == C.NOT_FOUND, err
            return True
        return False

    await eventually(replay_gone, timeout=30)
    await refused(stack.stub.GetResult(pb.GetResultRequest(room_id=room_id)), C.NOT_FOUND, "ROOM_NOT_FOUND")
    assert await stack.rooms.store.read_events(room_id, 0) == []
    assert sample(stack.registry, EXPIRED, {"reason": "finished_retention"}) == 1


async def test_replicas_sharing_a_store_expire_each_room_once(make_stack: MakeStack) -> None:
    first = await make_stack(lobby_idle_expiry_s=IDLE_S)
    if first.rooms.store_kind != "redis":
        pytest.skip("one process owns an SQLite file; only replicas on Redis share a store")
    replicas = [first, await make_stack(lobby_idle_expiry_s=IDLE_S)]
    created = await asyncio.gather(
        *(
            replicas[i % 2].stub.CreateRoom(pb.CreateRoomRequest(name=f"방{i}", max_seats=2))
            for i in range(30)
        )
    )
    ids = {c.room.room_id for c in created}

    async def all_gone() -> bool:
        return not ids & await _listed(replicas[0])

    await eventually(all_gone, timeout=30)
    total = sum(sample(r.registry, EXPIRED, {"reason": "lobby_idle"}) for r in replicas)
    assert total == len(ids)
