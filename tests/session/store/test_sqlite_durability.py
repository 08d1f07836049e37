"""SQLite-only behaviour: crash durability with a real SIGKILL, schema migrations, URL handling."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from ninetynine.session.store import InvalidStoreInput, SqliteRoomStore, StoreUnavailable, open_store
from ninetynine.session.store.sqlite_store import MIGRATIONS

REPO_ROOT = Path(__file__).resolve().parents[3]


def test_every_acknowledged_commit_survives_sigkill(tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path}/crash/rooms.db"
    for kill_after in (1, 17, 60):
        (tmp_path / "crash").mkdir(exist_ok=True)
        for leftover in (tmp_path / "crash").iterdir():
            leftover.unlink()
        child = subprocess.Popen(
            [sys.executable, "-m", "tests.session.store.sqlite_writer", url],
            cwd=REPO_ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None
        acknowledged = 0
        try:
            while acknowledged < kill_after:
                line = child.stdout.readline()
                assert line, f"writer exited early with {child.wait()}"
                acknowledged = int(line)
            # Kill the instant the acknowledgement is read: no chance for a clean shutdown.
            os.kill(child.pid, signal.SIGKILL)
        finally:
            child.kill()
            child.wait()
            child.stdout.close()
        assert child.returncode == -signal.SIGKILL

        async def reopen(acknowledged: int) -> None:
            store = open_store(url)
            try:
                record = await store.load_room("crash-room")
                assert record is not None
                assert record.version >= acknowledged
                # The record and its events were written together: the log ends exactly at this version.
                events = await store.read_events("crash-room", 0, limit=10_000)
                assert [e.seq for e in events] == list(range(1, record.version))
                assert record.data == (
                    f"state {record.version}".encode() * 50 if record.version > 1 else b"v1"
                )
                assert await store.next_deadline_ms() == record.deadline_ms
            finally:
                await store.close()

        asyncio.run(reopen(acknowledged))


async def test_reopening_keeps_data_and_schema_version(tmp_path: Path) -> None:
    path = tmp_path / "rooms.db"
    first = SqliteRoomStore(str(path))
    await first.close()
    second = SqliteRoomStore(str(path))
    await second.close()
    with sqlite3.connect(path) as conn:
        versions = [row[0] for row in conn.execute("SELECT version FROM schema_migrations ORDER BY version")]
        (journal_mode,) = conn.execute("PRAGMA journal_mode").fetchone()
    assert versions == list(range(1, len(MIGRATIONS) + 1))
    assert journal_mode == "wal"


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "rooms.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT)")
        conn.execute("INSERT INTO schema_migrations (version) VALUES (?)", (len(MIGRATIONS) + 1,))
    with pytest.raises(StoreUnavailable, match="newer"):
        SqliteRoomStore(str(path))


def test_open_store_creates_directories_and_checks_the_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def open_and_close(url: str) -> None:
        await open_store(url).close()

    asyncio.run(open_and_close(f"sqlite://{tmp_path}/a/b/c/rooms.db?synchronous=normal"))
    assert (tmp_path / "a/b/c/rooms.db").is_file()
    monkeypatch.chdir(tmp_path)
    asyncio.run(open_and_close("sqlite:relative/rooms.db"))
    assert (tmp_path / "relative/rooms.db").is_file()
    for bad in (
        "sqlite://host/rooms.db",
        f"sqlite://{tmp_path}/",
        f"sqlite://{tmp_path}/x.db?synchronous=sometimes",
        f"sqlite://{tmp_path}/x.db?journal=off",
        "postgres://localhost/rooms",
    ):
        with pytest.raises(InvalidStoreInput):
            open_store(bad)


def test_an_unwritable_location_is_reported_as_unavailable(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(StoreUnavailable):
        open_store(f"sqlite://{blocker}/rooms.db")
