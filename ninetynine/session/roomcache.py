"""Rooms in memory and the commit pipeline: the one way a room changes.

Every change to a room goes through :meth:`RoomCache.mutate`: under the room's lock it loads the
document, lets a step function change it (calling the engine where a move is involved), numbers
the new events, recomputes the turn deadline (:class:`~ninetynine.session.deadlines.TurnClock`)
and commits record + events + deadline in one compare-and-set. Only then is anything
acknowledged, so a crash can never leave a move half-written; a lost race with another replica
(``VersionConflict``) simply reloads and runs the step again (``client_seq`` keeps that
idempotent).

The cache holds the rooms as last read or written by this replica (:class:`Loaded`). With one
process on SQLite it is the truth; replicas sharing Redis read the store before every change.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from ninetynine.common.logging import get_logger
from ninetynine.common.wire import first_payload
from ninetynine.engine.v1 import events_pb2, state_pb2
from ninetynine.session import games, rooms
from ninetynine.session.enginecalls import state_key
from ninetynine.session.errors import session_error
from ninetynine.session.metrics import SessionMetrics
from ninetynine.session.store.base import (
    InvalidStoreInput,
    RoomNotFound,
    RoomRecord,
    RoomStore,
    StoredEvent,
    StoreUnavailable,
    VersionConflict,
)
from ninetynine.session.v1 import room_document_pb2 as doc_pb
from ninetynine.session.v1 import session_service_pb2 as pb

if TYPE_CHECKING:
    from ninetynine.session.deadlines import TurnClock

log = get_logger(__name__)

# How long a move waits for its first local subscriber before it stops counting for the fan-out
# latency histogram (a room nobody on this replica watches).
FANOUT_WAIT_S = 10.0
MAX_COMMIT_ATTEMPTS = 5

_AUDIENCE = {
    events_pb2.AUDIENCE_ALL: "all",
    events_pb2.AUDIENCE_ONLY: "only",
    events_pb2.AUDIENCE_EXCEPT: "except",
}

T = TypeVar("T")

_DOC_STATE = doc_pb.RoomDocument.DESCRIPTOR.fields_by_name["state"].number


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def phase_name(doc: doc_pb.RoomDocument) -> str:
    return rooms.PHASE_NAMES.get(doc.phase, "lobby")


def mode_of(doc: doc_pb.RoomDocument) -> str:
    """The rule set the room plays, as its game's entry names it (the store's and metrics' label)."""
    return games.of(doc).mode(doc)


@dataclass(slots=True)
class Loaded:
    """A room as read from (or just written to) the store."""

    record: RoomRecord
    doc: doc_pb.RoomDocument
    # The game state decoded from ``doc.state``, on first use (views, the bot's move, results), and
    # handed on to the next version while the game does not move: decoded once per move.
    game: object | None = None
    spectators: frozenset[bytes] | None = None  # the spectators' token hashes, built on first use

    def game_state(self) -> object:
        """The decoded game, which only the room's entry of :mod:`ninetynine.session.games` reads."""
        if self.game is None:
            self.game = games.of(self.doc).decode(self.doc)
        return self.game

    def state_wire(self) -> bytes | None:
        """``doc.state`` as committed: its bytes inside ``record.data``, found without a parse."""
        return first_payload(self.record.data, _DOC_STATE)

    def holds(self, caller: rooms.Caller, digest: bytes) -> bool:
        """Whether the token hashing to ``digest`` still acts for ``caller`` in this version."""
        if caller.player_id is not None:
            return rooms.seat_holds(self.doc, caller.player_id, digest)
        if self.spectators is None:
            self.spectators = frozenset(rooms.spectator_hashes(self.doc))
        return digest in self.spectators


@dataclass(slots=True)
class Step:
    """What a step function produced: new events (engine ones keep their audience)."""

    events: list[tuple[pb.RoomEvent, str, str]] = field(default_factory=list)
    source: str = ""  # how a move was made: player | timeout | bot (its card_played and metrics)
    force_deadline: bool = False

    def add(self, event: pb.RoomEvent, audience: str = "all", player_id: str = "") -> None:
        self.events.append((event, audience, player_id))

    def add_game(self, events: Iterable[events_pb2.Event]) -> None:
        """Add the engine's events; the move's ``card_played`` carries how it was made (``source``)."""
        for ev in events:
            audience = _AUDIENCE.get(ev.audience, "all")
            event = pb.RoomEvent(game=ev)
            if self.source and ev.HasField("card_played"):
                event.source = self.source
            self.add(event, audience, ev.player_id if audience != "all" else "")


StepFn = Callable[[doc_pb.RoomDocument, int], Awaitable[Step | None]]


class NoChange(Exception):
    """A step decided there is nothing to write (e.g. a duplicate Play); carries the answer."""

    def __init__(self, answer: object) -> None:
        self.answer = answer


class RoomCache:
    """The rooms this replica holds, their locks, and :meth:`mutate`."""

    def __init__(self, store: RoomStore, store_kind: str, metrics: SessionMetrics, clock: TurnClock) -> None:
        self.store = store
        self.store_kind = store_kind
        self.authoritative = store_kind == "sqlite"
        self.metrics = metrics
        self.clock = clock
        self._locks: dict[str, asyncio.Lock] = {}
        # Rooms in play (and in the lobby), most recently used last. Finished rooms move to a small
        # cache of their own: they are read for a moment after the last move (views, results),
        # then rarely, and a long-running replica would otherwise fill the cache with them.
        self._cache: OrderedDict[str, Loaded] = OrderedDict()
        self._cache_size = 20_000
        self._finished_rooms: OrderedDict[str, Loaded] = OrderedDict()
        self._finished_size = 512
        # Moves waiting for their first local subscriber to deliver them (fan-out latency); moves
        # nobody here watches are dropped after FANOUT_WAIT_S (the soak showed a slow creep when
        # they were kept up to a count instead).
        self._fanout_pending: OrderedDict[tuple[str, int], tuple[float, str, str]] = OrderedDict()
        # Wakes the deadline scheduler: set by a commit whose deadline comes before the one it
        # waits for (await_deadline), which then takes the earliest deadline committed here
        # since it last looked (take_sooner_deadline).
        self.changed = asyncio.Event()
        self._sooner_deadline_ms: int | None = None
        self._awaited_deadline_ms: int | None = None

    def take_sooner_deadline(self) -> int | None:
        """The earliest deadline committed by this replica since the last call (None: none)."""
        sooner, self._sooner_deadline_ms = self._sooner_deadline_ms, None
        return sooner

    def await_deadline(self, deadline_ms: int | None) -> None:
        """The scheduler waits for ``deadline_ms`` (None: for no known one): :attr:`changed` is
        set by a commit whose deadline comes before it, and by no other commit."""
        self._awaited_deadline_ms = deadline_ms

    def lock(self, room_id: str) -> asyncio.Lock:
        lock = self._locks.get(room_id)
        if lock is None:
            lock = self._locks[room_id] = asyncio.Lock()
        return lock

    def remember(self, loaded: Loaded) -> None:
        room_id = loaded.record.room_id
        if loaded.doc.phase == pb.ROOM_PHASE_FINISHED:
            self._cache.pop(room_id, None)
            cache, size = self._finished_rooms, self._finished_size
        else:
            cache, size = self._cache, self._cache_size
        cache[room_id] = loaded
        cache.move_to_end(room_id)
        while len(cache) > size:
            evicted, _ = cache.popitem(last=False)
            self.forget_lock(evicted)

    def cached(self, room_id: str) -> Loaded | None:
        return self._cache.get(room_id) or self._finished_rooms.get(room_id)

    def forget_lock(self, room_id: str) -> None:
        # An idle lock of a room no longer cached goes too (one per room ever played, otherwise).
        # Should a caller still be about to take it, a new one may be made meanwhile: the store's
        # version check still orders the two commits (the later one reloads and runs again).
        lock = self._locks.get(room_id)
        if lock is not None and not lock.locked():
            del self._locks[room_id]

    def forget_room(self, room_id: str) -> None:
        self._cache.pop(room_id, None)
        self._finished_rooms.pop(room_id, None)

    async def store_call(self, op: str, awaitable: Awaitable[T]) -> T:
        try:
            return await awaitable
        except StoreUnavailable as err:
            self.metrics.store_errors.labels(self.store_kind, op).inc()
            log.warning("store unavailable", op=op, error=str(err))
            raise session_error("STORE_UNAVAILABLE") from err

    async def load(self, room_id: str, *, fresh: bool = False) -> Loaded:
        if not fresh:
            cached = self.cached(room_id)
            if cached is not None:
                return cached
        try:
            record = await self.store_call("load", self.store.load_room(room_id))
        except InvalidStoreInput:
            record = None
        if record is None:
            raise session_error("ROOM_NOT_FOUND", roomId=room_id[:16])
        cached = self.cached(room_id)
        if (
            cached is not None
            and cached.record.version == record.version
            and cached.record.data == record.data
        ):
            # What this replica already holds (it wrote or read this version): keep its decoded
            # document and game state instead of decoding them again.
            self.remember(cached)
            return cached
        loaded = Loaded(record, doc_pb.RoomDocument.FromString(record.data))
        self.remember(loaded)
        return loaded

    def game_at(self, room_id: str, doc: doc_pb.RoomDocument) -> object:
        """The decoded game of ``doc`` (a step's copy of the room), the cached room's if it is that state."""
        cached = self.cached(room_id)
        if (
            cached is not None
            and cached.doc.HasField("state")
            and state_key(cached.doc.state) == state_key(doc.state)
        ):
            return cached.game_state()
        return games.of(doc).decode(doc)

    def wire_at(self, room_id: str, state: state_pb2.State) -> bytes | None:
        """The committed bytes of ``state`` (a step's copy of the cached room's), so that it goes to the
        engine without being encoded again; ``None`` when the cached room holds another state."""
        cached = self.cached(room_id)
        if cached is None or not cached.doc.HasField("state"):
            return None
        if state_key(cached.doc.state) != state_key(state):
            return None
        return cached.state_wire()

    async def current(self, room_id: str, seq: int) -> Loaded:
        """The room as of event ``seq`` or later: the cached copy unless it is older."""
        loaded = self.cached(room_id)
        if loaded is None or loaded.doc.last_seq < seq:
            loaded = await self.load(room_id, fresh=True)
        return loaded

    async def mutate(self, room_id: str, step_fn: StepFn) -> tuple[Loaded, Step]:
        """Run ``step_fn`` on a copy of the room and commit it atomically (see the module doc)."""
        async with self.lock(room_id):
            # With one process on SQLite the cache is the truth; replicas on Redis must read first.
            fresh = not self.authoritative
            for _ in range(MAX_COMMIT_ATTEMPTS):
                current = await self.load(room_id, fresh=fresh)
                doc = doc_pb.RoomDocument()
                doc.CopyFrom(current.doc)
                received = time.perf_counter()
                now = now_ms()
                step = await step_fn(doc, now)
                if step is None:
                    return current, Step()
                if step.events:
                    step.events[-1][0].batch_end = True
                # The deadline first: the turnStarted among the events announces it.
                self.clock.set_deadline(doc, now, force=step.force_deadline)
                self.clock.announce(doc, (event for event, _, _ in step.events))
                stored: list[StoredEvent] = []
                for event, audience, player_id in step.events:
                    doc.last_seq += 1
                    event.seq = doc.last_seq
                    event.at_ms = now
                    stored.append(StoredEvent(doc.last_seq, audience, player_id, event.SerializeToString()))
                record = RoomRecord(
                    room_id=room_id,
                    version=current.record.version + 1,
                    phase=phase_name(doc),
                    mode=mode_of(doc),
                    seats_total=doc.max_seats,
                    seats_taken=len(doc.seats),
                    created_at_ms=doc.created_at_ms,
                    updated_at_ms=now,
                    data=doc.SerializeToString(),
                    deadline_ms=doc.deadline_ms or None,
                )
                # The fan-out clock starts before the commit: a subscriber may see the events
                # before this coroutine runs again (on Redis, the tail is another connection).
                fanout_key = (room_id, doc.last_seq)
                is_move = bool(step.source and games.of(doc).state_seq(doc))
                if is_move:
                    self._start_fanout_clock(fanout_key, received, mode_of(doc), step.source)
                try:
                    await self.store_call(
                        "commit", self.store.commit(room_id, current.record.version, record, stored)
                    )
                except VersionConflict:
                    self._fanout_pending.pop(fanout_key, None)
                    fresh = True  # another replica moved first: reload and run the step again
                    continue
                except RoomNotFound:  # expired since it was read (see ninetynine.session.expiry)
                    self._fanout_pending.pop(fanout_key, None)
                    self.forget_room(room_id)
                    raise session_error("ROOM_NOT_FOUND", roomId=room_id[:16]) from None
                except BaseException:
                    self._fanout_pending.pop(fanout_key, None)
                    raise
                loaded = Loaded(record, doc)
                if state_key(doc.state) == state_key(current.doc.state) and doc.HasField(
                    "state"
                ) == current.doc.HasField("state"):
                    loaded.game = current.game  # the game did not move: its decoded state still holds
                self.remember(loaded)
                if is_move:
                    self.metrics.move_duration.labels(mode_of(doc), step.source, "durable").observe(
                        time.perf_counter() - received
                    )
                self._count_outcomes(doc, step)
                if doc.deadline_ms and (
                    self._sooner_deadline_ms is None or doc.deadline_ms < self._sooner_deadline_ms
                ):
                    self._sooner_deadline_ms = doc.deadline_ms
                    awaited = self._awaited_deadline_ms
                    if awaited is None or doc.deadline_ms < awaited:
                        self.changed.set()
                return loaded, step
            raise session_error("ROOM_BUSY", roomId=room_id)

    async def delete(self, room_id: str, version: int) -> bool:
        """Delete an expired room under its lock (no move of this replica is half-way in it)."""
        async with self.lock(room_id):
            deleted = await self.store.delete_room(room_id, version)
            if deleted:
                self.forget_room(room_id)
        if deleted:
            self.forget_lock(room_id)
        return deleted

    def _start_fanout_clock(self, key: tuple[str, int], received: float, mode: str, source: str) -> None:
        pending = self._fanout_pending
        pending[key] = (received, mode, source)
        # Oldest first: a move nobody here watched is dropped once it is this old.
        while pending and received - next(iter(pending.values()))[0] > FANOUT_WAIT_S:
            pending.popitem(last=False)

    def fanned_out(self, room_id: str, seq: int) -> None:
        """The first local subscriber got the move ending at ``seq``: observe its fan-out latency."""
        pending = self._fanout_pending.pop((room_id, seq), None)
        if pending is not None:
            started, mode, source = pending
            self.metrics.move_duration.labels(mode, source, "fanout").observe(time.perf_counter() - started)

    def _count_outcomes(self, doc: doc_pb.RoomDocument, step: Step) -> None:
        mode = mode_of(doc)

        def count(outcome: str) -> None:
            if outcome == "eliminated":
                self.metrics.eliminations.labels(mode).inc()

        games.of(doc).count_outcomes((event for event, _, _ in step.events), count)
