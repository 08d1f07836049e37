"""``RoomStore`` on Redis: shared by several session replicas behind a load balancer.

Keys (``P`` is the configurable prefix, ``?prefix=`` in the URL; default ``ninetynine:session:``):

- ``P room:{room_id}`` — hash: ``v`` (version), ``phase``, ``mode``, ``st``/``sk`` (seats total/taken),
  ``c``/``u`` (created/updated ms), ``data`` (opaque bytes), ``dl`` (deadline ms, "" for none),
  ``last`` (seq of the last appended event), ``lk`` (the room's listing key, see below), ``uk`` (its
  key in the idle index of its phase, "" for a running game).
- ``P events:{room_id}`` — stream; event seq N is entry id ``N-0`` with fields ``a`` (audience),
  ``p`` (player id), ``d`` (payload).  Bounded with ``XADD MAXLEN ~ maxlen`` (``?maxlen=``, default
  100000 — far more than one game produces); the oldest retained seq is the first entry's id.
  A tail replays it with ``XRANGE``; live events (from any replica) come from one shared
  ``XREAD BLOCK`` per store over the streams of every open tail, so tails hold no connection while waiting.
- ``P due`` — sorted set room_id → due-at ms: the deadline while unclaimed, the lease expiry while claimed.
- ``P deadline`` — hash room_id → current deadline ms (what ``claim_due`` reports).
- ``P claims`` — hash room_id → owner of the current claim.
- ``P rooms:all`` and ``P rooms:phase:{phase}`` — sorted sets (all scores 0) of listing keys
  ``"{created_at_ms:015d}:{room_id}"``, read with ``ZREVRANGEBYLEX`` for keyset pagination (newest first;
  a listing of several phases merges one read per phase, taken in one ``MULTI``).
- ``P rooms:idle:lobby`` and ``P rooms:idle:finished`` — sorted sets (scores 0) of
  ``"{updated_at_ms:015d}:{room_id}"``: the rooms expiry looks at, least recently changed first.
  Running games are in none (their every move would rewrite it).  ``prepare_expiry`` indexes the rooms
  written by a version without this index (a ``SCAN`` over the room hashes, once per store: ``P
  idle-indexed`` marks it done).

``delete_room`` removes the hash, the stream, every index entry and the deadline in one script, only
if the version still matches.

Every write (create, commit, claim, release) is one Lua script, so it is atomic: a commit checks the
version and the event seq, then writes hash, stream entries, indexes and deadline together, or nothing.
Durability is what the Redis server is configured for: run it with ``appendonly yes`` and
``appendfsync always`` (or ``everysec``, accepting up to a second of loss on a power cut) when an
acknowledged move must survive a Redis crash.  The keys of one store are not hash-tagged for Redis Cluster;
use a single primary (with replicas/Sentinel for failover).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncGenerator, Callable, Collection, Coroutine, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Final, ParamSpec, TypeVar, cast
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import redis.asyncio as aioredis
import redis.exceptions
from redis.typing import KeyT, StreamIdT

from ninetynine.session.store.base import (
    CREATED_AT_DIGITS,
    PHASES,
    EventsTrimmed,
    InvalidStoreInput,
    RoomAlreadyExists,
    RoomNotFound,
    RoomRecord,
    StoredEvent,
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

DEFAULT_PREFIX: Final = "ninetynine:session:"
DEFAULT_MAXLEN: Final = 100_000
DEFAULT_MAX_CONNECTIONS: Final = 10_000
_TAIL_BATCH: Final = 500
# The shared reader's XREAD block: also how long a newly watched stream may wait to join the read.
_TAIL_BLOCK_MS: Final = 100
# Live events a tail may have queued before it is counted as lagging and re-reads the stream itself.
_LISTENER_QUEUE: Final = 1000
# Concurrent replay reads of tails: a burst of reconnecting subscribers must not open a connection each.
_TAIL_READ_CONCURRENCY: Final = 4
_READER_BACKOFF_MIN_S: Final = 0.05
_READER_BACKOFF_MAX_S: Final = 2.0

# KEYS: room, stream, due, deadline, claims, rooms:all, rooms:phase:lobby, :playing, :finished,
#       rooms:idle:lobby, rooms:idle:finished
# ARGV: op ("create"|"commit"), room_id, expected_version, version, phase, mode, seats_total, seats_taken,
#       created_at_ms, updated_at_ms, data, deadline ("" = none), list key, maxlen, n_events,
#       then per event: seq, audience, player_id, payload; last: the idle key
_WRITE_ROOM_LUA: Final = """
local room = ARGV[2]
local phase_index = {lobby = KEYS[7], playing = KEYS[8], finished = KEYS[9]}
local idle_index = {lobby = KEYS[10], finished = KEYS[11]}
local n = tonumber(ARGV[15])
local last = 0
local old = nil
if ARGV[1] == 'create' then
  if redis.call('EXISTS', KEYS[1]) == 1 then return {'EXISTS'} end
else
  old = redis.call('HMGET', KEYS[1], 'v', 'c', 'last', 'phase', 'lk', 'uk')
  if not old[1] then return {'NOTFOUND'} end
  if old[1] ~= ARGV[3] then return {'CONFLICT', old[1]} end
  if old[2] ~= ARGV[9] then return {'CREATED'} end
  last = tonumber(old[3])
end
if n > 0 and tonumber(ARGV[16]) ~= last + 1 then return {'SEQ', tostring(last)} end
-- every check passed: from here on nothing can fail half-way
if old then
  redis.call('ZREM', phase_index[old[4]], old[5])
  if old[6] and old[6] ~= '' and idle_index[old[4]] then redis.call('ZREM', idle_index[old[4]], old[6]) end
end
local idle_key = ''
if idle_index[ARGV[5]] then
  idle_key = ARGV[#ARGV]
  redis.call('ZADD', idle_index[ARGV[5]], 0, idle_key)
end
redis.call('HSET', KEYS[1], 'v', ARGV[4], 'phase', ARGV[5], 'mode', ARGV[6], 'st', ARGV[7], 'sk', ARGV[8],
  'c', ARGV[9], 'u', ARGV[10], 'data', ARGV[11], 'dl', ARGV[12], 'last', tostring(last + n), 'lk', ARGV[13],
  'uk', idle_key)
redis.call('ZADD', KEYS[6], 0, ARGV[13])
redis.call('ZADD', phase_index[ARGV[5]], 0, ARGV[13])
for i = 0, n - 1 do
  local b = 16 + i * 4
  redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[14], ARGV[b] .. '-0',
    'a', ARGV[b + 1], 'p', ARGV[b + 2], 'd', ARGV[b + 3])
end
if ARGV[12] == '' then
  redis.call('ZREM', KEYS[3], room)
  redis.call('HDEL', KEYS[4], room)
else
  redis.call('ZADD', KEYS[3], ARGV[12], room)
  redis.call('HSET', KEYS[4], room, ARGV[12])
end
redis.call('HDEL', KEYS[5], room)
return {'OK'}
"""

# KEYS: due, deadline, claims.  ARGV: now_ms, owner, lease expiry ms, limit
_CLAIM_LUA: Final = """
local rooms = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[4]))
local out = {}
for _, room in ipairs(rooms) do
  local deadline = redis.call('HGET', KEYS[2], room)
  if deadline then
    redis.call('ZADD', KEYS[1], ARGV[3], room)
    redis.call('HSET', KEYS[3], room, ARGV[2])
    out[#out + 1] = room
    out[#out + 1] = deadline
  else
    -- a due entry without a deadline cannot be fired; drop it rather than return a hole
    redis.call('ZREM', KEYS[1], room)
  end
end
return out
"""

# KEYS: due, deadline, claims.  ARGV: room_id, owner
_RELEASE_LUA: Final = """
if redis.call('HGET', KEYS[3], ARGV[1]) == ARGV[2] then
  redis.call('HDEL', KEYS[3], ARGV[1])
  local deadline = redis.call('HGET', KEYS[2], ARGV[1])
  if deadline then redis.call('ZADD', KEYS[1], deadline, ARGV[1]) end
end
return 0
"""

# KEYS: room, stream, due, deadline, claims, rooms:all, rooms:phase:lobby, :playing, :finished,
#       rooms:idle:lobby, rooms:idle:finished.  ARGV: room_id, expected_version
_DELETE_ROOM_LUA: Final = """
local old = redis.call('HMGET', KEYS[1], 'v', 'phase', 'lk', 'uk')
if old[1] ~= ARGV[2] then return 0 end
local phase_index = {lobby = KEYS[7], playing = KEYS[8], finished = KEYS[9]}
local idle_index = {lobby = KEYS[10], finished = KEYS[11]}
redis.call('ZREM', KEYS[6], old[3])
redis.call('ZREM', phase_index[old[2]], old[3])
if old[4] and old[4] ~= '' and idle_index[old[2]] then redis.call('ZREM', idle_index[old[2]], old[4]) end
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('HDEL', KEYS[4], ARGV[1])
redis.call('HDEL', KEYS[5], ARGV[1])
redis.call('DEL', KEYS[1], KEYS[2])
return 1
"""

# KEYS: room, rooms:idle:lobby, rooms:idle:finished.  ARGV: room_id
# A room hash without 'uk' was written before the idle index: add it (atomic against its commits).
_INDEX_IDLE_LUA: Final = """
local f = redis.call('HMGET', KEYS[1], 'phase', 'u', 'uk')
if not f[1] or f[3] then return 0 end
local idle_index = {lobby = KEYS[2], finished = KEYS[3]}
local key = ''
if idle_index[f[1]] then
  key = string.format('%015d', tonumber(f[2])) .. ':' .. ARGV[1]
  redis.call('ZADD', idle_index[f[1]], 0, key)
end
redis.call('HSET', KEYS[1], 'uk', key)
return 1
"""

_RawHash = dict[bytes, bytes]
_RawEntry = tuple[bytes, _RawHash]  # (stream entry id, fields)

_P = ParamSpec("_P")
_T = TypeVar("_T")


def _runs_to_completion(
    method: Callable[_P, Coroutine[Any, Any, _T]],
) -> Callable[_P, Coroutine[Any, Any, _T]]:
    """Run the store call on a task of its own, so that cancelling its caller is never lost.

    redis-py can swallow a cancellation that arrives while a command is in flight (5.0.1's
    zero-timeout connection check turns it into a timeout it retries; 8.1.0 loses it too), and
    the caller then goes on as if it had not been cancelled: a room subscription cancelled
    mid-read kept running and held a stopping replica for its whole grace period. Here the caller
    stops waiting at once; the command finishes on its own, which also returns its connection to
    the pool clean.
    """

    @functools.wraps(method)
    async def call(*args: _P.args, **kwargs: _P.kwargs) -> _T:
        task = asyncio.create_task(method(*args, **kwargs))
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            task.add_done_callback(_outcome_unwanted)
            raise

    return call


def _outcome_unwanted(task: asyncio.Task[Any]) -> None:
    """The caller was cancelled: fetch the outcome so that a failure is not logged as never retrieved."""
    if not task.cancelled():
        task.exception()


@contextmanager
def _unavailable_on_connection_errors() -> Iterator[None]:
    try:
        yield
    except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
        raise StoreUnavailable(f"Redis is unreachable: {exc}") from exc
    except redis.exceptions.ReadOnlyError as exc:  # talking to a replica during a failover
        raise StoreUnavailable(f"Redis is read-only: {exc}") from exc


def _record_from_hash(room_id: str, fields: _RawHash) -> RoomRecord:
    deadline = fields[b"dl"]
    return RoomRecord(
        room_id=room_id,
        version=int(fields[b"v"]),
        phase=fields[b"phase"].decode(),
        mode=fields[b"mode"].decode(),
        seats_total=int(fields[b"st"]),
        seats_taken=int(fields[b"sk"]),
        created_at_ms=int(fields[b"c"]),
        updated_at_ms=int(fields[b"u"]),
        data=fields[b"data"],
        deadline_ms=int(deadline) if deadline else None,
    )


def _event_from_entry(entry_id: bytes, fields: _RawHash) -> StoredEvent:
    return StoredEvent(
        seq=int(entry_id.split(b"-", 1)[0]),
        audience=fields[b"a"].decode(),
        player_id=fields[b"p"].decode(),
        payload=fields[b"d"],
    )


class _Listener:
    """One open tail: live events of its room, bounded, plus flags the reader raises out of band."""

    def __init__(self, room_id: str) -> None:
        self.room_id = room_id
        # None is a nudge to look at the flags; when the queue is full the listener is not waiting on it.
        self.queue: asyncio.Queue[StoredEvent | None] = asyncio.Queue(maxsize=_LISTENER_QUEUE)
        self.lagging = False  # an event was dropped: catch up from the stream before trusting the queue
        self.error: StoreUnavailable | None = None

    def offer(self, event: StoredEvent) -> None:
        try:
            self.queue.put_nowait(event)
        except asyncio.QueueFull:
            self.lagging = True

    def nudge(self) -> None:
        with contextlib.suppress(asyncio.QueueFull):
            self.queue.put_nowait(None)


class _SharedStreamReader:
    """One task per store that waits in a single ``XREAD BLOCK`` on the streams of every open tail.

    A connection per tail would tie up the pool with thousands of rooms; this holds one connection
    however many tails are open.  The per-stream cursor is the highest seq handed to that room's
    listeners.  The block is short so that a stream whose first tail just opened joins the read
    within ``block_ms``.
    """

    def __init__(self, client: aioredis.Redis, stream_key: Callable[[str], str], block_ms: int) -> None:
        self._redis = client
        self._stream_key = stream_key
        self._block_ms = block_ms
        self._listeners: dict[str, set[_Listener]] = {}
        self._cursors: dict[str, int] = {}
        self._rooms_by_stream: dict[bytes, str] = {}
        self._has_listeners = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    def subscribe(self, room_id: str, last_seq: int) -> _Listener:
        """Deliver events of ``room_id`` after ``last_seq`` (or after the room's current cursor)."""
        listener = _Listener(room_id)
        listeners = self._listeners.get(room_id)
        if listeners is None:
            listeners = self._listeners[room_id] = set()
            self._cursors[room_id] = last_seq
            self._rooms_by_stream[self._stream_key(room_id).encode()] = room_id
        listeners.add(listener)
        self._has_listeners.set()
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="redis-store-stream-reader")
        return listener

    def unsubscribe(self, listener: _Listener) -> None:
        listeners = self._listeners.get(listener.room_id)
        if listeners is None:
            return
        listeners.discard(listener)
        if not listeners:
            del self._listeners[listener.room_id]
            del self._cursors[listener.room_id]
            del self._rooms_by_stream[self._stream_key(listener.room_id).encode()]
        if not self._listeners:
            self._has_listeners.clear()

    async def close(self) -> None:
        self._closed = True
        for listeners in self._listeners.values():
            for listener in listeners:
                listener.nudge()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def _fail_all(self, error: StoreUnavailable) -> None:
        for listeners in self._listeners.values():
            for listener in listeners:
                listener.error = error
                listener.nudge()

    async def _run(self) -> None:
        backoff_s = _READER_BACKOFF_MIN_S
        try:
            while not self._closed:
                if not self._listeners:
                    await self._has_listeners.wait()
                    continue
                streams: dict[KeyT, StreamIdT] = {
                    self._stream_key(room_id): f"{cursor}-0" for room_id, cursor in self._cursors.items()
                }
                try:
                    reply = await self._redis.xread(streams, count=_TAIL_BATCH, block=self._block_ms)
                except redis.exceptions.RedisError as exc:
                    if self._closed:
                        return
                    # Every waiting tail learns that Redis is gone (its subscriber reconnects and replays
                    # from its own seq); the reader keeps retrying for the tails opened afterwards.
                    self._fail_all(StoreUnavailable(f"Redis is unreachable: {exc}"))
                    await asyncio.sleep(backoff_s)
                    backoff_s = min(backoff_s * 2, _READER_BACKOFF_MAX_S)
                    continue
                backoff_s = _READER_BACKOFF_MIN_S
                self._deliver(reply)
        finally:
            if not self._closed:  # an unexpected bug must not leave tails waiting forever
                self._fail_all(StoreUnavailable("the Redis event reader stopped"))

    def _deliver(self, reply: object) -> None:
        for stream, entries in cast(list[tuple[bytes, list[_RawEntry]]] | None, reply) or ():
            room_id = self._rooms_by_stream.get(stream)
            if room_id is None:
                continue  # its last tail ended while the read was in flight
            listeners = self._listeners[room_id]
            for entry_id, fields in entries:
                event = _event_from_entry(entry_id, fields)
                # max(): a read issued before the room's tails changed may return older entries.
                self._cursors[room_id] = max(self._cursors[room_id], event.seq)
                for listener in listeners:
                    listener.offer(event)


class RedisRoomStore:
    """A ``RoomStore`` on one Redis database (see the module docstring for the key layout)."""

    def __init__(self, client: aioredis.Redis, *, prefix: str = DEFAULT_PREFIX, maxlen: int = DEFAULT_MAXLEN):
        if maxlen < 1:
            raise InvalidStoreInput(f"maxlen must be >= 1, got {maxlen}")
        self.prefix = prefix
        self._redis = client
        self._maxlen = maxlen
        self._closed = False
        socket_timeout = client.connection_pool.connection_kwargs.get("socket_timeout")
        # A blocking XREAD must return before the socket read times out.
        self._block_ms = (
            _TAIL_BLOCK_MS if not socket_timeout else min(_TAIL_BLOCK_MS, int(socket_timeout * 500))
        )
        self._live = _SharedStreamReader(client, self._stream_key, self._block_ms)
        self._tail_reads = asyncio.Semaphore(_TAIL_READ_CONCURRENCY)
        self._write_room = client.register_script(_WRITE_ROOM_LUA)
        self._claim = client.register_script(_CLAIM_LUA)
        self._release = client.register_script(_RELEASE_LUA)
        self._delete = client.register_script(_DELETE_ROOM_LUA)
        self._index_idle = client.register_script(_INDEX_IDLE_LUA)
        self._due_keys = [f"{prefix}due", f"{prefix}deadline", f"{prefix}claims"]

    @classmethod
    def from_url(cls, url: str) -> RedisRoomStore:
        """``redis://host:port/db?prefix=xyz&maxlen=N`` plus any redis-py URL options."""
        parts = urlsplit(url)
        options = dict(parse_qsl(parts.query, keep_blank_values=True))
        prefix = options.pop("prefix", DEFAULT_PREFIX)
        try:
            maxlen = int(options.pop("maxlen", DEFAULT_MAXLEN))
        except ValueError as exc:
            # The URL is not echoed: it may carry a password.
            raise InvalidStoreInput("maxlen in the Redis URL is not an integer") from exc
        # Fail fast when Redis is down instead of hanging a player's move.
        options.setdefault("socket_connect_timeout", "2")
        options.setdefault("socket_timeout", "10")
        # Tails share one waiting connection, but a burst of moves still takes one connection per
        # concurrent command: redis-py's default cap of 100 would refuse the 101st with an error.
        options.setdefault("max_connections", str(DEFAULT_MAX_CONNECTIONS))
        client_url = urlunsplit(parts._replace(query=urlencode(options)))
        try:
            client = aioredis.Redis.from_url(client_url, decode_responses=False)
        except ValueError as exc:
            raise InvalidStoreInput(f"bad Redis URL: {exc}") from exc
        return cls(client, prefix=prefix, maxlen=maxlen)

    def _room_key(self, room_id: str) -> str:
        return f"{self.prefix}room:{room_id}"

    def _stream_key(self, room_id: str) -> str:
        return f"{self.prefix}events:{room_id}"

    def _index_key(self, phase: str | None) -> str:
        return f"{self.prefix}rooms:all" if phase is None else f"{self.prefix}rooms:phase:{phase}"

    def _idle_key(self, phase: str) -> str:
        return f"{self.prefix}rooms:idle:{phase}"

    def _room_keys(self, room_id: str) -> list[str]:
        """The KEYS of the write and delete scripts."""
        return [
            self._room_key(room_id),
            self._stream_key(room_id),
            *self._due_keys,
            self._index_key(None),
            *(self._index_key(phase) for phase in ("lobby", "playing", "finished")),
            *(self._idle_key(phase) for phase in ("lobby", "finished")),
        ]

    def _check_open(self) -> None:
        if self._closed:
            raise StoreUnavailable("the room store is closed")

    @_runs_to_completion
    async def _write(
        self, op: str, expected_version: int, record: RoomRecord, events: Sequence[StoredEvent]
    ) -> None:
        self._check_open()
        room_id = record.room_id
        keys = self._room_keys(room_id)
        args: list[str | int | bytes] = [
            op,
            room_id,
            expected_version,
            record.version,
            record.phase,
            record.mode,
            record.seats_total,
            record.seats_taken,
            record.created_at_ms,
            record.updated_at_ms,
            record.data,
            "" if record.deadline_ms is None else record.deadline_ms,
            list_key(record.created_at_ms, room_id),
            self._maxlen,
            len(events),
        ]
        for event in events:
            args.extend((event.seq, event.audience, event.player_id, event.payload))
        args.append(list_key(record.updated_at_ms, room_id))
        with _unavailable_on_connection_errors():
            reply = await self._write_room(keys=keys, args=args)
        outcome = reply[0].decode()
        if outcome == "OK":
            return
        if outcome == "EXISTS":
            raise RoomAlreadyExists(room_id)
        if outcome == "NOTFOUND":
            raise RoomNotFound(room_id)
        if outcome == "CONFLICT":
            raise VersionConflict(room_id, expected_version, int(reply[1]))
        if outcome == "CREATED":
            raise InvalidStoreInput(f"room {room_id!r}: created_at_ms cannot change")
        if outcome == "SEQ":
            last = int(reply[1])
            raise InvalidStoreInput(
                f"room {room_id!r}: next event seq must be {last + 1}, got {events[0].seq}"
            )
        raise AssertionError(f"unexpected reply from the room write script: {reply!r}")

    # --- RoomStore -----------------------------------------------------------------------------------

    async def create_room(self, record: RoomRecord, events: Sequence[StoredEvent] = ()) -> None:
        check_record(record)
        check_events(events)
        await self._write("create", 0, record, events)

    @_runs_to_completion
    async def load_room(self, room_id: str) -> RoomRecord | None:
        check_room_id(room_id)
        self._check_open()
        with _unavailable_on_connection_errors():
            fields = cast(_RawHash, await self._redis.hgetall(self._room_key(room_id)))
        return _record_from_hash(room_id, fields) if fields else None

    async def commit(
        self, room_id: str, expected_version: int, record: RoomRecord, events: Sequence[StoredEvent]
    ) -> None:
        check_commit(room_id, expected_version, record)
        check_events(events)
        await self._write("commit", expected_version, record, events)

    @_runs_to_completion
    async def read_events(self, room_id: str, after_seq: int, limit: int = 1000) -> list[StoredEvent]:
        check_room_id(room_id)
        check_seq(after_seq)
        check_read_limit(limit)
        self._check_open()
        with _unavailable_on_connection_errors():
            entries = cast(
                list[_RawEntry],
                await self._redis.xrange(self._stream_key(room_id), f"{after_seq + 1}-0", "+", count=limit),
            )
        return [_event_from_entry(entry_id, fields) for entry_id, fields in entries]

    @_runs_to_completion
    async def _seq_bounds(self, room_id: str) -> tuple[int, int]:
        """(oldest retained seq or last+1, last seq), read atomically."""
        self._check_open()
        with _unavailable_on_connection_errors():
            async with self._redis.pipeline(transaction=True) as pipe:
                pipe.hget(self._room_key(room_id), "last")
                pipe.xrange(self._stream_key(room_id), "-", "+", count=1)
                last_raw, first_entries = cast(tuple[bytes | None, list[_RawEntry]], await pipe.execute())
        if last_raw is None:
            raise RoomNotFound(room_id)
        last_seq = int(last_raw)
        oldest = _event_from_entry(*first_entries[0]).seq if first_entries else last_seq + 1
        return oldest, last_seq

    async def oldest_event_seq(self, room_id: str) -> int:
        check_room_id(room_id)
        oldest, _last = await self._seq_bounds(room_id)
        return oldest

    async def tail(self, room_id: str, after_seq: int) -> AsyncGenerator[StoredEvent, None]:
        check_room_id(room_id)
        check_seq(after_seq)
        async with self._tail_reads:
            oldest, last_seq = await self._seq_bounds(room_id)
        if after_seq > last_seq:
            raise InvalidStoreInput(
                f"room {room_id!r}: after_seq {after_seq} is past the last seq {last_seq}"
            )
        if after_seq + 1 < oldest:
            raise EventsTrimmed(room_id, after_seq, oldest)
        # Listen before replaying: whatever is committed during the replay is queued, and the queue's
        # entries at or below what the replay yielded are dropped, so nothing is missed or repeated.
        listener = self._live.subscribe(room_id, last_seq)
        try:
            cursor = after_seq
            must_read_stream = True
            while not self._closed:
                if listener.error is not None:
                    raise listener.error
                if must_read_stream or listener.lagging:
                    listener.lagging = False
                    must_read_stream = False
                    async for event in self._read_stream_after(room_id, cursor):
                        cursor = event.seq
                        yield event
                    continue
                live = await listener.queue.get()
                if live is None or live.seq <= cursor:
                    continue
                if live.seq > cursor + 1:  # dropped while lagging: the stream has the missing ones
                    must_read_stream = True
                    continue
                cursor = live.seq
                yield live
        finally:
            self._live.unsubscribe(listener)

    async def _read_stream_after(self, room_id: str, cursor: int) -> AsyncGenerator[StoredEvent, None]:
        """The retained events after ``cursor`` up to the stream's current end, in batches."""
        while True:
            try:
                async with self._tail_reads:
                    batch = await self.read_events(room_id, cursor, limit=_TAIL_BATCH)
            except StoreUnavailable:
                if self._closed:
                    return
                raise
            if batch and batch[0].seq != cursor + 1:
                raise EventsTrimmed(room_id, cursor, batch[0].seq)
            for event in batch:
                cursor = event.seq
                yield event
            if len(batch) < _TAIL_BATCH:
                return

    @_runs_to_completion
    async def list_rooms(
        self, *, phases: Collection[str], page_size: int, page_token: str
    ) -> tuple[list[RoomRecord], str]:
        phase_list = check_list_args(phases, page_size)
        parse_page_token(page_token)
        self._check_open()
        start = f"({page_token}" if page_token else "+"
        with _unavailable_on_connection_errors():
            # One MULTI: a room moving from one phase's index to another's is read once.
            async with self._redis.pipeline(transaction=True) as pipe:
                for phase in phase_list:
                    pipe.zrevrangebylex(self._index_key(phase), start, "-", start=0, num=page_size + 1)
                per_phase = cast(list[list[bytes]], await pipe.execute())
            keys, next_token = newest_first(
                ([member.decode() for member in members] for members in per_phase), page_size
            )
            records = await self._load_many([key.partition(":")[2] for key in keys])
        # A room can change phase or go between the index read and the hash read; keep the filter exact.
        # The token still comes from the index, so the next page starts at the right place.
        wanted = set(phase_list)
        return [record for record in records if record is not None and record.phase in wanted], next_token

    async def _load_many(self, room_ids: Sequence[str]) -> list[RoomRecord | None]:
        async with self._redis.pipeline(transaction=False) as pipe:
            for room_id in room_ids:
                pipe.hgetall(self._room_key(room_id))
            hashes = cast(list[_RawHash], await pipe.execute())
        return [
            _record_from_hash(room_id, fields) if fields else None
            for room_id, fields in zip(room_ids, hashes, strict=True)
        ]

    @_runs_to_completion
    async def idle_rooms(
        self, *, phase: str, updated_before_ms: int, after: str, limit: int
    ) -> list[RoomRecord]:
        check_idle_args(phase, updated_before_ms, after, limit)
        self._check_open()
        start = f"({after}" if after else "-"
        # Every key of a room changed at or before the cutoff sorts below the next millisecond's.
        end = f"({updated_before_ms + 1:0{CREATED_AT_DIGITS}d}:"
        with _unavailable_on_connection_errors():
            reply = await self._redis.zrangebylex(self._idle_key(phase), start, end, start=0, num=limit)
            members = cast(list[bytes], reply)
            records = await self._load_many([member.decode().partition(":")[2] for member in members])
        # The index and the hash are read apart: keep only what still matches.
        return [
            record
            for record in records
            if record is not None and record.phase == phase and record.updated_at_ms <= updated_before_ms
        ]

    @_runs_to_completion
    async def delete_room(self, room_id: str, expected_version: int) -> bool:
        check_room_id(room_id)
        self._check_open()
        with _unavailable_on_connection_errors():
            deleted = await self._delete(keys=self._room_keys(room_id), args=[room_id, expected_version])
        return bool(deleted)

    @_runs_to_completion
    async def prepare_expiry(self) -> int:
        self._check_open()
        done_key = f"{self.prefix}idle-indexed"
        room_prefix = self._room_key("")
        indexed = 0
        with _unavailable_on_connection_errors():
            if await self._redis.exists(done_key):
                return 0
            idle_keys = [self._idle_key(phase) for phase in ("lobby", "finished")]
            async for raw in self._redis.scan_iter(match=f"{room_prefix}*", count=500):
                room_id = raw.decode()[len(room_prefix) :]
                indexed += int(await self._index_idle(keys=[raw, *idle_keys], args=[room_id]))
            await self._redis.set(done_key, "1")
        return indexed

    @_runs_to_completion
    async def count_rooms(self) -> dict[str, int]:
        self._check_open()
        phases = sorted(PHASES)
        with _unavailable_on_connection_errors():
            async with self._redis.pipeline(transaction=False) as pipe:
                for phase in phases:
                    pipe.zcard(self._index_key(phase))
                counts = cast(list[int], await pipe.execute())
        return dict(zip(phases, counts, strict=True))

    @_runs_to_completion
    async def claim_due(self, now_ms: int, owner: str, lease_ms: int, limit: int) -> list[tuple[str, int]]:
        check_claim_args(owner, lease_ms, limit)
        self._check_open()
        with _unavailable_on_connection_errors():
            reply = await self._claim(keys=self._due_keys, args=[now_ms, owner, now_ms + lease_ms, limit])
        return [(reply[i].decode(), int(reply[i + 1])) for i in range(0, len(reply), 2)]

    @_runs_to_completion
    async def release(self, room_id: str, owner: str) -> None:
        check_room_id(room_id)
        self._check_open()
        with _unavailable_on_connection_errors():
            await self._release(keys=self._due_keys, args=[room_id, owner])

    @_runs_to_completion
    async def next_deadline_ms(self) -> int | None:
        self._check_open()
        with _unavailable_on_connection_errors():
            earliest = cast(
                list[tuple[bytes, float]], await self._redis.zrange(self._due_keys[0], 0, 0, withscores=True)
            )
        return int(earliest[0][1]) if earliest else None

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        await self._live.close()  # open tails end quietly
        await self._redis.aclose()
