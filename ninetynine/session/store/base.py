"""The room store contract shared by the SQLite and Redis implementations.

A room is one record (``RoomRecord``: version, phase, listing fields, an opaque ``data`` document and the
current turn deadline) plus an append-only event log (``StoredEvent``, seq 1, 2, 3, ... per room).
Every change goes through ``RoomStore.commit``: a compare-and-set on the version that writes the new
record, appends its events and (re)sets or clears its deadline in one atomic, durable step.

Deadlines are claimed by exactly one caller at a time.  Internally both implementations keep one
"due at" time per room with a deadline: the deadline itself while unclaimed, the lease expiry while
claimed.  ``claim_due`` takes rooms whose due-at has passed and pushes it to ``now + lease``; a commit
puts it back to the record's new deadline (dropping the claim); ``release`` gives it back unchanged.

Page tokens of ``list_rooms`` are the same in both implementations: ``"<created_at_ms:015d>:<room_id>"``
of the last room returned (rooms are listed newest first, ties broken by room id, descending too).  The
next page holds the rooms whose key is below the token's, so a room created between two pages (its
key is above every token handed out) never shifts, repeats or hides an older one.

Expiry: ``idle_rooms`` finds the rooms of a phase that nothing changed since a cutoff (oldest change
first, from a cursor of the same shape: ``"<updated_at_ms:015d>:<room_id>"``), and ``delete_room``
removes one room with its events and deadline, only if its version is still the one the caller
checked: of several replicas sweeping the same store, exactly one deletes each room, and a room that
changed after it was picked stays.
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator, Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Final, Protocol, runtime_checkable

PHASES: Final = frozenset({"lobby", "playing", "finished"})
# What the lobby lists unless asked for one phase: rooms to join and games to watch.
LISTED_PHASES: Final = frozenset({"lobby", "playing"})
# Phases ``idle_rooms`` can search (a running game always has a deadline; it is never idle).
IDLE_PHASES: Final = frozenset({"lobby", "finished"})
AUDIENCES: Final = frozenset({"all", "only", "except"})
ROOM_ID_PATTERN: Final = re.compile(r"[A-Za-z0-9_-]{1,128}")
# created_at_ms is zero-padded to this width in list keys so that lexical order equals numeric order.
CREATED_AT_DIGITS: Final = 15
MAX_PAGE_SIZE: Final = 1000
MAX_READ_LIMIT: Final = 10_000


@dataclass(frozen=True)
class RoomRecord:
    room_id: str
    version: int  # bumps by exactly 1 on every commit; the compare-and-set key
    phase: str  # "lobby" | "playing" | "finished"
    mode: str
    seats_total: int
    seats_taken: int
    created_at_ms: int
    updated_at_ms: int
    data: bytes  # opaque to the store: the session's room document
    deadline_ms: int | None  # current turn deadline; None when no turn is running


@dataclass(frozen=True)
class StoredEvent:
    seq: int  # room event seq assigned by the session: contiguous per room, starting at 1
    audience: str  # "all" | "only" | "except"
    player_id: str  # whom "only"/"except" refers to; "" for "all"
    payload: bytes  # opaque to the store


class StoreError(Exception):
    """Base class of every error the store raises on purpose."""


class StoreUnavailable(StoreError):
    """The backing store cannot be reached or is busy; the operation may or may not be retried."""


class InvalidStoreInput(StoreError, ValueError):
    """The caller passed something the store refuses (bad id, record, event, page token, URL)."""


class RoomAlreadyExists(StoreError):
    def __init__(self, room_id: str) -> None:
        super().__init__(f"room {room_id!r} already exists")
        self.room_id = room_id


class RoomNotFound(StoreError):
    def __init__(self, room_id: str) -> None:
        super().__init__(f"room {room_id!r} does not exist")
        self.room_id = room_id


class VersionConflict(StoreError):
    """The stored version is not the one the commit was based on; nothing was written."""

    def __init__(self, room_id: str, expected_version: int, actual_version: int) -> None:
        super().__init__(
            f"room {room_id!r}: expected version {expected_version}, stored version is {actual_version}"
        )
        self.room_id = room_id
        self.expected_version = expected_version
        self.actual_version = actual_version


class EventsTrimmed(StoreError):
    """Events right after ``after_seq`` are no longer retained: the gap is too old to replay."""

    def __init__(self, room_id: str, after_seq: int, oldest_seq: int) -> None:
        super().__init__(
            f"room {room_id!r}: events after seq {after_seq} are gone (oldest retained is {oldest_seq})"
        )
        self.room_id = room_id
        self.after_seq = after_seq
        self.oldest_seq = oldest_seq


@runtime_checkable
class RoomStore(Protocol):
    async def create_room(self, record: RoomRecord, events: Sequence[StoredEvent] = ()) -> None:
        """Store a new room (and optionally its first events); ``RoomAlreadyExists`` if the id is taken."""
        ...

    async def load_room(self, room_id: str) -> RoomRecord | None: ...

    async def commit(
        self, room_id: str, expected_version: int, record: RoomRecord, events: Sequence[StoredEvent]
    ) -> None:
        """Atomically replace the record, append ``events`` and (re)set or clear the deadline.

        ``record.version`` must be ``expected_version + 1`` and ``events`` must continue the room's seq.
        Raises ``VersionConflict`` (nothing written) when the stored version differs, ``RoomNotFound``
        when there is no such room.  Durable when it returns.  Any commit drops a deadline claim.
        """
        ...

    async def read_events(self, room_id: str, after_seq: int, limit: int = 1000) -> list[StoredEvent]:
        """Retained events with seq > ``after_seq`` in seq order, at most ``limit``."""
        ...

    async def oldest_event_seq(self, room_id: str) -> int:
        """Seq of the oldest retained event (last seq + 1 when none is retained)."""
        ...

    def tail(self, room_id: str, after_seq: int) -> AsyncGenerator[StoredEvent, None]:
        """Every event with seq > ``after_seq``: the retained ones first, then live ones as committed.

        Raises ``EventsTrimmed`` if an event it should deliver is no longer retained.  Ends when the
        store is closed.
        """
        ...

    async def list_rooms(
        self, *, phases: Collection[str], page_size: int, page_token: str
    ) -> tuple[list[RoomRecord], str]:
        """One page of the rooms in ``phases`` (newest first) and the next token ("" = last page)."""
        ...

    async def idle_rooms(
        self, *, phase: str, updated_before_ms: int, after: str, limit: int
    ) -> list[RoomRecord]:
        """Rooms of ``phase`` (one of ``IDLE_PHASES``) last changed at or before ``updated_before_ms``,
        least recently changed first, starting past the cursor ``after`` (``idle_key`` of the last one
        seen; "" = from the start), at most ``limit``."""
        ...

    async def prepare_expiry(self) -> int:
        """Make rooms stored before ``idle_rooms`` existed visible to it; how many it had to add.

        Idempotent and safe to run on several replicas at once; cheap once done.
        """
        ...

    async def delete_room(self, room_id: str, expected_version: int) -> bool:
        """Delete the room, its events and its deadline if its version is ``expected_version``.

        True if this call deleted it; False (nothing written) when the room changed or is gone.
        """
        ...

    async def count_rooms(self) -> dict[str, int]:
        """How many rooms are in each phase (every phase present, 0 when none), for the rooms gauge."""
        ...

    async def claim_due(self, now_ms: int, owner: str, lease_ms: int, limit: int) -> list[tuple[str, int]]:
        """Claim up to ``limit`` rooms whose deadline (or expired lease) is at or before ``now_ms``.

        Returns ``(room_id, deadline_ms)``.  Each due deadline is handed to exactly one caller until its
        lease of ``lease_ms`` runs out, the claimer releases it, or a commit sets/clears the deadline.
        """
        ...

    async def release(self, room_id: str, owner: str) -> None:
        """Give back a claim held by ``owner`` so that the deadline is due again; no-op otherwise."""
        ...

    async def next_deadline_ms(self) -> int | None:
        """Earliest time at which ``claim_due`` may return something (a deadline or a lease expiry)."""
        ...

    async def close(self) -> None: ...


# --- validation shared by both implementations ---------------------------------------------------------


def check_room_id(room_id: str) -> None:
    if not isinstance(room_id, str) or not ROOM_ID_PATTERN.fullmatch(room_id):
        raise InvalidStoreInput(f"room id must be 1-128 characters of [A-Za-z0-9_-], got {room_id!r}")


def check_record(record: RoomRecord) -> None:
    check_room_id(record.room_id)
    if record.version < 0:
        raise InvalidStoreInput(f"version must be >= 0, got {record.version}")
    if record.phase not in PHASES:
        raise InvalidStoreInput(f"phase must be one of {sorted(PHASES)}, got {record.phase!r}")
    if not 0 <= record.seats_taken <= record.seats_total:
        raise InvalidStoreInput(
            f"seats_taken must be within 0..seats_total, got {record.seats_taken}/{record.seats_total}"
        )
    if not 0 <= record.created_at_ms < 10**CREATED_AT_DIGITS:
        raise InvalidStoreInput(f"created_at_ms out of range: {record.created_at_ms}")
    if not 0 <= record.updated_at_ms < 10**CREATED_AT_DIGITS:
        raise InvalidStoreInput(f"updated_at_ms out of range: {record.updated_at_ms}")
    if not isinstance(record.data, bytes):
        raise InvalidStoreInput("data must be bytes")
    if record.deadline_ms is not None and record.deadline_ms < 0:
        raise InvalidStoreInput(f"deadline_ms must be >= 0, got {record.deadline_ms}")


def check_events(events: Sequence[StoredEvent]) -> None:
    """Events of one commit must be contiguous among themselves; continuity with the log is checked
    atomically by the implementation."""
    for index, event in enumerate(events):
        if event.audience not in AUDIENCES:
            raise InvalidStoreInput(f"audience must be one of {sorted(AUDIENCES)}, got {event.audience!r}")
        if (event.audience == "all") != (event.player_id == ""):
            raise InvalidStoreInput("player_id must be empty exactly when the audience is 'all'")
        if not isinstance(event.payload, bytes):
            raise InvalidStoreInput("event payload must be bytes")
        if event.seq < 1 or (index > 0 and event.seq != events[index - 1].seq + 1):
            raise InvalidStoreInput(f"event seqs must be contiguous and >= 1, got {[e.seq for e in events]}")


def check_commit(room_id: str, expected_version: int, record: RoomRecord) -> None:
    check_record(record)
    if record.room_id != room_id:
        raise InvalidStoreInput(f"record is for room {record.room_id!r}, not {room_id!r}")
    if record.version != expected_version + 1:
        raise InvalidStoreInput(
            f"record version must be expected_version + 1 = {expected_version + 1}, got {record.version}"
        )


def check_seq(after_seq: int) -> None:
    if after_seq < 0:
        raise InvalidStoreInput(f"after_seq must be >= 0, got {after_seq}")


def check_read_limit(limit: int) -> None:
    if not 1 <= limit <= MAX_READ_LIMIT:
        raise InvalidStoreInput(f"limit must be within 1..{MAX_READ_LIMIT}, got {limit}")


def check_claim_args(owner: str, lease_ms: int, limit: int) -> None:
    if not owner:
        raise InvalidStoreInput("owner must be a non-empty string")
    if lease_ms <= 0:
        raise InvalidStoreInput(f"lease_ms must be > 0, got {lease_ms}")
    if limit < 1:
        raise InvalidStoreInput(f"limit must be >= 1, got {limit}")


def check_list_args(phases: Collection[str], page_size: int) -> list[str]:
    """The phase filter as a sorted list (one query per phase); refuses an empty or unknown one."""
    if isinstance(phases, str) or not phases or not set(phases) <= PHASES:
        raise InvalidStoreInput(f"phases must be a non-empty subset of {sorted(PHASES)}, got {phases!r}")
    if not 1 <= page_size <= MAX_PAGE_SIZE:
        raise InvalidStoreInput(f"page_size must be within 1..{MAX_PAGE_SIZE}, got {page_size}")
    return sorted(set(phases))


def check_idle_args(phase: str, updated_before_ms: int, after: str, limit: int) -> tuple[int, str] | None:
    """Validate ``idle_rooms``' arguments; the cursor as ``(updated_at_ms, room_id)`` or None."""
    if phase not in IDLE_PHASES:
        raise InvalidStoreInput(f"idle phase must be one of {sorted(IDLE_PHASES)}, got {phase!r}")
    if not 0 <= updated_before_ms < 10**CREATED_AT_DIGITS - 1:
        raise InvalidStoreInput(f"updated_before_ms out of range: {updated_before_ms}")
    if not 1 <= limit <= MAX_PAGE_SIZE:
        raise InvalidStoreInput(f"limit must be within 1..{MAX_PAGE_SIZE}, got {limit}")
    return parse_page_token(after)


def newest_first(per_phase: Iterable[Iterable[str]], page_size: int) -> tuple[list[str], str]:
    """Merge per-phase pages of list keys (each newest first, up to ``page_size + 1`` below the token)
    into the keys of one page and its next token: the stores read one index per phase and page over
    their union."""
    merged = sorted((key for keys in per_phase for key in keys), reverse=True)[: page_size + 1]
    next_token = merged[page_size - 1] if len(merged) > page_size else ""
    return merged[:page_size], next_token


def list_key(created_at_ms: int, room_id: str) -> str:
    """Sort key of a room in listings; also the page token pointing just past that room.

    ``idle_rooms`` cursors have the same shape, with the room's ``updated_at_ms``.
    """
    return f"{created_at_ms:0{CREATED_AT_DIGITS}d}:{room_id}"


def parse_page_token(page_token: str) -> tuple[int, str] | None:
    """``(created_at_ms, room_id)`` of the last room already returned, or None for the first page."""
    if page_token == "":
        return None
    created, sep, room_id = page_token.partition(":")
    if (
        not sep
        or len(created) != CREATED_AT_DIGITS
        # ASCII only: str.isdigit() also takes "²" (which int() refuses) and other scripts' digits
        # (which int() reads, so the token would not be the one list_key wrote).
        or not (created.isascii() and created.isdigit())
        or not ROOM_ID_PATTERN.fullmatch(room_id)
    ):
        raise InvalidStoreInput(f"malformed page token {page_token!r}")
    return int(created), room_id
