"""``RoomStore`` on one SQLite file: the embedded default for a single session process.

Tables (schema version kept in ``schema_migrations``; ``MIGRATIONS`` are applied in order on open):

- ``rooms``: one row per room — the ``RoomRecord`` columns, plus
  ``last_seq`` (seq of the last appended event), ``due_at_ms`` (deadline while unclaimed, lease expiry
  while claimed, NULL without a deadline) and ``claim_owner``.
  Indexes: ``rooms_due`` on ``due_at_ms`` (claims, next deadline), ``rooms_by_phase`` on
  ``(phase, created_at_ms, room_id)`` (listing: one backward range per phase) and ``rooms_idle`` on
  ``(phase, updated_at_ms, room_id)`` for the lobby and finished rooms only (expiry; a running game's
  every move would otherwise rewrite it).
- ``events``: ``(room_id, seq)`` primary key, ``audience``, ``player_id``, ``payload``; never trimmed,
  deleted with their room (``delete_room``).

Durability: the file runs in WAL mode and every write is one ``BEGIN IMMEDIATE`` transaction (record +
events + deadline together).  ``synchronous=FULL`` is the default: in WAL mode it fsyncs the WAL on each
transaction, so an acknowledged move survives a power loss or OS crash, not only a killed process.

Group commit: ``commit`` calls that arrive while the worker is busy (another group's fsync, a read) are
queued and written together in one transaction, hence one fsync for many rooms' moves.  Each commit runs
in its own SAVEPOINT, so a ``VersionConflict`` or refused input rolls back that commit alone, and every
caller is answered only after the shared COMMIT returned (durable).  ``commit_transactions`` and
``commits_applied`` count them (commits per fsync).  ``?synchronous=normal`` trades that for speed
(a process crash still loses nothing; a power loss may drop the last commits).

Checkpoints: SQLite's automatic WAL checkpoint would run inside the COMMIT that crosses 1000 WAL pages,
on the worker thread, copying pages to the main file and (``synchronous=FULL``) fsyncing it while every
queued commit waits.  The writer connection therefore has ``wal_autocheckpoint=0`` and a checkpointer
thread with its own connection runs ``PRAGMA wal_checkpoint(PASSIVE)`` (never waits for the writer, never
blocks it) after commits, at most once per ``checkpoint_interval_s``.  Durability does not depend on it:
a commit is durable once its WAL frames are synced; the checkpoint only keeps the WAL short.
``checkpoints`` and ``checkpoint_seconds_max`` count them.

All SQLite calls run on one dedicated worker thread per store, so the event loop never blocks on disk.
Live ``tail`` notifications are in-process: a commit wakes the tails of the same store object, so one
process should own the file (several store objects on one file stay consistent, they just do not see
each other's commits live).  The wake-up carries the committed events, so every tail of the room
(one per subscriber) takes them from memory instead of each reading them back from the file; a tail
that fell behind the last commit reads from the file as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncGenerator, Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Final, TypeVar

from ninetynine.session.store.base import (
    CREATED_AT_DIGITS,
    PHASES,
    EventsTrimmed,
    InvalidStoreInput,
    RoomAlreadyExists,
    RoomNotFound,
    RoomRecord,
    StoredEvent,
    StoreError,
    StoreUnavailable,
    VersionConflict,
    check_claim_args,
    check_commit,
    check_events,
    check_idle_args,
    check_list_args,
    check_read_limit,
    check_record,
    check_room_id,
    check_seq,
    list_key,
    newest_first,
    parse_page_token,
)

T = TypeVar("T")

MIGRATIONS: Final[tuple[str, ...]] = (
    # 1: rooms, events, indexes
    """
    CREATE TABLE rooms (
        room_id       TEXT PRIMARY KEY,
        version       INTEGER NOT NULL,
        phase         TEXT NOT NULL,
        mode          TEXT NOT NULL,
        seats_total   INTEGER NOT NULL,
        seats_taken   INTEGER NOT NULL,
        created_at_ms INTEGER NOT NULL,
        updated_at_ms INTEGER NOT NULL,
        data          BLOB NOT NULL,
        deadline_ms   INTEGER,
        last_seq      INTEGER NOT NULL DEFAULT 0,
        due_at_ms     INTEGER,
        claim_owner   TEXT
    );
    CREATE INDEX rooms_due ON rooms (due_at_ms) WHERE due_at_ms IS NOT NULL;
    CREATE INDEX rooms_by_phase ON rooms (phase, created_at_ms, room_id);
    CREATE INDEX rooms_by_created ON rooms (created_at_ms, room_id);
    CREATE TABLE events (
        room_id   TEXT NOT NULL,
        seq       INTEGER NOT NULL,
        audience  TEXT NOT NULL,
        player_id TEXT NOT NULL,
        payload   BLOB NOT NULL,
        PRIMARY KEY (room_id, seq)
    ) WITHOUT ROWID;
    """,
    # 2: expiry's index; listing goes through rooms_by_phase (newest first, per phase)
    """
    CREATE INDEX rooms_idle ON rooms (phase, updated_at_ms, room_id) WHERE phase IN ('lobby', 'finished');
    DROP INDEX rooms_by_created;
    """,
)

# The scheduler's queries run on every wake-up (every commit): both must stay on the partial index
# ``rooms_due``, so they repeat its ``IS NOT NULL`` (a bare MIN() scans the table: ~8 ms at 10,000
# rooms, on the one worker thread every commit waits for). tests/session/store checks the plans.
NEXT_DEADLINE_SQL: Final = "SELECT MIN(due_at_ms) FROM rooms WHERE due_at_ms IS NOT NULL"
CLAIM_DUE_SQL: Final = (
    "SELECT room_id, deadline_ms FROM rooms WHERE due_at_ms IS NOT NULL AND due_at_ms <= ?"
    " ORDER BY due_at_ms, room_id LIMIT ?"
)

# One phase's page of a listing, newest first, below the page token (the first page starts below
# (10**15, ""), above every room). It must stay a backward search of rooms_by_phase: no scan, no sort.
LIST_PHASE_SQL: Final = (
    "SELECT {columns} FROM rooms WHERE phase = ? AND (created_at_ms, room_id) < (?, ?)"
    " ORDER BY created_at_ms DESC, room_id DESC LIMIT ?"
)
# Expiry's candidates: repeats the partial index's condition so that rooms_idle is usable.
IDLE_ROOMS_SQL: Final = (
    "SELECT {columns} FROM rooms WHERE phase IN ('lobby', 'finished') AND phase = ?"
    " AND (updated_at_ms, room_id) > (?, ?) AND updated_at_ms <= ?"
    " ORDER BY updated_at_ms, room_id LIMIT ?"
)

_ROOM_COLUMNS: Final = (
    "room_id, version, phase, mode, seats_total, seats_taken, created_at_ms, updated_at_ms, data, deadline_ms"
)
_SYNCHRONOUS_MODES: Final = frozenset({"full", "normal", "extra"})
_TAIL_BATCH: Final = 500
# Rooms whose last committed events are kept for their tails (each holds one commit's events).
_RECENT_ROOMS: Final = 20_000


@dataclass(frozen=True, slots=True)
class _PendingCommit:
    """A ``commit`` call waiting for the next group transaction on the worker thread."""

    loop: asyncio.AbstractEventLoop
    done: asyncio.Future[None]
    room_id: str
    expected_version: int
    record: RoomRecord
    events: tuple[StoredEvent, ...]


def _record_from_row(row: tuple[object, ...]) -> RoomRecord:
    room_id, version, phase, mode, seats_total, seats_taken, created, updated, data, deadline = row
    assert isinstance(room_id, str) and isinstance(phase, str) and isinstance(mode, str)
    assert isinstance(version, int) and isinstance(seats_total, int) and isinstance(seats_taken, int)
    assert isinstance(created, int) and isinstance(updated, int) and isinstance(data, bytes)
    assert deadline is None or isinstance(deadline, int)
    return RoomRecord(
        room_id, version, phase, mode, seats_total, seats_taken, created, updated, data, deadline
    )


def _event_rows(room_id: str, events: Sequence[StoredEvent]) -> list[tuple[str, int, str, str, bytes]]:
    return [(room_id, e.seq, e.audience, e.player_id, e.payload) for e in events]


def _migrate(conn: sqlite3.Connection) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            " version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP)"
        )
        (current,) = conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").fetchone()
        if current > len(MIGRATIONS):
            raise StoreUnavailable(
                f"database schema version {current} is newer than this program ({len(MIGRATIONS)})"
            )
        for version in range(current + 1, len(MIGRATIONS) + 1):
            # executescript would COMMIT first; run the statements one by one inside our transaction.
            for statement in MIGRATIONS[version - 1].split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute("INSERT INTO schema_migrations (version) VALUES (?)", (version,))
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


class SqliteRoomStore:
    """A ``RoomStore`` backed by one SQLite database file (see the module docstring for the layout)."""

    def __init__(
        self,
        path: str,
        *,
        synchronous: str = "full",
        busy_timeout_ms: int = 5000,
        checkpoint_interval_s: float = 1.0,
    ) -> None:
        if synchronous.lower() not in _SYNCHRONOUS_MODES:
            raise InvalidStoreInput(f"synchronous must be one of {sorted(_SYNCHRONOUS_MODES)}")
        if busy_timeout_ms < 0:
            raise InvalidStoreInput("busy_timeout_ms must be >= 0")
        if not checkpoint_interval_s >= 0:
            raise InvalidStoreInput("checkpoint_interval_s must be >= 0")
        self.path = path
        directory = os.path.dirname(os.path.abspath(path))
        try:
            os.makedirs(directory, exist_ok=True)
        except OSError as exc:
            raise StoreUnavailable(f"cannot create the directory of SQLite store {path!r}: {exc}") from exc
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite-room-store")
        self._closed = False
        self._waiters: dict[str, set[asyncio.Event]] = {}
        # room id -> the events of its last commit seen on the loop (for the tails, see _from_recent)
        self._recent: OrderedDict[str, tuple[StoredEvent, ...]] = OrderedDict()
        # Group commit: commit() queues here; one job on the worker writes the whole queue at once.
        self._pending_lock = threading.Lock()
        self._pending: list[_PendingCommit] = []
        self._group_scheduled = False
        # Counted on the worker thread, read by tests and benchmarks: commits per fsync.
        self.commit_transactions = 0
        self.commits_applied = 0
        # Counted on the checkpointer thread: PASSIVE checkpoints run and the longest one.
        self.checkpoints = 0
        self.checkpoint_seconds_max = 0.0
        try:
            self._conn = self._executor.submit(
                self._connect, path, synchronous.upper(), busy_timeout_ms / 1000
            ).result()
        except sqlite3.Error as exc:
            self._executor.shutdown(wait=False)
            raise StoreUnavailable(f"cannot open SQLite store {path!r}: {exc}") from exc
        # The checkpointer: woken after writes, checkpoints from its own connection (see the docstring).
        self._checkpoint_interval_s = checkpoint_interval_s
        self._checkpoint_wanted = threading.Event()
        self._checkpoint_stop = threading.Event()
        # Serializes the checkpoint connection between the checkpointer, checkpoint() and close().
        self._checkpoint_lock = threading.Lock()
        try:
            self._checkpoint_conn = sqlite3.connect(
                path, timeout=busy_timeout_ms / 1000, isolation_level=None, check_same_thread=False
            )
            self._checkpoint_conn.execute(f"PRAGMA synchronous={synchronous.upper()}")
        except sqlite3.Error as exc:
            self._executor.submit(self._conn.close).result()
            self._executor.shutdown(wait=False)
            raise StoreUnavailable(f"cannot open SQLite store {path!r}: {exc}") from exc
        self._checkpointer = threading.Thread(
            target=self._checkpoint_loop, name="sqlite-room-store-checkpoint", daemon=True
        )
        self._checkpointer.start()

    @staticmethod
    def _connect(path: str, synchronous: str, busy_timeout_s: float) -> sqlite3.Connection:
        # isolation_level=None: we issue BEGIN IMMEDIATE/COMMIT ourselves, so a write takes the lock up
        # front instead of failing half-way when another connection writes too.
        conn = sqlite3.connect(path, timeout=busy_timeout_s, isolation_level=None, check_same_thread=False)
        try:
            (mode,) = conn.execute("PRAGMA journal_mode=WAL").fetchone()
            if str(mode).lower() != "wal":
                raise StoreUnavailable(f"SQLite refused WAL mode for {path!r} (got {mode!r})")
            conn.execute(f"PRAGMA synchronous={synchronous}")
            # Checkpoints run on the checkpointer thread, never inside a commit (module docstring).
            conn.execute("PRAGMA wal_autocheckpoint=0")
            _migrate(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    # --- plumbing ------------------------------------------------------------------------------------

    def _checkpoint_loop(self) -> None:
        """Checkpointer thread: one PASSIVE checkpoint per burst of writes, at most one per interval."""
        while True:
            self._checkpoint_wanted.wait()
            if self._checkpoint_stop.is_set():
                return
            self._checkpoint_wanted.clear()
            self._checkpoint_now()
            if self._checkpoint_stop.wait(self._checkpoint_interval_s):
                return

    def _checkpoint_now(self) -> tuple[int, int, int] | None:
        """One PASSIVE checkpoint: ``(busy, wal_frames, checkpointed_frames)``, None if SQLite refused.

        PASSIVE copies what it can without waiting for the writer or readers; what it leaves is taken
        by the next one.  A failure (I/O error, another connection checkpointing) only leaves the WAL
        longer; commits are already durable in it.
        """
        with self._checkpoint_lock:
            started = time.perf_counter()
            try:
                row = self._checkpoint_conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            except sqlite3.Error:  # also: the connection is already closed
                return None
            elapsed = time.perf_counter() - started
            self.checkpoints += 1
            self.checkpoint_seconds_max = max(self.checkpoint_seconds_max, elapsed)
        busy, frames, checkpointed = row
        return int(busy), int(frames), int(checkpointed)

    def _wrote(self) -> None:
        """On the worker thread after a COMMIT: ask the checkpointer for a checkpoint."""
        self._checkpoint_wanted.set()

    async def checkpoint(self) -> tuple[int, int, int] | None:
        """Run a PASSIVE checkpoint now (off the loop); see ``_checkpoint_now``."""
        if self._closed:
            raise StoreUnavailable("the room store is closed")
        return await asyncio.get_running_loop().run_in_executor(None, self._checkpoint_now)

    async def _run(self, fn: Callable[..., T], *args: object) -> T:
        if self._closed:
            raise StoreUnavailable("the room store is closed")
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._executor, functools.partial(fn, *args))
        except sqlite3.OperationalError as exc:  # locked past busy timeout, I/O error, disk full, ...
            raise StoreUnavailable(f"SQLite store {self.path!r}: {exc}") from exc

    def _write(self, body: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``body`` in one immediate transaction on the worker thread; roll back on any error."""
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            result = body(conn)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        self._wrote()
        return result

    def _notify_from_thread(
        self, loop: asyncio.AbstractEventLoop, room_id: str, events: tuple[StoredEvent, ...]
    ) -> None:
        # Called on the worker thread right after COMMIT, so tails wake even if the committing
        # coroutine was cancelled while it waited. One worker thread commits, so the loop sees the
        # commits of a room in seq order.
        # RuntimeError: the loop is already closed, nobody is left to wake.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(self._wake, room_id, events)

    def _wake(self, room_id: str, events: tuple[StoredEvent, ...]) -> None:
        self._recent[room_id] = events
        self._recent.move_to_end(room_id)
        if len(self._recent) > _RECENT_ROOMS:
            self._recent.popitem(last=False)
        for event in self._waiters.get(room_id, ()):
            event.set()

    def _from_recent(self, room_id: str, cursor: int) -> list[StoredEvent] | None:
        """The events after ``cursor`` from the room's last commit, or None when a read is needed.

        Exact only because every commit of this store reaches ``_wake`` in order: when the cursor
        sits inside or at the end of the last commit seen, nothing committed and notified is
        missing, and a commit not yet notified will wake the (already registered) tail.
        """
        recent = self._recent.get(room_id)
        if not recent or not recent[0].seq - 1 <= cursor <= recent[-1].seq:
            return None
        return [event for event in recent if event.seq > cursor]

    # --- RoomStore -----------------------------------------------------------------------------------

    async def create_room(self, record: RoomRecord, events: Sequence[StoredEvent] = ()) -> None:
        check_record(record)
        check_events(events)
        if events and events[0].seq != 1:
            raise InvalidStoreInput(f"the first event of a room must have seq 1, got {events[0].seq}")
        await self._run(self._create_sync, asyncio.get_running_loop(), record, tuple(events))

    def _create_sync(
        self, loop: asyncio.AbstractEventLoop, record: RoomRecord, events: tuple[StoredEvent, ...]
    ) -> None:
        def body(conn: sqlite3.Connection) -> None:
            try:
                conn.execute(
                    f"INSERT INTO rooms ({_ROOM_COLUMNS}, last_seq, due_at_ms)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        record.room_id,
                        record.version,
                        record.phase,
                        record.mode,
                        record.seats_total,
                        record.seats_taken,
                        record.created_at_ms,
                        record.updated_at_ms,
                        record.data,
                        record.deadline_ms,
                        events[-1].seq if events else 0,
                        record.deadline_ms,
                    ),
                )
            except sqlite3.IntegrityError as exc:
                raise RoomAlreadyExists(record.room_id) from exc
            conn.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?)", _event_rows(record.room_id, events))

        self._write(body)
        if events:
            self._notify_from_thread(loop, record.room_id, events)

    async def load_room(self, room_id: str) -> RoomRecord | None:
        check_room_id(room_id)
        return await self._run(self._load_sync, room_id)

    def _load_sync(self, room_id: str) -> RoomRecord | None:
        row = self._conn.execute(
            f"SELECT {_ROOM_COLUMNS} FROM rooms WHERE room_id = ?", (room_id,)
        ).fetchone()
        return None if row is None else _record_from_row(row)

    async def commit(
        self, room_id: str, expected_version: int, record: RoomRecord, events: Sequence[StoredEvent]
    ) -> None:
        check_commit(room_id, expected_version, record)
        check_events(events)
        if self._closed:
            raise StoreUnavailable("the room store is closed")
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        with self._pending_lock:
            self._pending.append(_PendingCommit(loop, done, room_id, expected_version, record, tuple(events)))
            start_group = not self._group_scheduled
            self._group_scheduled = True
        if start_group:
            # The worker is FIFO: commits queued while this group waits behind other work join it.
            self._executor.submit(self._commit_group_sync)
        # A cancelled caller does not un-write its commit: the group goes ahead, its outcome is dropped.
        await done

    def _commit_group_sync(self) -> None:
        """Write every pending commit in one transaction (one fsync); each keeps its own outcome.

        Each commit runs inside its own SAVEPOINT, so a ``VersionConflict`` or bad input rolls back that
        commit only. The callers learn their outcome after the shared COMMIT, i.e. once it is durable.
        """
        with self._pending_lock:
            group, self._pending = self._pending, []
            self._group_scheduled = False
        conn = self._conn
        outcomes: list[BaseException | None] = []
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                for pending in group:
                    conn.execute("SAVEPOINT one_commit")
                    try:
                        self._apply_commit(conn, pending)
                    except (StoreError, sqlite3.IntegrityError) as exc:
                        conn.execute("ROLLBACK TO one_commit")
                        outcomes.append(exc)
                    else:
                        outcomes.append(None)
                    conn.execute("RELEASE one_commit")
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        except sqlite3.OperationalError as exc:  # locked past busy timeout, I/O error, disk full, ...
            failure: BaseException = StoreUnavailable(f"SQLite store {self.path!r}: {exc}")
            outcomes = [failure] * len(group)
        except BaseException as exc:  # noqa: BLE001 - handed to every caller of the group as it is
            outcomes = [exc] * len(group)
        else:
            self.commit_transactions += 1
            self.commits_applied += sum(outcome is None for outcome in outcomes)
            self._wrote()
        by_loop: dict[asyncio.AbstractEventLoop, list[tuple[_PendingCommit, BaseException | None]]] = {}
        for pending, outcome in zip(group, outcomes, strict=True):
            by_loop.setdefault(pending.loop, []).append((pending, outcome))
        for loop, results in by_loop.items():
            # RuntimeError: the loop is already closed, nobody is left to wake.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._settle_group, results)

    def _settle_group(self, results: list[tuple[_PendingCommit, BaseException | None]]) -> None:
        """On the loop: answer the callers, and wake the tails of every committed room (in commit
        order) one callback later.

        The order decides who runs first. The committing coroutines go first, so that what they
        record about their commit (the session's room cache, its fan-out clock) is in place before
        the subscribers read the new events. The tails wake one callback later, so that whatever
        a committer hands on in its turn (the PlayMany writer that sends the mover's answer) runs
        before the room's subscribers build their views: otherwise every move's answer waited for
        its own room's fan-out (≈ 0.6 ms measured at zero load)."""
        for pending, outcome in results:
            if pending.done.cancelled():
                continue
            if outcome is None:
                pending.done.set_result(None)
            else:
                pending.done.set_exception(outcome)
        asyncio.get_running_loop().call_soon(self._wake_committed, results)

    def _wake_committed(self, results: list[tuple[_PendingCommit, BaseException | None]]) -> None:
        for pending, outcome in results:
            if outcome is None and pending.events:
                self._wake(pending.room_id, pending.events)

    @staticmethod
    def _apply_commit(conn: sqlite3.Connection, pending: _PendingCommit) -> None:
        room_id, expected_version, record, events = (
            pending.room_id,
            pending.expected_version,
            pending.record,
            pending.events,
        )
        row = conn.execute(
            "SELECT version, created_at_ms, last_seq FROM rooms WHERE room_id = ?", (room_id,)
        ).fetchone()
        if row is None:
            raise RoomNotFound(room_id)
        version, created_at_ms, last_seq = row
        if version != expected_version:
            raise VersionConflict(room_id, expected_version, version)
        if created_at_ms != record.created_at_ms:
            raise InvalidStoreInput(f"room {room_id!r}: created_at_ms cannot change")
        if events and events[0].seq != last_seq + 1:
            raise InvalidStoreInput(
                f"room {room_id!r}: next event seq must be {last_seq + 1}, got {events[0].seq}"
            )
        conn.execute(
            "UPDATE rooms SET version = ?, phase = ?, mode = ?, seats_total = ?, seats_taken = ?,"
            " updated_at_ms = ?, data = ?, deadline_ms = ?, last_seq = ?,"
            " due_at_ms = ?, claim_owner = NULL WHERE room_id = ?",
            (
                record.version,
                record.phase,
                record.mode,
                record.seats_total,
                record.seats_taken,
                record.updated_at_ms,
                record.data,
                record.deadline_ms,
                events[-1].seq if events else last_seq,
                record.deadline_ms,
                room_id,
            ),
        )
        conn.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?)", _event_rows(room_id, events))

    async def read_events(self, room_id: str, after_seq: int, limit: int = 1000) -> list[StoredEvent]:
        check_room_id(room_id)
        check_seq(after_seq)
        check_read_limit(limit)
        return await self._run(self._read_events_sync, room_id, after_seq, limit)

    def _read_events_sync(self, room_id: str, after_seq: int, limit: int) -> list[StoredEvent]:
        rows = self._conn.execute(
            "SELECT seq, audience, player_id, payload FROM events"
            " WHERE room_id = ? AND seq > ? ORDER BY seq LIMIT ?",
            (room_id, after_seq, limit),
        ).fetchall()
        return [StoredEvent(seq, audience, player_id, payload) for seq, audience, player_id, payload in rows]

    async def oldest_event_seq(self, room_id: str) -> int:
        check_room_id(room_id)
        oldest, _last = await self._run(self._seq_bounds_sync, room_id)
        return oldest

    def _seq_bounds_sync(self, room_id: str) -> tuple[int, int]:
        """(oldest retained seq or last+1, last seq) read in one snapshot."""
        row = self._conn.execute(
            "SELECT last_seq, (SELECT MIN(seq) FROM events WHERE room_id = ?) FROM rooms WHERE room_id = ?",
            (room_id, room_id),
        ).fetchone()
        if row is None:
            raise RoomNotFound(room_id)
        last_seq, oldest = row
        return (last_seq + 1 if oldest is None else oldest), last_seq

    async def tail(self, room_id: str, after_seq: int) -> AsyncGenerator[StoredEvent, None]:
        check_room_id(room_id)
        check_seq(after_seq)
        oldest, last_seq = await self._run(self._seq_bounds_sync, room_id)
        if after_seq > last_seq:
            raise InvalidStoreInput(
                f"room {room_id!r}: after_seq {after_seq} is past the last seq {last_seq}"
            )
        if after_seq + 1 < oldest:
            raise EventsTrimmed(room_id, after_seq, oldest)
        cursor = after_seq
        while not self._closed:
            wake = asyncio.Event()
            # Register before reading, so a commit landing between the read and the wait still wakes us.
            self._waiters.setdefault(room_id, set()).add(wake)
            try:
                batch = self._from_recent(room_id, cursor)
                if batch is None:
                    batch = await self.read_events(room_id, cursor, _TAIL_BATCH)
                if not batch:
                    await wake.wait()
            finally:
                waiters = self._waiters.get(room_id)
                if waiters is not None:
                    waiters.discard(wake)
                    if not waiters:
                        del self._waiters[room_id]
            for event in batch:
                if event.seq != cursor + 1:
                    raise EventsTrimmed(room_id, cursor, event.seq)
                cursor = event.seq
                yield event

    async def list_rooms(
        self, *, phases: Collection[str], page_size: int, page_token: str
    ) -> tuple[list[RoomRecord], str]:
        phase_list = check_list_args(phases, page_size)
        before = parse_page_token(page_token) or (10**CREATED_AT_DIGITS, "")
        return await self._run(self._list_sync, phase_list, page_size, before)

    def _list_sync(
        self, phases: list[str], page_size: int, before: tuple[int, str]
    ) -> tuple[list[RoomRecord], str]:
        sql = LIST_PHASE_SQL.format(columns=_ROOM_COLUMNS)
        conn = self._conn
        by_key: dict[str, RoomRecord] = {}
        per_phase: list[list[str]] = []
        # One read transaction: a room changing phase between the per-phase reads is seen once.
        conn.execute("BEGIN")
        try:
            for phase in phases:
                records = map(_record_from_row, conn.execute(sql, (phase, *before, page_size + 1)))
                keyed = {list_key(record.created_at_ms, record.room_id): record for record in records}
                by_key.update(keyed)
                per_phase.append(list(keyed))
        finally:
            conn.execute("COMMIT")
        keys, next_token = newest_first(per_phase, page_size)
        return [by_key[key] for key in keys], next_token

    async def idle_rooms(
        self, *, phase: str, updated_before_ms: int, after: str, limit: int
    ) -> list[RoomRecord]:
        cursor = check_idle_args(phase, updated_before_ms, after, limit) or (-1, "")
        return await self._run(self._idle_sync, phase, updated_before_ms, cursor, limit)

    def _idle_sync(
        self, phase: str, updated_before_ms: int, cursor: tuple[int, str], limit: int
    ) -> list[RoomRecord]:
        rows = self._conn.execute(
            IDLE_ROOMS_SQL.format(columns=_ROOM_COLUMNS), (phase, *cursor, updated_before_ms, limit)
        ).fetchall()
        return [_record_from_row(row) for row in rows]

    async def delete_room(self, room_id: str, expected_version: int) -> bool:
        check_room_id(room_id)
        deleted = await self._run(self._delete_sync, room_id, expected_version)
        if deleted:
            self._recent.pop(room_id, None)
        return deleted

    def _delete_sync(self, room_id: str, expected_version: int) -> bool:
        def body(conn: sqlite3.Connection) -> bool:
            gone = conn.execute(
                "DELETE FROM rooms WHERE room_id = ? AND version = ?", (room_id, expected_version)
            ).rowcount
            if gone:
                conn.execute("DELETE FROM events WHERE room_id = ?", (room_id,))
            return bool(gone)

        return self._write(body)

    async def prepare_expiry(self) -> int:
        return 0  # rooms_idle indexes every row, old ones included

    async def count_rooms(self) -> dict[str, int]:
        return await self._run(self._count_sync)

    def _count_sync(self) -> dict[str, int]:
        counts = dict.fromkeys(sorted(PHASES), 0)
        for phase, count in self._conn.execute("SELECT phase, COUNT(*) FROM rooms GROUP BY phase"):
            counts[phase] = count
        return counts

    async def claim_due(self, now_ms: int, owner: str, lease_ms: int, limit: int) -> list[tuple[str, int]]:
        check_claim_args(owner, lease_ms, limit)
        return await self._run(self._claim_sync, now_ms, owner, lease_ms, limit)

    def _claim_sync(self, now_ms: int, owner: str, lease_ms: int, limit: int) -> list[tuple[str, int]]:
        def body(conn: sqlite3.Connection) -> list[tuple[str, int]]:
            due: list[tuple[str, int]] = conn.execute(CLAIM_DUE_SQL, (now_ms, limit)).fetchall()
            conn.executemany(
                "UPDATE rooms SET due_at_ms = ?, claim_owner = ? WHERE room_id = ?",
                [(now_ms + lease_ms, owner, room_id) for room_id, _ in due],
            )
            return due

        return self._write(body)

    async def release(self, room_id: str, owner: str) -> None:
        check_room_id(room_id)
        await self._run(self._release_sync, room_id, owner)

    def _release_sync(self, room_id: str, owner: str) -> None:
        def body(conn: sqlite3.Connection) -> None:
            conn.execute(
                "UPDATE rooms SET due_at_ms = deadline_ms, claim_owner = NULL"
                " WHERE room_id = ? AND claim_owner = ?",
                (room_id, owner),
            )

        self._write(body)

    async def next_deadline_ms(self) -> int | None:
        return await self._run(self._next_deadline_sync)

    def _next_deadline_sync(self) -> int | None:
        (earliest,) = self._conn.execute(NEXT_DEADLINE_SQL).fetchone()
        assert earliest is None or isinstance(earliest, int)
        return earliest

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for waiters in self._waiters.values():
            for event in waiters:
                event.set()
        loop = asyncio.get_running_loop()
        self._checkpoint_stop.set()
        self._checkpoint_wanted.set()
        await loop.run_in_executor(None, self._checkpointer.join)
        with self._checkpoint_lock:
            self._checkpoint_conn.close()
        # Closing the last connection checkpoints the rest of the WAL (on the worker, after all writes).
        await loop.run_in_executor(self._executor, self._conn.close)
        self._executor.shutdown(wait=True)
