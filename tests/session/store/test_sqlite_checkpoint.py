"""SQLite checkpoints run on the store's checkpointer thread, never inside a commit.

A writer connection with SQLite's automatic checkpoint would copy the WAL into the main file (and
fsync it) in the COMMIT that crosses 1000 WAL pages, and then start the WAL over, so the WAL file
would never grow much past 4 MB. These tests write far more than that and look at the files.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from ninetynine.session.store import SqliteRoomStore

from .test_contract import bump, event, room

PAYLOAD = b"x" * 20_000  # one event: ~5 pages of 4 KiB
COMMITS = 400  # ~8 MB written in all, twice what the automatic checkpoint lets the WAL reach


async def write_a_lot(store: SqliteRoomStore, room_id: str) -> None:
    record = room(room_id)
    await store.create_room(record)
    for seq in range(1, COMMITS + 1):
        new = bump(record)
        await store.commit(room_id, record.version, new, [event(seq, PAYLOAD)])
        record = new


async def test_commits_leave_checkpoints_to_the_checkpointer(tmp_path: Path) -> None:
    path = str(tmp_path / "rooms.db")
    # A checkpointer that runs once and then sleeps for an hour: only checkpoint() moves the WAL.
    store = SqliteRoomStore(path, checkpoint_interval_s=3600)
    try:
        await write_a_lot(store, "big")
        wal_bytes = os.path.getsize(path + "-wal")
        assert wal_bytes > 6_000_000  # the writer never checkpointed and restarted the WAL

        result = await store.checkpoint()
        assert result is not None
        busy, frames, checkpointed = result
        assert busy == 0 and frames == checkpointed > 0
        assert os.path.getsize(path) > 6_000_000  # the events are in the main file now

        # The WAL starts over after a complete checkpoint instead of growing to twice the size.
        await write_a_lot(store, "more")
        assert os.path.getsize(path + "-wal") < 1.5 * wal_bytes
    finally:
        await store.close()

    reopened = SqliteRoomStore(path)
    try:
        for room_id in ("big", "more"):
            stored = await reopened.load_room(room_id)
            assert stored is not None and stored.version == 1 + COMMITS
            events = await reopened.read_events(room_id, 0, limit=COMMITS)
            assert [e.seq for e in events] == list(range(1, COMMITS + 1))
            assert all(e.payload == PAYLOAD for e in events)
    finally:
        await reopened.close()


async def test_the_checkpointer_copies_commits_to_the_main_file_unasked(tmp_path: Path) -> None:
    path = str(tmp_path / "rooms.db")
    store = SqliteRoomStore(path, checkpoint_interval_s=0.05)
    try:
        await write_a_lot(store, "big")
        # No checkpoint() call: the checkpointer thread was woken by the commits.
        for _ in range(200):
            if os.path.getsize(path) > 6_000_000:
                break
            await asyncio.sleep(0.05)
        assert os.path.getsize(path) > 6_000_000
        assert store.checkpoints > 0
    finally:
        await store.close()
