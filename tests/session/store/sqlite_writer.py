"""Child process for the crash test: commits moves to a SQLite store and prints each acknowledged version.

Run as ``python -m tests.session.store.sqlite_writer sqlite:///path/rooms.db``; it commits until killed.
"""

from __future__ import annotations

import asyncio
import sys

from ninetynine.session.store import RoomRecord, StoredEvent, open_store


async def write_forever(url: str) -> None:
    store = open_store(url)
    record = RoomRecord("crash-room", 1, "playing", "kr-product", 4, 4, 1_000, 1_000, b"v1", 10_000)
    await store.create_room(record)
    print(1, flush=True)
    while True:
        version = record.version + 1
        record = RoomRecord(
            "crash-room",
            version,
            "playing",
            "kr-product",
            4,
            4,
            1_000,
            1_000 + version,
            f"state {version}".encode() * 50,
            10_000 + version,
        )
        await store.commit("crash-room", version - 1, record, [StoredEvent(version - 1, "all", "", b"move")])
        # Acknowledge only after commit() returned: this line is the promise the test checks.
        print(version, flush=True)


if __name__ == "__main__":
    asyncio.run(write_forever(sys.argv[1]))
