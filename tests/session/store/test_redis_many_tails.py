"""Many subscribers on one replica: 150 waiting tails (over redis-py's default pool of 100) all get it."""

from __future__ import annotations

import asyncio

from ninetynine.session.store import StoredEvent, open_store

from .conftest import REDIS_URL
from .test_contract import bump, event, room

SUBSCRIBERS = 150


async def test_150_waiting_tails_all_get_the_next_event(redis_prefix: str) -> None:
    store = open_store(f"{REDIS_URL}?prefix={redis_prefix}")
    try:
        record = room()
        await store.create_room(record)

        async def first_event() -> StoredEvent:
            return await anext(store.tail("room-1", 0))

        waiting = [asyncio.create_task(first_event()) for _ in range(SUBSCRIBERS)]
        await asyncio.sleep(0.5)  # every tail is now waiting for a live event
        await store.commit("room-1", record.version, bump(record), [event(1)])
        got = await asyncio.wait_for(asyncio.gather(*waiting), timeout=20)
        assert [e.seq for e in got] == [1] * SUBSCRIBERS
    finally:
        await store.close()
