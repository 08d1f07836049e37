"""Redis-only behaviour: bounded event streams, typed unavailability, key layout, URL options."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
import redis.asyncio as aioredis

from ninetynine.session.store import (
    EventsTrimmed,
    InvalidStoreInput,
    RedisRoomStore,
    StoredEvent,
    StoreUnavailable,
    open_store,
)

from .conftest import REDIS_URL
from .test_contract import bump, event, room


async def test_trimmed_streams_report_the_oldest_seq_and_refuse_old_gaps(redis_prefix: str) -> None:
    store = open_store(f"{REDIS_URL}?prefix={redis_prefix}&maxlen=10")
    try:
        record = room()
        await store.create_room(record)
        # XADD MAXLEN ~ trims whole stream nodes (100 entries by default), so write well past that.
        for first in range(1, 401, 4):
            new = bump(record)
            await store.commit("room-1", record.version, new, [event(s) for s in range(first, first + 4)])
            record = new
        oldest = await store.oldest_event_seq("room-1")
        assert 1 < oldest <= 391
        retained = await store.read_events("room-1", 0, limit=10_000)
        assert [e.seq for e in retained] == list(range(oldest, 401))
        with pytest.raises(EventsTrimmed) as raised:
            await anext(store.tail("room-1", oldest - 2))
        assert raised.value.oldest_seq == oldest
        tail = store.tail("room-1", oldest - 1)
        async with contextlib.aclosing(tail):
            assert (await anext(tail)).seq == oldest
        # The seq keeps counting across trimming.
        await store.commit("room-1", record.version, bump(record), [event(401)])
        assert (await store.read_events("room-1", 400)) == [event(401)]
    finally:
        await store.close()


async def test_connection_errors_are_store_unavailable() -> None:
    # Nothing listens on port 1: every call must fail fast with the typed error, not a redis exception.
    store = open_store("redis://127.0.0.1:1/0?prefix=unreachable:")
    try:
        with pytest.raises(StoreUnavailable):
            await store.load_room("room-1")
        with pytest.raises(StoreUnavailable):
            await store.commit("room-1", 1, bump(room()), [])
        with pytest.raises(StoreUnavailable):
            await store.claim_due(0, "A", 1_000, 1)
        with pytest.raises(StoreUnavailable):
            await anext(store.tail("room-1", 0))
    finally:
        await store.close()


async def test_all_keys_live_under_the_prefix(redis_prefix: str) -> None:
    store = open_store(f"{REDIS_URL}?prefix={redis_prefix}")
    try:
        first = room(deadline_ms=1_000)
        await store.create_room(first, [event(1, audience="only", player_id="p1")])
        await store.commit("room-1", 1, bump(first, phase="playing"), [event(2)])
        await store.claim_due(1_000, "A", 5_000, 1)
    finally:
        await store.close()
    client = aioredis.Redis.from_url(REDIS_URL)
    try:
        keys = sorted([key.decode() async for key in client.scan_iter(match=f"{redis_prefix}*")])
        entries = await client.xrange(f"{redis_prefix}events:room-1")
    finally:
        await client.aclose()
    assert [key.removeprefix(redis_prefix) for key in keys] == [
        "claims",
        "deadline",
        "due",
        "events:room-1",
        "room:room-1",
        "rooms:all",
        "rooms:phase:playing",
    ]
    assert entries == [
        (b"1-0", {b"a": b"only", b"p": b"p1", b"d": b"e1"}),
        (b"2-0", {b"a": b"all", b"p": b"", b"d": b"e2"}),
    ]


async def test_tail_on_a_replica_sees_a_commit_made_while_it_blocks(redis_prefix: str) -> None:
    reader_name = f"{redis_prefix.replace(':', '-')}reader"
    writer = open_store(f"{REDIS_URL}?prefix={redis_prefix}")
    reader = open_store(f"{REDIS_URL}?prefix={redis_prefix}&client_name={reader_name}")
    observer = aioredis.Redis.from_url(REDIS_URL)
    try:
        await writer.create_room(room())
        tail = reader.tail("room-1", 0)
        async with contextlib.aclosing(tail):
            pending = asyncio.ensure_future(anext(tail))
            await asyncio.wait_for(blocked_in_xread(observer, reader_name), timeout=20)
            assert not pending.done()
            await writer.commit("room-1", 1, bump(room()), [StoredEvent(1, "all", "", b"x")])
            assert await asyncio.wait_for(pending, timeout=20) == StoredEvent(1, "all", "", b"x")
    finally:
        await writer.close()
        await reader.close()
        await observer.aclose()


async def blocked_in_xread(observer: aioredis.Redis, client_name: str) -> None:
    """Wait until the named connection is blocked in XREAD (seen from CLIENT LIST)."""
    while True:
        clients = await observer.client_list()
        if any(c["name"] == client_name and c["cmd"] == "xread" and "b" in c["flags"] for c in clients):
            return
        await asyncio.sleep(0.01)


def test_bad_redis_options_are_refused() -> None:
    with pytest.raises(InvalidStoreInput):
        RedisRoomStore.from_url(f"{REDIS_URL}?maxlen=lots")
    with pytest.raises(InvalidStoreInput):
        RedisRoomStore.from_url(f"{REDIS_URL}?maxlen=0")


async def test_errors_do_not_leak_the_redis_password() -> None:
    for url in ("redis://:hunter2@127.0.0.1:6379/0?maxlen=x", "memcached://:hunter2@127.0.0.1/0"):
        with pytest.raises(InvalidStoreInput) as raised:
            open_store(url)
        assert "hunter2" not in str(raised.value)
    store = open_store("redis://:hunter2@127.0.0.1:1/0")
    try:
        with pytest.raises(StoreUnavailable) as unavailable:
            await store.load_room("room-1")
        assert "hunter2" not in str(unavailable.value)
    finally:
        await store.close()


async def test_rooms_stored_before_the_idle_index_are_indexed_once(redis_prefix: str) -> None:
    store = open_store(f"{REDIS_URL}?prefix={redis_prefix}")
    client = aioredis.Redis.from_url(REDIS_URL)
    try:
        await store.create_room(room("old-lobby", created_at_ms=100))
        await store.create_room(room("old-finished", created_at_ms=200, phase="finished"))
        await store.create_room(room("old-game", created_at_ms=300, phase="playing"))
        # What a room written by the version without the index looks like: no 'uk', no index entry.
        for room_id in ("old-lobby", "old-finished", "old-game"):
            await client.hdel(f"{redis_prefix}room:{room_id}", "uk")
        await client.delete(f"{redis_prefix}rooms:idle:lobby", f"{redis_prefix}rooms:idle:finished")
        idle = {"updated_before_ms": 10**6, "after": "", "limit": 10}
        assert await store.idle_rooms(phase="lobby", **idle) == []  # type: ignore[arg-type]

        assert await store.prepare_expiry() == 3
        lobby = await store.idle_rooms(phase="lobby", **idle)  # type: ignore[arg-type]
        finished = await store.idle_rooms(phase="finished", **idle)  # type: ignore[arg-type]
        assert [r.room_id for r in lobby] == ["old-lobby"] and [r.room_id for r in finished] == [
            "old-finished"
        ]
        assert await store.prepare_expiry() == 0, "done once per store"
        # Indexed like any other room: deleted without leaving a key behind.
        for room_id in ("old-lobby", "old-finished", "old-game"):
            assert await store.delete_room(room_id, 1)
        left = [key async for key in client.scan_iter(match=f"{redis_prefix}*")]
        assert left == [f"{redis_prefix}idle-indexed".encode()]
    finally:
        await client.aclose()
        await store.close()


async def test_a_cancelled_store_call_ends_its_caller_at_once(redis_prefix: str) -> None:
    """A caller cancelled while its Redis call is in flight stops there with CancelledError.

    redis-py can lose such a cancellation (it surfaced as a SIGTERMed session replica whose room
    subscriptions, cancelled mid-read, went on forever and kept it from exiting). The call is
    tried at every point of its round trip: no cancellation may be lost.
    """
    store = open_store(f"{REDIS_URL}?prefix={redis_prefix}")
    try:
        await store.create_room(room())
        lost = 0
        trials = 300

        async def keep_loading(cancelled: asyncio.Event) -> None:
            nonlocal lost
            while True:
                await store.load_room("room-1")
                if cancelled.is_set():  # the load returned although its caller was cancelled
                    lost += 1
                    return

        for trial in range(trials):
            cancelled = asyncio.Event()
            task = asyncio.create_task(keep_loading(cancelled))
            for _ in range(trial % 12 + 1):  # somewhere along the round trip
                await asyncio.sleep(0)
            cancelled.set()
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        assert lost == 0, f"{lost} of {trials} cancellations lost"
    finally:
        await store.close()
