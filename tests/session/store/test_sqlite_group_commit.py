"""SQLite group commit: concurrent commits share one transaction (one fsync), each with its own outcome.

The store's worker is held up for real: another connection holds SQLite's write lock, so the commits
fired meanwhile queue up behind the first group. Releasing the lock lets them through.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from ninetynine.session.store import (
    InvalidStoreInput,
    RoomNotFound,
    SqliteRoomStore,
    StoredEvent,
    VersionConflict,
)

from .test_contract import bump, event, room

ROOMS = 40


@pytest.fixture
async def sqlite_store(tmp_path: Path) -> AsyncIterator[SqliteRoomStore]:
    store = SqliteRoomStore(str(tmp_path / "rooms.db"))
    yield store
    await store.close()


@contextmanager
def write_lock_held(path: str) -> Iterator[None]:
    """Hold the database's write lock from another connection, as another writer would."""
    other = sqlite3.connect(path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        yield
        other.execute("ROLLBACK")
    finally:
        other.close()


async def all_enqueued() -> None:
    # commit() queues itself before its first await, so one turn of the loop queues every started task.
    for _ in range(3):
        await asyncio.sleep(0)


async def test_concurrent_commits_to_many_rooms_share_transactions(sqlite_store: SqliteRoomStore) -> None:
    records = [room(f"room-{i}") for i in range(ROOMS)]
    for record in records:
        await sqlite_store.create_room(record)
    transactions_before = sqlite_store.commit_transactions

    with write_lock_held(sqlite_store.path):
        commits = [
            asyncio.create_task(sqlite_store.commit(r.room_id, r.version, bump(r), [event(1)]))
            for r in records
        ]
        await all_enqueued()
        assert not any(task.done() for task in commits)  # nobody acknowledged before a COMMIT
    await asyncio.gather(*commits)

    # The first group may have started with only the first commit; everything else waited together.
    assert sqlite_store.commit_transactions - transactions_before <= 2
    assert sqlite_store.commits_applied == ROOMS
    for record in records:
        stored = await sqlite_store.load_room(record.room_id)
        assert stored is not None and stored.version == record.version + 1
        assert await sqlite_store.read_events(record.room_id, 0) == [event(1)]


async def test_a_refused_commit_does_not_fail_the_others_in_its_group(
    sqlite_store: SqliteRoomStore,
) -> None:
    records = [room(f"room-{i}") for i in range(6)]
    for record in records:
        await sqlite_store.create_room(record)
    fine, stale, bad_seq, changed_created, twice = records[0], records[1], records[2], records[3], records[4]
    tail = sqlite_store.tail(fine.room_id, 0)
    first_event = asyncio.create_task(anext(tail))

    with write_lock_held(sqlite_store.path):
        # A commit first, so that every commit below is queued while it waits for the lock.
        opener = asyncio.create_task(sqlite_store.commit(records[5].room_id, 1, bump(records[5]), [event(1)]))
        await all_enqueued()
        outcomes = asyncio.gather(
            sqlite_store.commit(fine.room_id, 1, bump(fine), [event(1, b"kept")]),
            sqlite_store.commit(stale.room_id, 0, bump(stale, version=1), [event(1)]),
            sqlite_store.commit(bad_seq.room_id, 1, bump(bad_seq), [event(5)]),
            sqlite_store.commit(
                changed_created.room_id, 1, bump(changed_created, created_at_ms=1), [event(1)]
            ),
            sqlite_store.commit("no-such-room", 1, bump(room("no-such-room")), [event(1)]),
            sqlite_store.commit(twice.room_id, 1, bump(twice), [event(1)]),
            sqlite_store.commit(twice.room_id, 2, bump(bump(twice)), [event(2)]),
            # The same version again, queued after it: loses the compare-and-set inside the group.
            sqlite_store.commit(twice.room_id, 2, bump(bump(twice), data=b"lost"), [event(3)]),
            return_exceptions=True,
        )
        await all_enqueued()
    await opener
    results = await outcomes
    transactions = sqlite_store.commit_transactions

    assert results[0] is None
    assert isinstance(results[1], VersionConflict)
    assert isinstance(results[2], InvalidStoreInput)
    assert isinstance(results[3], InvalidStoreInput)
    assert isinstance(results[4], RoomNotFound)
    assert results[5] is None and results[6] is None
    assert isinstance(results[7], VersionConflict) and results[7].actual_version == 3
    assert transactions <= 2  # the opener's group and, at most, one more for the eight commits

    fine_now = await sqlite_store.load_room(fine.room_id)
    assert fine_now == bump(fine)
    assert await first_event == StoredEvent(1, "all", "", b"kept")  # the tail was woken from the group
    for untouched in (stale, bad_seq, changed_created):
        assert await sqlite_store.load_room(untouched.room_id) == untouched
        assert await sqlite_store.read_events(untouched.room_id, 0) == []
    assert await sqlite_store.load_room("no-such-room") is None
    twice_now = await sqlite_store.load_room(twice.room_id)
    assert twice_now == bump(bump(twice))
    assert await sqlite_store.read_events(twice.room_id, 0) == [event(1), event(2)]
    await tail.aclose()


async def test_a_group_survives_reopening(tmp_path: Path) -> None:
    path = str(tmp_path / "rooms.db")
    store = SqliteRoomStore(path)
    records = [room(f"room-{i}") for i in range(10)]
    for record in records:
        await store.create_room(record)
    with write_lock_held(path):
        commits = [
            asyncio.create_task(store.commit(r.room_id, 1, bump(r, phase="playing"), [event(1), event(2)]))
            for r in records
        ]
        await all_enqueued()
    await asyncio.gather(*commits)
    await store.close()

    reopened = SqliteRoomStore(path)
    try:
        for record in records:
            assert await reopened.load_room(record.room_id) == bump(record, phase="playing")
            assert await reopened.read_events(record.room_id, 0) == [event(1), event(2)]
    finally:
        await reopened.close()


async def test_what_a_committer_hands_on_runs_before_the_rooms_tails_wake(
    sqlite_store: SqliteRoomStore,
) -> None:
    """The mover's answer goes out before the room's fan-out: a task the committing coroutine
    wakes right after its commit (as PlayMany wakes the writer that sends the answer) runs before
    the room's tails see the new event, so the answer does not wait for every subscriber's view."""
    record = room()
    await sqlite_store.create_room(record)
    await sqlite_store.commit(record.room_id, record.version, bump(record), [event(1)])
    record = bump(record)
    order: list[str] = []
    tail = sqlite_store.tail(record.room_id, 0)
    assert await anext(tail) == event(1)  # from here on the tail waits on the commits' wake-ups

    async def subscriber() -> None:
        await anext(tail)
        order.append("tail")

    handed_on: asyncio.Queue[str] = asyncio.Queue()

    async def writer() -> None:
        order.append(await handed_on.get())

    tasks = [asyncio.create_task(subscriber()), asyncio.create_task(writer())]
    await all_enqueued()  # both are waiting: the tail registered, the writer on its queue
    await sqlite_store.commit(record.room_id, record.version, bump(record), [event(2)])
    handed_on.put_nowait("answer")
    await asyncio.gather(*tasks)
    await tail.aclose()

    assert order == ["answer", "tail"]
