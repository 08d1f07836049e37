"""The session service's logic: rooms, seats, moves, deadlines, bots and subscriptions.

Every change to a room goes through :meth:`RoomService._mutate`: under the room's lock it
loads the document, lets a step function change it (calling the engine where a move is
involved), numbers the new events, recomputes the turn deadline and commits record +
events + deadline in one compare-and-set. Only then is anything acknowledged, so a crash
can never leave a move half-written; a lost race with another replica (``VersionConflict``)
simply reloads and runs the step again (``client_seq`` keeps that idempotent).

Deadlines live in the store. :meth:`RoomService.run_scheduler` sleeps until the earliest
one, claims due rooms (exactly one replica wins each claim) and fires them: a bot's turn
plays the bot's move, a human's turn plays the engine's §8.5 timeout move. Views are a pure
projection of the stored state, computed here with the rules' observer instead of one
engine round trip per viewer per move.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections import Counter, OrderedDict
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TypeVar

import grpc
from prometheus_client import REGISTRY, CollectorRegistry, Gauge, Histogram
from prometheus_client import Counter as PromCounter

from ninetynine.common.context import bind_rpc_fields
from ninetynine.common.errors import Lang, ServiceError
from ninetynine.common.logging import get_logger
from ninetynine.common.metrics import LATENCY_BUCKETS
from ninetynine.common.wire import length_delimited, varint_field
from ninetynine.engine.client import EngineClient
from ninetynine.engine.convert import (
    action_to_proto,
    options_from_proto,
    private_view_into,
    public_view_into,
    result_into,
    state_from_proto,
)
from ninetynine.engine.errors import from_rule_error
from ninetynine.engine.rules import (
    GameState,
    RuleError,
    check_replayable,
    game_result,
    private_view,
    public_view,
)
from ninetynine.engine.v1 import engine_service_pb2, events_pb2, game_pb2, state_pb2, view_pb2
from ninetynine.session import expiry, rooms
from ninetynine.session.bots import bot_action
from ninetynine.session.errors import session_error
from ninetynine.session.store.base import (
    LISTED_PHASES,
    EventsTrimmed,
    InvalidStoreInput,
    RoomAlreadyExists,
    RoomNotFound,
    RoomRecord,
    RoomStore,
    StoredEvent,
    StoreUnavailable,
    VersionConflict,
)
from ninetynine.session.v1 import room_document_pb2 as doc_pb
from ninetynine.session.v1 import session_service_pb2 as pb

log = get_logger(__name__)

DEFAULT_TURN_SECONDS = 15
# How long a replica's claim on a due deadline lasts. If the replica dies while firing it, another
# replica fires that deadline only once the claim has run out, so this bounds how late a deadline
# can be after a crash (issue 7 asks for 2 s). A fire that outlasts it may be claimed again; the
# second firing finds the turn moved on and writes nothing.
DEFAULT_LEASE_MS = 1000
# How long a move waits for its first local subscriber before it stops counting for the fan-out
# latency histogram (a room nobody on this replica watches).
FANOUT_WAIT_S = 10.0
SHORT_TURN_SECONDS = 3  # after 3 timeouts in a row, and for players who left (spec §8.5)
TIMEOUTS_BEFORE_SHORT = 3
MAX_COMMIT_ATTEMPTS = 5
ENGINE_DOWN = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)

_AUDIENCE = {
    events_pb2.AUDIENCE_ALL: "all",
    events_pb2.AUDIENCE_ONLY: "only",
    events_pb2.AUDIENCE_EXCEPT: "except",
}


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class SessionMetrics:
    """``ninetynine_session_*`` metrics (docs/operations.md lists them)."""

    def __init__(self, registry: CollectorRegistry = REGISTRY) -> None:
        self.move_duration = Histogram(
            "ninetynine_session_move_duration_seconds",
            "Move latency through the session: received -> durable, and received -> fanned out.",
            ["mode", "source", "stage"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.deadline_lateness = Histogram(
            "ninetynine_session_deadline_lateness_seconds",
            "Turn deadline due -> timeout move durable.",
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.rooms = Gauge(
            "ninetynine_session_rooms",
            "Rooms this replica has touched, by phase.",
            ["phase"],
            registry=registry,
        )
        self.subscribers = Gauge(
            "ninetynine_session_subscribers",
            "Open subscriptions on this replica (Subscribe streams and SubscribeMany subscriptions).",
            registry=registry,
        )
        self.shared_messages = PromCounter(
            "ninetynine_session_subscribe_many_messages_total",
            "Messages written on SubscribeMany streams (items / messages = how much they share).",
            registry=registry,
        )
        self.shared_items = PromCounter(
            "ninetynine_session_subscribe_many_items_total",
            "Subscription items written on SubscribeMany streams.",
            registry=registry,
        )
        self.timeouts = PromCounter(
            "ninetynine_session_timeouts_total",
            "Moves played by the timeout policy.",
            ["mode"],
            registry=registry,
        )
        self.eliminations = PromCounter(
            "ninetynine_session_eliminations_total", "Players eliminated.", ["mode"], registry=registry
        )
        self.refusals = PromCounter(
            "ninetynine_session_refusals_total", "Requests refused, by reason.", ["reason"], registry=registry
        )
        self.engine_calls = Histogram(
            "ninetynine_session_engine_call_duration_seconds",
            "Engine RPC latency seen by the session.",
            ["method", "code"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.engine_errors = PromCounter(
            "ninetynine_session_engine_errors_total",
            "Engine calls that failed for lack of an engine (not rule refusals).",
            ["code"],
            registry=registry,
        )
        self.store_errors = PromCounter(
            "ninetynine_session_store_errors_total",
            "Store operations that failed.",
            ["store", "op"],
            registry=registry,
        )
        # Create every labelled series up front so dashboards and rate() see them from the first scrape.
        for mode in ("kr-product", "classic"):
            for source in ("player", "timeout", "bot"):
                for stage in ("durable", "fanout"):
                    self.move_duration.labels(mode, source, stage)
            self.timeouts.labels(mode)
            self.eliminations.labels(mode)
        self.bot_moves = PromCounter(
            "ninetynine_session_bot_moves_total", "Moves played by bots.", registry=registry
        )
        self.rooms_expired = PromCounter(
            "ninetynine_session_rooms_expired_total",
            "Rooms deleted by the expiry sweep (abandoned lobbies, finished rooms past retention).",
            ["reason"],
            registry=registry,
        )
        for reason in expiry.REASONS:
            self.rooms_expired.labels(reason)
        self.retried_calls = PromCounter(
            "ninetynine_session_retried_calls_total",
            "Calls that are a client's retry of an attempt that failed (a replica died under it), by method.",
            ["method"],
            registry=registry,
        )


@dataclass(slots=True)
class Loaded:
    """A room as read from (or just written to) the store."""

    record: RoomRecord
    doc: doc_pb.RoomDocument
    game: GameState | None = None  # decoded lazily for views
    spectators: frozenset[bytes] | None = None  # the spectators' token hashes, built on first use

    def game_state(self) -> GameState:
        if self.game is None:
            self.game = state_from_proto(self.doc.state, validate=False)
        return self.game

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
    source: str = ""  # player | timeout | bot, for move metrics
    force_deadline: bool = False

    def add(self, event: pb.RoomEvent, audience: str = "all", player_id: str = "") -> None:
        self.events.append((event, audience, player_id))

    def add_game(self, events: Iterable[events_pb2.Event]) -> None:
        for ev in events:
            audience = _AUDIENCE.get(ev.audience, "all")
            self.add(pb.RoomEvent(game=ev), audience, ev.player_id if audience != "all" else "")


T = TypeVar("T")
StepFn = Callable[[doc_pb.RoomDocument, int], Awaitable[Step | None]]


class _NoChange(Exception):
    """A step decided there is nothing to write (e.g. a duplicate Play); carries the answer."""

    def __init__(self, answer: object) -> None:
        self.answer = answer


def _phase_name(doc: doc_pb.RoomDocument) -> str:
    return rooms.PHASE_NAMES.get(doc.phase, "lobby")


def _mode(doc: doc_pb.RoomDocument) -> str:
    return "classic" if doc.options.mode == game_pb2.MODE_CLASSIC else "kr-product"


def _turn_seconds(doc: doc_pb.RoomDocument) -> int:
    return doc.options.turn_seconds if doc.options.HasField("turn_seconds") else DEFAULT_TURN_SECONDS


def _visible(event: StoredEvent, viewer: str | None) -> bool:
    if event.audience == "all":
        return True
    if event.audience == "only":
        return viewer is not None and viewer == event.player_id
    return viewer != event.player_id


def _batch_end(payload: bytes) -> bool:
    """``RoomEvent.batch_end`` of a serialized event, read without parsing the whole event."""
    return varint_field(payload, _BATCH_END) != 0


# Field numbers of a batched Subscribe message, which is assembled from bytes that are already
# serialized (the stored events, the cached view): a subscriber costs a concatenation, not a
# parse and a serialization of every event and view.
_BATCH = pb.SubscribeResponse.DESCRIPTOR.fields_by_name["batch"].number
_BATCH_EVENTS = pb.EventBatch.DESCRIPTOR.fields_by_name["events"].number
_BATCH_VIEW = pb.EventBatch.DESCRIPTOR.fields_by_name["view"].number
_BATCH_END = pb.RoomEvent.DESCRIPTOR.fields_by_name["batch_end"].number
_UPDATE_VIEW = pb.ViewUpdate.DESCRIPTOR.fields_by_name["view"].number


@dataclass(slots=True)
class _Shared:
    """What every viewer of one room version gets alike, built on first use.

    ``head`` is the ``ViewUpdate`` without its view (seq and room); ``public`` the view's public
    part, as a message and serialized. A viewer's ``ViewUpdate`` is ``head`` followed by its view
    field holding ``public`` and then the viewer's own fields: protobuf reads concatenated
    messages as one (the two parts set disjoint fields), so a move's views cost one public part
    per room plus a hand per player, not a whole view per viewer.
    """

    room: pb.Room
    head: bytes = b""
    public: view_pb2.GameView | None = None
    public_bytes: bytes = b""


# Stands for "nothing for a while" among a subscription's tail items.
_HEARTBEAT = object()


class RoomService:
    """Transport-agnostic session logic; :mod:`ninetynine.session.server` exposes it over gRPC."""

    def __init__(
        self,
        store: RoomStore,
        engine: EngineClient,
        *,
        store_kind: str = "sqlite",
        bot_think_ms: int = 700,
        lease_ms: int = DEFAULT_LEASE_MS,
        poll_ms: int = 50,
        metrics: SessionMetrics | None = None,
        owner: str | None = None,
        time_scale: float = 1.0,
        stream_heartbeat_s: float = 15.0,
        expiry_policy: expiry.ExpiryPolicy | None = None,
    ) -> None:
        self.store = store
        self.engine = engine
        self.store_kind = store_kind
        self.cache_authoritative = store_kind == "sqlite"
        self.bot_think_ms = bot_think_ms
        self.lease_ms = lease_ms
        self.poll_ms = poll_ms
        # Turn timers are multiplied by this (1.0 in production; load and fault tests compress time).
        self.time_scale = time_scale
        self.stream_heartbeat_s = stream_heartbeat_s
        self.metrics = metrics or SessionMetrics()
        self.owner = owner or f"replica-{secrets.token_hex(6)}"
        self._locks: dict[str, asyncio.Lock] = {}
        # Rooms in play (and in the lobby), most recently used last. Finished rooms move to a small
        # cache of their own: they are read for a moment after the last move (views, results),
        # then rarely, and a long-running replica would otherwise fill the cache with them.
        self._cache: OrderedDict[str, Loaded] = OrderedDict()
        self._cache_size = 20_000
        self._finished_rooms: OrderedDict[str, Loaded] = OrderedDict()
        self._finished_size = 512
        # View messages of recent room versions, per (room, version, viewer, lang), and the parts
        # all viewers of a version share.
        self._views: OrderedDict[tuple[str, int, str | None, Lang], pb.SubscribeResponse] = OrderedDict()
        self._view_bytes: OrderedDict[tuple[str, int, str | None, Lang], bytes] = OrderedDict()
        # Hidden stand-ins of events, shared by every subscriber who may not see them.
        self._hidden: OrderedDict[tuple[str, int], bytes] = OrderedDict()
        self._shared: OrderedDict[tuple[str, int], _Shared] = OrderedDict()
        self._views_size = 4096
        self._presence: Counter[tuple[str, str]] = Counter()
        # Moves waiting for their first local subscriber to deliver them (fan-out latency); moves
        # nobody here watches are dropped after FANOUT_WAIT_S (the soak showed a slow creep when
        # they were kept up to a count instead).
        self._fanout_pending: OrderedDict[tuple[str, int], tuple[float, str, str]] = OrderedDict()
        self._wake = asyncio.Event()
        self._fires: set[asyncio.Task[None]] = set()
        self._background: list[asyncio.Task[None]] = []
        self._stopping = asyncio.Event()
        self.expiry = expiry.RoomExpiry(
            store,
            expiry_policy or expiry.ExpiryPolicy(),
            self.metrics.rooms_expired,
            self._delete_room,
            clock=now_ms,
            on_store_error=lambda: self.metrics.store_errors.labels(self.store_kind, "expire").inc(),
        )

    # -- loading and committing ----------------------------------------------------------------

    def _lock(self, room_id: str) -> asyncio.Lock:
        lock = self._locks.get(room_id)
        if lock is None:
            lock = self._locks[room_id] = asyncio.Lock()
        return lock

    def _remember(self, loaded: Loaded) -> None:
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
            self._forget_lock(evicted)

    def _cached(self, room_id: str) -> Loaded | None:
        return self._cache.get(room_id) or self._finished_rooms.get(room_id)

    def _forget_lock(self, room_id: str) -> None:
        # An idle lock of a room no longer cached goes too (one per room ever played, otherwise).
        # Should a caller still be about to take it, a new one may be made meanwhile: the store's
        # version check still orders the two commits (the later one reloads and runs again).
        lock = self._locks.get(room_id)
        if lock is not None and not lock.locked():
            del self._locks[room_id]

    async def _store_call(self, op: str, awaitable: Awaitable[T]) -> T:
        try:
            return await awaitable
        except StoreUnavailable as err:
            self.metrics.store_errors.labels(self.store_kind, op).inc()
            log.warning("store unavailable", op=op, error=str(err))
            raise session_error("STORE_UNAVAILABLE") from err

    async def load(self, room_id: str, *, fresh: bool = False) -> Loaded:
        if not fresh:
            cached = self._cached(room_id)
            if cached is not None:
                return cached
        try:
            record = await self._store_call("load", self.store.load_room(room_id))
        except InvalidStoreInput:
            record = None
        if record is None:
            raise session_error("ROOM_NOT_FOUND", roomId=room_id[:16])
        doc = doc_pb.RoomDocument.FromString(record.data)
        loaded = Loaded(record, doc)
        self._remember(loaded)
        return loaded

    async def _mutate(self, room_id: str, step_fn: StepFn) -> tuple[Loaded, Step]:
        """Run ``step_fn`` on a copy of the room and commit it atomically (see the module doc)."""
        async with self._lock(room_id):
            # With one process on SQLite the cache is the truth; replicas on Redis must read first.
            fresh = not self.cache_authoritative
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
                stored: list[StoredEvent] = []
                for event, audience, player_id in step.events:
                    doc.last_seq += 1
                    event.seq = doc.last_seq
                    event.at_ms = now
                    stored.append(StoredEvent(doc.last_seq, audience, player_id, event.SerializeToString()))
                self._set_deadline(doc, now, force=step.force_deadline)
                record = RoomRecord(
                    room_id=room_id,
                    version=current.record.version + 1,
                    phase=_phase_name(doc),
                    mode=_mode(doc),
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
                is_move = bool(step.source and doc.state.seq)
                if is_move:
                    self._start_fanout_clock(fanout_key, received, _mode(doc), step.source)
                try:
                    await self._store_call(
                        "commit", self.store.commit(room_id, current.record.version, record, stored)
                    )
                except VersionConflict:
                    self._fanout_pending.pop(fanout_key, None)
                    fresh = True  # another replica moved first: reload and run the step again
                    continue
                except RoomNotFound:  # expired since it was read (see ninetynine.session.expiry)
                    self._fanout_pending.pop(fanout_key, None)
                    self._forget_room(room_id)
                    raise session_error("ROOM_NOT_FOUND", roomId=room_id[:16]) from None
                except BaseException:
                    self._fanout_pending.pop(fanout_key, None)
                    raise
                loaded = Loaded(record, doc)
                self._remember(loaded)
                if is_move:
                    self.metrics.move_duration.labels(_mode(doc), step.source, "durable").observe(
                        time.perf_counter() - received
                    )
                self._count_outcomes(doc, step)
                self._wake.set()
                return loaded, step
            raise session_error("ROOM_BUSY", roomId=room_id)

    def _start_fanout_clock(self, key: tuple[str, int], received: float, mode: str, source: str) -> None:
        pending = self._fanout_pending
        pending[key] = (received, mode, source)
        # Oldest first: a move nobody here watched is dropped once it is this old.
        while pending and received - next(iter(pending.values()))[0] > FANOUT_WAIT_S:
            pending.popitem(last=False)

    def _count_outcomes(self, doc: doc_pb.RoomDocument, step: Step) -> None:
        mode = _mode(doc)
        for event, _, _ in step.events:
            if event.HasField("game") and event.game.HasField("eliminated"):
                self.metrics.eliminations.labels(mode).inc()

    def _set_deadline(self, doc: doc_pb.RoomDocument, now: int, *, force: bool) -> None:
        if doc.phase != pb.ROOM_PHASE_PLAYING:
            doc.deadline_ms = 0
            doc.deadline_kind = doc_pb.DEADLINE_KIND_UNSPECIFIED
            return
        state = doc.state
        if not force and doc.deadline_ms and doc.deadline_state_seq == state.seq:
            return  # same turn: keep the running timer
        seat = rooms.seat_of(doc, state.current)
        doc.deadline_state_seq = state.seq
        doc.turn_started_at_ms = state.turn_started_at_ms or now
        if seat.bot:
            doc.deadline_kind = doc_pb.DEADLINE_KIND_BOT
            doc.deadline_ms = now + self.bot_think_ms
            return
        seconds = _turn_seconds(doc)
        if seat.left or seat.consecutive_timeouts >= TIMEOUTS_BEFORE_SHORT:
            seconds = min(seconds, SHORT_TURN_SECONDS)
        doc.deadline_kind = doc_pb.DEADLINE_KIND_TURN
        doc.deadline_ms = doc.turn_started_at_ms + round(seconds * 1000 * self.time_scale)

    async def _engine(self, method: str, awaitable: Awaitable[T]) -> T:
        started = time.perf_counter()
        code = "OK"
        try:
            return await awaitable
        except ServiceError as err:
            code = err.code.name
            if err.code in ENGINE_DOWN:
                self.metrics.engine_errors.labels(code).inc()
                raise session_error("ENGINE_UNAVAILABLE") from err
            raise
        finally:
            self.metrics.engine_calls.labels(method, code).observe(time.perf_counter() - started)

    # -- rooms ---------------------------------------------------------------------------------

    async def create_room(
        self, name: str, options: game_pb2.Options, max_seats: int
    ) -> pb.CreateRoomResponse:
        try:
            options_from_proto(options)  # refuse bad options now, not at StartGame
        except RuleError as err:
            raise from_rule_error(err) from None
        for _ in range(10):
            room_id = rooms.new_room_id()
            now = now_ms()
            doc, token = rooms.new_room(room_id, name, options, max_seats, now)
            joined = pb.RoomEvent(
                seq=1,
                at_ms=now,
                batch_end=True,
                player_joined=pb.PlayerJoined(seat=rooms.public_seat(doc, doc.seats[0])),
            )
            doc.last_seq = 1
            record = RoomRecord(
                room_id=room_id,
                version=1,
                phase="lobby",
                mode=_mode(doc),
                seats_total=max_seats,
                seats_taken=1,
                created_at_ms=now,
                updated_at_ms=now,
                data=doc.SerializeToString(),
                deadline_ms=None,
            )
            try:
                await self._store_call(
                    "create",
                    self.store.create_room(record, [StoredEvent(1, "all", "", joined.SerializeToString())]),
                )
            except RoomAlreadyExists:
                continue
            self._remember(Loaded(record, doc))
            return pb.CreateRoomResponse(
                room=rooms.public_room(doc), player_id=doc.host_player_id, seat_token=token
            )
        raise session_error("ROOM_BUSY")

    async def join_room(self, room_id: str, name: str) -> pb.JoinRoomResponse:
        seated: dict[str, str] = {}

        async def step(doc: doc_pb.RoomDocument, now: int) -> Step:
            player_id, token = rooms.add_seat(doc, name, bot=False)
            seated.update(player_id=player_id, token=token)
            out = Step()
            out.add(pb.RoomEvent(player_joined=pb.PlayerJoined(seat=rooms.public_seat(doc, doc.seats[-1]))))
            return out

        loaded, _ = await self._mutate(room_id, step)
        return pb.JoinRoomResponse(
            room=rooms.public_room(loaded.doc), player_id=seated["player_id"], seat_token=seated["token"]
        )

    async def add_bot(self, token: str, name: str) -> pb.AddBotResponse:
        seated: dict[str, str] = {}

        async def step(doc: doc_pb.RoomDocument, now: int) -> Step:
            self._require_host(doc, token)
            bot_name = name or f"봇 {sum(1 for s in doc.seats if s.bot) + 1}"
            player_id, _ = rooms.add_seat(doc, bot_name, bot=True)
            seated["player_id"] = player_id
            out = Step()
            out.add(pb.RoomEvent(player_joined=pb.PlayerJoined(seat=rooms.public_seat(doc, doc.seats[-1]))))
            return out

        loaded, _ = await self._mutate(rooms.token_room(token), step)
        return pb.AddBotResponse(room=rooms.public_room(loaded.doc), player_id=seated["player_id"])

    async def spectate(self, room_id: str) -> pb.SpectateResponse:
        issued: dict[str, str] = {}

        async def step(doc: doc_pb.RoomDocument, now: int) -> Step:
            issued["token"] = rooms.add_spectator(doc, now, self._spectator_grace_ms())
            return Step()

        loaded, _ = await self._mutate(room_id, step)
        return pb.SpectateResponse(room=rooms.public_room(loaded.doc), spectator_token=issued["token"])

    def _spectator_grace_ms(self) -> int:
        return round(rooms.SPECTATOR_GRACE_MS * self.time_scale)

    async def leave_room(self, token: str) -> pb.LeaveRoomResponse:
        async def step(doc: doc_pb.RoomDocument, now: int) -> Step:
            caller = rooms.identify(doc, token)
            out = Step()
            if caller.player_id is None:
                rooms.remove_spectator(doc, token)
                return out
            if doc.phase == pb.ROOM_PHASE_LOBBY:
                rooms.remove_seat(doc, caller.player_id)
                out.add(pb.RoomEvent(player_left=pb.PlayerLeft(player_id=caller.player_id)))
                if not any(not s.bot for s in doc.seats):
                    doc.phase = pb.ROOM_PHASE_FINISHED  # nobody left to start it: close the room
                return out
            seat = rooms.seat_of(doc, caller.player_id)
            if seat.left:
                return out
            seat.left = True
            seat.connected = False
            seat.token_hash = b""  # the token stops working: leaving is final
            out.add(pb.RoomEvent(player_left=pb.PlayerLeft(player_id=caller.player_id, auto_played=True)))
            out.force_deadline = doc.phase == pb.ROOM_PHASE_PLAYING and doc.state.current == caller.player_id
            return out

        loaded, _ = await self._mutate(rooms.token_room(token), step)
        return pb.LeaveRoomResponse(room=rooms.public_room(loaded.doc))

    def _require_host(self, doc: doc_pb.RoomDocument, token: str) -> rooms.Caller:
        caller = rooms.identify(doc, token)
        if caller.player_id is None or caller.player_id != doc.host_player_id:
            raise session_error("NOT_HOST")
        return caller

    async def start_game(self, token: str) -> pb.StartGameResponse:
        async def step(doc: doc_pb.RoomDocument, now: int) -> Step:
            self._require_host(doc, token)
            if doc.phase != pb.ROOM_PHASE_LOBBY:
                raise session_error("GAME_ALREADY_STARTED", roomId=doc.room_id)
            if len(doc.seats) < 2:
                raise session_error("NOT_ENOUGH_PLAYERS", seated=len(doc.seats))
            setup = await self._engine(
                "Setup",
                self.engine.setup(
                    [s.player_id for s in doc.seats],
                    doc.options,
                    seed=secrets.randbits(64),
                    display_names={s.player_id: s.name for s in doc.seats},
                    now_ms=now,
                ),
            )
            doc.state.CopyFrom(setup.state)
            doc.phase = pb.ROOM_PHASE_PLAYING
            doc.started_at_ms = now
            out = Step()
            out.add_game(setup.events)
            return out

        loaded, _ = await self._mutate(rooms.token_room(token), step)
        return pb.StartGameResponse(room=rooms.public_room(loaded.doc))

    async def get_room(self, room_id: str) -> pb.GetRoomResponse:
        return pb.GetRoomResponse(room=rooms.public_room((await self.load(room_id, fresh=True)).doc))

    async def list_rooms(
        self, page_size: int, page_token: str, phase: pb.RoomPhase.ValueType = pb.ROOM_PHASE_UNSPECIFIED
    ) -> pb.ListRoomsResponse:
        """Newest first: the lobby and running games, or the one ``phase`` asked for."""
        size = page_size or 20
        if not 1 <= size <= 100:
            raise session_error("INVALID_PAGE_TOKEN", pageSize=page_size)
        if phase == pb.ROOM_PHASE_UNSPECIFIED:
            phases = LISTED_PHASES
        elif phase in rooms.PHASE_NAMES:
            phases = frozenset({rooms.PHASE_NAMES[phase]})
        else:
            raise session_error("INVALID_PHASE", phase=int(phase))
        try:
            records, next_token = await self._store_call(
                "list", self.store.list_rooms(phases=phases, page_size=size, page_token=page_token)
            )
        except InvalidStoreInput:
            raise session_error("INVALID_PAGE_TOKEN") from None
        docs = [doc_pb.RoomDocument.FromString(r.data) for r in records]
        return pb.ListRoomsResponse(rooms=[rooms.public_room(d) for d in docs], next_page_token=next_token)

    # -- play ----------------------------------------------------------------------------------

    async def play(
        self,
        token: str,
        client_seq: int,
        action: game_pb2.Action,
        expected_move_seq: int | None = None,
    ) -> pb.PlayResponse:
        """Apply one play; ``expected_move_seq`` (the move counter of the view it was chosen from)
        refuses it with VIEW_OUTDATED once the game has moved past that view."""
        if client_seq < 1:
            raise session_error("INVALID_CLIENT_SEQ")
        if not action.card_id:
            raise session_error("INVALID_ACTION")
        room_id = rooms.token_room(token)
        refusal: list[ServiceError] = []  # the refusal the committed step recorded

        async def step(doc: doc_pb.RoomDocument, now: int) -> Step:
            refusal.clear()
            caller = rooms.identify(doc, token)
            if caller.player_id is None:
                raise session_error("SPECTATOR_CANNOT_ACT")
            bind_rpc_fields(player_id=caller.player_id)
            seat = rooms.seat_of(doc, caller.player_id)
            if client_seq == seat.last_client_seq:
                first = rooms.last_refusal(seat)
                if first is not None:
                    raise first
                raise _NoChange(
                    pb.PlayResponse(
                        client_seq=client_seq,
                        seq=seat.last_outcome_seq,
                        total=seat.last_outcome_total,
                        duplicate=True,
                    )
                )
            if client_seq < seat.last_client_seq:
                raise session_error("STALE", clientSeq=client_seq, lastClientSeq=seat.last_client_seq)
            try:
                applied = await self._judge(doc, caller.player_id, action, expected_move_seq, now)
            except ServiceError as err:
                if not rooms.is_play_outcome(err):
                    raise  # transient: nothing is recorded, the same client_seq may be sent again
                # The refusal is the play's outcome: committed (without events) before it is
                # answered, so that the same client_seq gets it again on any replica, and is
                # never applied later when the situation would allow it.
                rooms.refuse_play(seat, client_seq, err)
                refusal.append(err)
                return Step()
            out = Step(source="player")
            out.add_game(applied.events)
            self._advance(doc, applied.state, caller.player_id, action, "player", now)
            seat.consecutive_timeouts = 0
            seat.last_client_seq = client_seq
            seat.last_outcome_seq = doc.last_seq + len(out.events)
            seat.last_outcome_total = doc.state.total
            seat.ClearField("last_refusal")
            return out

        try:
            loaded, _ = await self._mutate(room_id, step)
        except _NoChange as dup:
            assert isinstance(dup.answer, pb.PlayResponse)
            return dup.answer
        if refusal:
            raise refusal[0]
        seat = rooms.seat_of(loaded.doc, rooms.identify(loaded.doc, token).player_id or "")
        return pb.PlayResponse(
            client_seq=client_seq, seq=seat.last_outcome_seq, total=seat.last_outcome_total
        )

    async def _judge(
        self,
        doc: doc_pb.RoomDocument,
        player_id: str,
        action: game_pb2.Action,
        expected_move_seq: int | None,
        now: int,
    ) -> engine_service_pb2.ApplyResponse:
        """The engine's answer to ``player_id`` playing ``action`` now, or the refusal of it."""
        if doc.phase == pb.ROOM_PHASE_LOBBY:
            raise session_error("GAME_NOT_STARTED", roomId=doc.room_id)
        # After the client_seq checks, so a resent play still gets its first outcome: a play
        # chosen for an older situation must not land at today's total just because it is legal.
        if expected_move_seq is not None and expected_move_seq != doc.state.seq:
            raise session_error("VIEW_OUTDATED", moveSeq=expected_move_seq, currentMoveSeq=doc.state.seq)
        return await self._engine(
            "Apply",
            self.engine.apply(doc.state, player_id, action, expected_seq=doc.state.seq, now_ms=now),
        )

    def _advance(
        self,
        doc: doc_pb.RoomDocument,
        new_state: state_pb2.State,
        player_id: str,
        action: game_pb2.Action,
        source: str,
        now: int,
    ) -> None:
        doc.state.CopyFrom(new_state)
        doc.moves.add(player_id=player_id, action=action, source=source, at_ms=now)
        if new_state.phase == state_pb2.PHASE_FINISHED:
            doc.phase = pb.ROOM_PHASE_FINISHED

    # -- deadlines -----------------------------------------------------------------------------

    async def run_scheduler(self) -> None:
        """Fire due deadlines until :meth:`stop`; survives store and engine outages."""
        while not self._stopping.is_set():
            try:
                next_due = await self.store.next_deadline_ms()
            except StoreUnavailable:
                self.metrics.store_errors.labels(self.store_kind, "next_deadline").inc()
                next_due = None
            now = now_ms()
            wait_ms = self.poll_ms if next_due is None else max(0, min(next_due - now, self.poll_ms))
            if wait_ms:
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), wait_ms / 1000)
                continue
            try:
                claimed = await self.store.claim_due(now_ms(), self.owner, self.lease_ms, 200)
            except StoreUnavailable:
                self.metrics.store_errors.labels(self.store_kind, "claim").inc()
                await asyncio.sleep(self.poll_ms / 1000)
                continue
            for room_id, due in claimed:
                task = asyncio.create_task(self._fire(room_id, due))
                self._fires.add(task)
                task.add_done_callback(self._fires.discard)
            if not claimed:
                await asyncio.sleep(0.005)  # a lease held by another replica: don't spin

    async def run_room_gauge(self, every_s: float = 10.0) -> None:
        """Keep ``ninetynine_session_rooms{phase}`` current (every replica reports the shared store)."""
        while not self._stopping.is_set():
            try:
                for phase, count in (await self.store.count_rooms()).items():
                    self.metrics.rooms.labels(phase).set(count)
            except StoreUnavailable:
                self.metrics.store_errors.labels(self.store_kind, "count").inc()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), every_s)

    def start(self) -> None:
        """Start the deadline scheduler, the rooms gauge and the expiry sweep; :meth:`stop` ends them."""
        if not self._background:
            self._background = [
                asyncio.create_task(self.run_scheduler()),
                asyncio.create_task(self.run_room_gauge()),
                asyncio.create_task(self.expiry.run(self._stopping)),
            ]

    # -- expiry --------------------------------------------------------------------------------

    async def _delete_room(self, room_id: str, version: int) -> bool:
        """Delete an expired room under its lock (no move of this replica is half-way in it)."""
        async with self._lock(room_id):
            deleted = await self.store.delete_room(room_id, version)
            if deleted:
                self._forget_room(room_id)
        if deleted:
            self._forget_lock(room_id)
        return deleted

    def _forget_room(self, room_id: str) -> None:
        self._cache.pop(room_id, None)
        self._finished_rooms.pop(room_id, None)

    async def stop(self) -> None:
        self._stopping.set()
        self._wake.set()
        for task in self._background:
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        self._background = []
        if self._fires:
            await asyncio.gather(*self._fires, return_exceptions=True)

    async def _fire(self, room_id: str, due: int) -> None:
        fired: dict[str, object] = {}

        async def step(doc: doc_pb.RoomDocument, now: int) -> Step | None:
            if (
                doc.phase != pb.ROOM_PHASE_PLAYING
                or doc.deadline_ms != due
                or doc.deadline_state_seq != doc.state.seq
            ):
                return None  # the turn moved on since the claim
            current = doc.state.current
            seat = rooms.seat_of(doc, current)
            if seat.bot:
                game = state_from_proto(doc.state, validate=False)
                action = action_to_proto(bot_action(game))
                applied = await self._engine(
                    "Apply",
                    self.engine.apply(doc.state, current, action, expected_seq=doc.state.seq, now_ms=now),
                )
                out = Step(source="bot")
                out.add_game(applied.events)
                self._advance(doc, applied.state, current, action, "bot", now)
                fired["kind"] = "bot"
                return out
            timed = await self._engine(
                "Timeout", self.engine.timeout(doc.state, expected_seq=doc.state.seq, now_ms=now)
            )
            seat.consecutive_timeouts += 1
            out = Step(source="timeout")
            out.add(
                pb.RoomEvent(
                    timeout_applied=pb.TimeoutApplied(
                        player_id=current,
                        action=timed.action,
                        consecutive=seat.consecutive_timeouts,
                    )
                )
            )
            out.add_game(timed.events)
            self._advance(doc, timed.state, current, timed.action, "timeout", now)
            fired["kind"] = "timeout"
            return out

        try:
            loaded, step_out = await self._mutate(room_id, step)
        except ServiceError as err:
            # Engine or store down: keep the claim; its lease runs out and the deadline fires again.
            log.warning("deadline not fired", room_id=room_id, reason=err.reason)
            return
        except Exception:
            log.exception("deadline failed", room_id=room_id)
            return
        if not step_out.events:
            with contextlib.suppress(StoreUnavailable):
                await self.store.release(room_id, self.owner)
            return
        mode = _mode(loaded.doc)
        if fired.get("kind") == "timeout":
            self.metrics.timeouts.labels(mode).inc()
            self.metrics.deadline_lateness.observe(max(0, now_ms() - due) / 1000)
        else:
            self.metrics.bot_moves.inc()

    # -- views and subscriptions ---------------------------------------------------------------

    def _shared_parts(self, loaded: Loaded) -> _Shared:
        """The parts of ``loaded``'s view messages that are the same for every viewer."""
        key = (loaded.record.room_id, loaded.record.version)
        shared = self._shared.get(key)
        if shared is None:
            shared = self._shared[key] = _Shared(rooms.public_room(loaded.doc))
            while len(self._shared) > self._views_size:
                self._shared.popitem(last=False)
        return shared

    def _public_view(self, loaded: Loaded) -> _Shared:
        """:meth:`_shared_parts` with ``public`` built (left None when no game was ever started)."""
        shared = self._shared_parts(loaded)
        if shared.public is None and loaded.doc.HasField("state"):
            game = loaded.game_state()
            public = view_pb2.GameView()
            public_view_into(public_view(game), game.options, public)
            if loaded.doc.deadline_ms:
                # The session's timer (3 s rule, bots) is the real one, not the rules' plain turn.
                public.deadline_ms = loaded.doc.deadline_ms
            shared.public, shared.public_bytes = public, public.SerializeToString()
        return shared

    def _private_view(self, loaded: Loaded, viewer: str | None, lang: Lang) -> view_pb2.GameView:
        game = loaded.game_state()
        out = view_pb2.GameView()
        private_view_into(private_view(game, viewer), game.options, out, lang)
        return out

    def view_of(self, loaded: Loaded, viewer: str | None, lang: Lang) -> view_pb2.GameView | None:
        public = self._public_view(loaded).public
        if public is None:
            return None
        out = view_pb2.GameView()
        out.CopyFrom(public)
        out.MergeFrom(self._private_view(loaded, viewer, lang))
        return out

    async def get_view(self, token: str, lang: Lang) -> pb.GetViewResponse:
        loaded = await self.load(rooms.token_room(token), fresh=True)
        caller = rooms.identify(loaded.doc, token)
        response = pb.GetViewResponse(
            room=rooms.public_room(loaded.doc), seq=loaded.doc.last_seq, player_id=caller.player_id or ""
        )
        view = self.view_of(loaded, caller.player_id, lang)
        if view is not None:
            response.view.CopyFrom(view)
        return response

    def _filtered(self, stored: StoredEvent, viewer: str | None) -> pb.RoomEvent:
        event = pb.RoomEvent.FromString(stored.payload)
        if _visible(stored, viewer):
            return event
        return pb.RoomEvent(seq=event.seq, at_ms=event.at_ms, batch_end=event.batch_end, hidden=pb.Hidden())

    def _view_message(self, loaded: Loaded, viewer: str | None, lang: Lang) -> pb.SubscribeResponse:
        """The ``view`` message of ``loaded`` for one viewer, built once per room version.

        Every subscriber of a room asks for the view of the same version right after a batch: the
        spectators share one message, each player gets theirs, and the ``room`` part is shared too.
        Keyed by the record version (it bumps on every commit), so a cached message is never stale.
        The cached messages are handed to several streams as they are: nobody may modify them.
        """
        record = loaded.record
        key = (record.room_id, record.version, viewer, lang)
        message = self._views.get(key)
        if message is not None:
            self._views.move_to_end(key)
            return message
        update = pb.ViewUpdate(seq=loaded.doc.last_seq, room=self._shared_parts(loaded).room)
        view = self.view_of(loaded, viewer, lang)
        if view is not None:
            update.view.CopyFrom(view)
        message = self._views[key] = pb.SubscribeResponse(view=update)
        while len(self._views) > self._views_size:
            self._views.popitem(last=False)
        return message

    async def _current(self, room_id: str, seq: int) -> Loaded | None:
        """The room as of event ``seq``, or None when a newer move is already stored."""
        loaded = self._cached(room_id)
        if loaded is None or loaded.doc.last_seq < seq:
            loaded = await self.load(room_id, fresh=True)
        if loaded.doc.last_seq != seq:
            return None  # a newer move is already stored: its own batch end brings the view
        return loaded

    async def _view_update(
        self, room_id: str, seq: int, viewer: str | None, lang: Lang
    ) -> pb.SubscribeResponse | None:
        loaded = await self._current(room_id, seq)
        return None if loaded is None else self._view_message(loaded, viewer, lang)

    async def _view_update_bytes(
        self, room_id: str, seq: int, viewer: str | None, lang: Lang
    ) -> bytes | None:
        """The serialized ``ViewUpdate`` after event ``seq``, built once per (version, viewer, lang)."""
        loaded = await self._current(room_id, seq)
        if loaded is None:
            return None
        key = (room_id, loaded.record.version, viewer, lang)
        encoded = self._view_bytes.get(key)
        if encoded is None:
            shared = self._public_view(loaded)
            if not shared.head:
                shared.head = pb.ViewUpdate(seq=loaded.doc.last_seq, room=shared.room).SerializeToString()
            encoded = shared.head
            if shared.public is not None:
                private = self._private_view(loaded, viewer, lang).SerializeToString()
                encoded += length_delimited(_UPDATE_VIEW, shared.public_bytes + private)
            self._view_bytes[key] = encoded
            while len(self._view_bytes) > self._views_size:
                self._view_bytes.popitem(last=False)
        return encoded

    def _event_bytes(self, room_id: str, stored: StoredEvent, viewer: str | None) -> bytes:
        """The serialized ``RoomEvent`` ``viewer`` gets for ``stored``: as stored, or its hidden stand-in."""
        if _visible(stored, viewer):
            return stored.payload
        key = (room_id, stored.seq)
        hidden = self._hidden.get(key)
        if hidden is None:
            hidden = self._hidden[key] = self._filtered(stored, viewer).SerializeToString()
            while len(self._hidden) > self._views_size:
                self._hidden.popitem(last=False)
        return hidden

    def _fanned_out(self, room_id: str, seq: int) -> None:
        pending = self._fanout_pending.pop((room_id, seq), None)
        if pending is not None:
            started, mode, source = pending
            self.metrics.move_duration.labels(mode, source, "fanout").observe(time.perf_counter() - started)

    async def subscribe(
        self, token: str, after_seq: int, lang: Lang, *, batched: bool = False, heartbeats: bool = True
    ) -> AsyncIterator[pb.SubscribeResponse | bytes]:
        """The room's events after ``after_seq``, then live ones, for the token's holder.

        Unbatched, every event and every view is its own message. Batched, each move arrives as
        one ``batch`` item, yielded as its serialized bytes (assembled from the stored event
        payloads and the cached view), which the server's serializer passes through.
        ``heartbeats=False`` leaves out the idle heartbeats (and the task that makes them
        possible): SubscribeMany keeps its shared call alive itself. Once the token stops acting
        for its seat or spectator place, the stream ends with INVALID_TOKEN (:meth:`_check_bound`).
        """
        room_id = rooms.token_room(token)
        loaded = await self.load(room_id, fresh=True)
        caller = rooms.identify(loaded.doc, token)
        digest = rooms.token_digest(token)
        viewer = caller.player_id
        last = loaded.doc.last_seq
        oldest = await self._store_call("oldest", self.store.oldest_event_seq(room_id))
        if after_seq > last or after_seq + 1 < oldest:
            # Unknown future or a gap we no longer hold: a snapshot replaces the client's state.
            yield pb.SubscribeResponse(snapshot=pb.Snapshot(seq=last, reason="GAP_TOO_OLD"))
            if batched:
                view = await self._view_update_bytes(room_id, last, viewer, lang)
                if view is not None:
                    yield length_delimited(_BATCH, length_delimited(_BATCH_VIEW, view))
            else:
                update = await self._view_update(room_id, last, viewer, lang)
                if update is not None:
                    yield update
            after_seq = last
        self.metrics.subscribers.inc()
        # A seat's presence, or a spectator place's (its slot is held while somebody watches).
        presence_key = (room_id, viewer if viewer is not None else "~" + digest.hex())
        self._presence[presence_key] += 1
        if self._presence[presence_key] == 1:
            await self._record_presence(room_id, viewer, digest, True)
        source = self._tail_items(room_id, after_seq, heartbeats)
        parts: list[bytes] = []  # the batched events of the move being assembled
        try:
            catching_up_to = last
            async for item in source:
                if item is _HEARTBEAT:
                    yield pb.SubscribeResponse(heartbeat=pb.Heartbeat(at_ms=now_ms()))
                    continue
                if item is None:
                    break
                if isinstance(item, EventsTrimmed):
                    yield pb.SubscribeResponse(snapshot=pb.Snapshot(seq=last, reason="GAP_TOO_OLD"))
                    break
                if isinstance(item, StoreUnavailable):
                    self.metrics.store_errors.labels(self.store_kind, "tail").inc()
                    raise session_error("STORE_UNAVAILABLE")
                if isinstance(item, BaseException):
                    raise item
                assert isinstance(item, StoredEvent)
                stored = item
                if batched:
                    encoded = self._event_bytes(room_id, stored, viewer)
                    parts.append(length_delimited(_BATCH_EVENTS, encoded))
                    if not _batch_end(stored.payload):
                        continue
                    await self._check_bound(room_id, stored.seq, caller, digest)
                    if stored.seq >= catching_up_to:
                        self._fanned_out(room_id, stored.seq)
                        view = await self._view_update_bytes(room_id, stored.seq, viewer, lang)
                        if view is not None:
                            parts.append(length_delimited(_BATCH_VIEW, view))
                    batch, parts = b"".join(parts), []
                    yield length_delimited(_BATCH, batch)
                    continue
                await self._check_bound(room_id, stored.seq, caller, digest)
                event = self._filtered(stored, viewer)
                yield pb.SubscribeResponse(event=event)
                if event.batch_end and stored.seq >= catching_up_to:
                    self._fanned_out(room_id, stored.seq)
                    update = await self._view_update(room_id, stored.seq, viewer, lang)
                    if update is not None:
                        yield update
        finally:
            await source.aclose()
            self.metrics.subscribers.dec()
            self._presence[presence_key] -= 1
            if self._presence[presence_key] <= 0:
                del self._presence[presence_key]
                if not self._stopping.is_set():
                    await self._record_presence(room_id, viewer, digest, False)

    async def _check_bound(self, room_id: str, seq: int, caller: rooms.Caller, digest: bytes) -> None:
        """End a subscription whose token no longer acts for its seat or spectator place.

        Checked against the room as of event ``seq`` or later before anything of that event goes
        out: leaving revokes a token for good, so a newer version answers for ``seq`` too, and
        every replica learns it from the room's own log (the leave's event, then its document).
        """
        loaded = self._cached(room_id)
        if loaded is None or loaded.doc.last_seq < seq:
            loaded = await self.load(room_id, fresh=True)
        if not loaded.holds(caller, digest):
            raise session_error("INVALID_TOKEN", roomId=room_id)

    async def _tail_items(
        self, room_id: str, after_seq: int, heartbeats: bool
    ) -> AsyncGenerator[StoredEvent | BaseException | object | None, None]:
        """The store's tail as items: events, then ``None`` at its end or the error that ended it;
        with ``heartbeats``, ``_HEARTBEAT`` after each idle ``stream_heartbeat_s``."""
        if not heartbeats:
            tail = self.store.tail(room_id, after_seq)
            try:
                async for stored in tail:
                    yield stored
                yield None
            except (EventsTrimmed, StoreUnavailable, InvalidStoreInput) as err:
                yield err
            finally:
                await tail.aclose()  # type: ignore[attr-defined]
            return
        # The tail is pumped by its own task so that an idle stream can send heartbeats: grpc.aio
        # does not always cancel an idle server stream whose client went away, but the next write
        # on it fails, which ends the subscription.
        queue: asyncio.Queue[StoredEvent | BaseException | None] = asyncio.Queue(maxsize=1000)
        pump = asyncio.create_task(self._pump(room_id, after_seq, queue))
        try:
            while True:
                if queue.empty():
                    try:
                        async with asyncio.timeout(self.stream_heartbeat_s):
                            item = await queue.get()
                    except TimeoutError:
                        yield _HEARTBEAT
                        continue
                else:
                    item = queue.get_nowait()
                yield item
                if item is None or isinstance(item, BaseException):
                    return
        finally:
            pump.cancel()

    async def _pump(
        self, room_id: str, after_seq: int, queue: asyncio.Queue[StoredEvent | BaseException | None]
    ) -> None:
        """Copy the store's tail into ``queue``; errors travel as items, the end as ``None``."""
        tail = self.store.tail(room_id, after_seq)
        try:
            async for stored in tail:
                await queue.put(stored)
            await queue.put(None)
        except (EventsTrimmed, StoreUnavailable, InvalidStoreInput) as err:
            await queue.put(err)
        finally:
            await tail.aclose()  # type: ignore[attr-defined]

    async def _record_presence(
        self, room_id: str, player_id: str | None, digest: bytes, connected: bool
    ) -> None:
        if player_id is not None:
            await self._set_presence(room_id, player_id, connected)
            return

        async def step(doc: doc_pb.RoomDocument, now: int) -> Step | None:
            # No event: a spectator's coming and going is nobody's news, only its slot's.
            return Step() if rooms.set_spectator_presence(doc, digest, connected, now) else None

        try:
            await self._mutate(room_id, step)
        except ServiceError as err:  # best effort, as for seats
            log.warning("spectator presence not recorded", room_id=room_id, reason=err.reason)

    async def _set_presence(self, room_id: str, player_id: str, connected: bool) -> None:
        async def step(doc: doc_pb.RoomDocument, now: int) -> Step | None:
            seat = next((s for s in doc.seats if s.player_id == player_id), None)
            if seat is None or seat.bot or seat.left or seat.connected == connected:
                return None  # (no seat: it was given up in the lobby)
            seat.connected = connected
            out = Step()
            out.add(
                pb.RoomEvent(presence_changed=pb.PresenceChanged(player_id=player_id, connected=connected))
            )
            return out

        try:
            await self._mutate(room_id, step)
        except ServiceError as err:  # presence is best effort; the game never waits for it
            log.warning("presence not recorded", room_id=room_id, player_id=player_id, reason=err.reason)

    # -- results -------------------------------------------------------------------------------

    async def _finished(self, room_id: str) -> Loaded:
        loaded = await self.load(room_id, fresh=True)
        if loaded.doc.phase != pb.ROOM_PHASE_FINISHED or not loaded.doc.HasField("state"):
            raise session_error("GAME_NOT_FINISHED", roomId=room_id)
        return loaded

    async def get_result(self, room_id: str) -> pb.GetResultResponse:
        loaded = await self._finished(room_id)
        game = loaded.game_state()
        response = pb.GetResultResponse(seed=game.seed, seed_commitment=game.seed_commitment)
        result_into(game_result(game).to_dict(), response.result)
        return response

    async def get_replay(self, room_id: str) -> pb.GetReplayResponse:
        loaded = await self._finished(room_id)
        game = loaded.game_state()
        try:
            check_replayable(game)
        except RuleError as err:
            raise from_rule_error(err) from None
        doc = loaded.doc
        response = pb.GetReplayResponse(
            player_ids=list(game.seats),
            options=doc.options,
            seed=game.seed,
            seed_commitment=game.seed_commitment,
            moves=list(doc.moves),
            display_names={s.player_id: s.name for s in doc.seats},
            started_at_ms=doc.started_at_ms,
        )
        after = 0
        while True:
            batch = await self._store_call("read", self.store.read_events(room_id, after, 1000))
            if not batch:
                break
            response.events.extend(pb.RoomEvent.FromString(e.payload) for e in batch)
            after = batch[-1].seq
        result_into(game_result(game).to_dict(), response.result)
        return response
