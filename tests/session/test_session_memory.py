"""A long-running replica does not keep every room it ever served: finished rooms leave the cache
of rooms in play for a small one of their own, and the per-room locks go with them. Finished
rooms stay fully readable (results, replays) from the store."""

from __future__ import annotations

import asyncio

from ninetynine.session.v1 import session_service_pb2 as pb
from tests.session.helpers import wait_finished

GAMES = 12


async def _bot_game(stub: object) -> str:
    host = await stub.CreateRoom(pb.CreateRoomRequest(name="A", max_seats=3))  # type: ignore[attr-defined]
    for _ in range(2):
        await stub.AddBot(pb.AddBotRequest(token=host.seat_token))  # type: ignore[attr-defined]
    await stub.StartGame(pb.StartGameRequest(token=host.seat_token))  # type: ignore[attr-defined]
    await wait_finished(stub, host.room.room_id)  # type: ignore[arg-type]
    return str(host.room.room_id)


async def test_finished_rooms_leave_the_cache_and_their_locks_go_with_them(make_stack) -> None:
    stack = await make_stack()  # bots think 20 ms, the host's turns time out fast
    rooms = stack.rooms
    rooms.cache._finished_size = 4
    room_ids = await asyncio.gather(*(_bot_game(stack.stub) for _ in range(GAMES)))
    await asyncio.sleep(0.2)  # presence and view work after the last moves
    assert not set(room_ids) & set(rooms.cache._cache), "no finished room among the rooms in play"
    assert len(rooms.cache._finished_rooms) <= 4
    assert len(rooms.cache._locks) <= 4 + len(rooms.cache._cache), (
        f"{len(rooms.cache._locks)} locks for {GAMES} finished rooms"
    )
    for room_id in room_ids:  # evicted or not, every finished room is still served from the store
        result = await stack.stub.GetResult(pb.GetResultRequest(room_id=room_id))
        assert result.result.winner
