"""Redis tails share one waiting connection per store, and a tail that falls behind loses nothing."""

from __future__ import annotations

import asyncio
import contextlib

import redis.asyncio as aioredis

from ninetynine.session.store import RoomRecord, RoomStore, StoredEvent, open_store

from .conftest import REDIS_URL
from .test_contract import bump, event, room

ROOMS = 50
TAILS_PER_ROOM = 6
# The shared XREAD plus the few replay reads a burst of new tails may run at once.
HANDFUL_OF_CONNECTIONS = 6


async def collect(store: RoomStore, room_id: str, into: asyncio.Queue[StoredEvent]) -> None:
    async for stored in store.tail(room_id, 0):
        await into.put(stored)


def live(room_id: str, seq: int) -> StoredEvent:
    return event(seq, f"{room_id}/{seq}".encode())


async def take(queue: asyncio.Queue[StoredEvent], count: int) -> list[int]:
    # wait_for only guards against a hang; nothing here asserts on timing.
    return [(await asyncio.wait_for(queue.get(), timeout=30)).seq for _ in range(count)]


async def connections_named(client_name: str) -> int:
    observer = aioredis.Redis.from_url(REDIS_URL)
    try:
        return sum(1 for c in await observer.client_list() if c["name"] == client_name)
    finally:
        await observer.aclose()


async def test_300_tails_over_50_rooms_share_a_handful_of_connections(redis_prefix: str) -> None:
    reader_name = f"{redis_prefix.replace(':', '-')}reader"
    writer = open_store(f"{REDIS_URL}?prefix={redis_prefix}")
    reader = open_store(f"{REDIS_URL}?prefix={redis_prefix}&client_name={reader_name}")
    room_ids = [f"room-{n}" for n in range(ROOMS)]
    records: dict[str, RoomRecord] = {}
    tasks: list[asyncio.Task[None]] = []
    try:
        for room_id in room_ids:
            records[room_id] = room(room_id)
            await writer.create_room(records[room_id], [event(1)])
        queues = {
            (room_id, n): asyncio.Queue[StoredEvent]() for room_id in room_ids for n in range(TAILS_PER_ROOM)
        }
        tasks = [asyncio.create_task(collect(reader, room_id, q)) for (room_id, _n), q in queues.items()]
        # Event 1 is replayed, so every tail is registered with the shared reader after this.
        for queue in queues.values():
            assert await take(queue, 1) == [1]

        # Another replica commits; each room's tails get exactly their room's events.
        for room_id in room_ids:
            new = bump(records[room_id])
            await writer.commit(room_id, records[room_id].version, new, [live(room_id, 2), live(room_id, 3)])
            records[room_id] = new
        for (room_id, _n), queue in queues.items():
            got = [await asyncio.wait_for(queue.get(), timeout=30) for _ in range(2)]
            assert got == [live(room_id, 2), live(room_id, 3)]
            assert queue.empty()

        open_connections = await connections_named(reader_name)
        assert 1 <= open_connections <= HANDFUL_OF_CONNECTIONS, open_connections
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await writer.close()
        await reader.close()


async def test_a_tail_that_falls_far_behind_still_gets_every_event_once(redis_prefix: str) -> None:
    writer = open_store(f"{REDIS_URL}?prefix={redis_prefix}")
    reader = open_store(f"{REDIS_URL}?prefix={redis_prefix}")
    try:
        record = room()
        await writer.create_room(record, [event(1)])
        slow = reader.tail("room-1", 0)
        async with contextlib.aclosing(slow):
            assert (await anext(slow)).seq == 1  # registered; now it stops reading for a while
            keeping_up: asyncio.Queue[StoredEvent] = asyncio.Queue()
            fast = asyncio.create_task(collect(reader, "room-1", keeping_up))
            try:
                assert await take(keeping_up, 1) == [1]
                # Far more than a tail may keep queued, committed while the slow one does not read.
                last = 1
                for _ in range(30):
                    new = bump(record)
                    await writer.commit(
                        "room-1", record.version, new, [event(s) for s in range(last + 1, last + 101)]
                    )
                    record, last = new, last + 100
                # Once the fast tail has the last event, the reader has offered all of them to the slow one.
                assert await take(keeping_up, last - 1) == list(range(2, last + 1))
                assert [
                    (await asyncio.wait_for(anext(slow), timeout=30)).seq for _ in range(last - 1)
                ] == list(range(2, last + 1))
                new = bump(record)
                await writer.commit("room-1", record.version, new, [event(last + 1)])
                assert (await asyncio.wait_for(anext(slow), timeout=30)).seq == last + 1
            finally:
                fast.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await fast
    finally:
        await writer.close()
        await reader.close()
