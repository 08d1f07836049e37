"""The session's turn-deadline scheduler with N deadlines pending at once (issue 7: "10,000 pending
deadlines with lateness p99 ≤ 50 ms").

``python -m bench.load.deadlines --rooms 10000 [--rate 100] [--duration 60]
[--store sqlite|sqlite?synchronous=normal|redis://127.0.0.1:6379] [--json out.json]``

How. :class:`bench.load.stack.Stack` starts the real engine and session (and an idle gateway, which
this bench never talks to) on loopback. Over gRPC the bench creates N two-seat rooms (classic, 5 lives,
"on the board", 30 s turns), then, over a ramp of T = N / rate seconds, starts room i at i / rate
and has both humans leave it. The session auto-plays a seat that left with the engine's Timeout
move after the short turn (``SHORT_TURN_SECONDS`` = 3 s, the same turn a player gets after three
timeouts in a row, fired through the same ``_fire`` path as an idle player), and the session runs
with ``--turn-time-scale`` = T / 3 s, so every turn of every room lasts exactly T. Hence the
deadlines are spread evenly, all N are pending from the end of the ramp on (a fire re-arms its room),
and they fall due at ``rate`` per second. No room ends during a run: auto-played to the end, a
game with these options takes at least ~190 turns (200 seeds simulated), a room fires
(ramp + duration) / T times; rooms that finish anyway are counted.

What is measured over ``--duration`` seconds after the ramp:

* ``hist_*``: the session's ``ninetynine_session_deadline_lateness_seconds`` (deadline due → timeout
  move durable), difference of two scrapes. Its quantiles are *bucket upper bounds* (…, 10, 25, 50,
  100, 250 ms, …): "p99 25" means p99 ≤ 25 ms.
* ``exact_*``: due → fire start, in ms, for every timeout of the window, from the stored room
  documents read right after the window: a move's ``at_ms`` is when the session's step began (before the
  engine call and the commit), and the turn it ended was due at the previous move's ``at_ms`` (the
  turn start) + round(3000 × scale). ``durable_p99_ms`` is the session's own fire start → durable
  (``move_duration{source="timeout",stage="durable"}``, bucket bound) for the rest of the way.
  ``exact_inconsistent`` counts rooms whose stored deadline the reconstruction does not reproduce
  (should be 0).
* ``watched_*``: ``--watch`` rooms have a spectator Subscribe stream (batched); lateness = arrival of
  the timeout's batch here − the room's ``deadline_ms`` in the view before it: due → delivered to a
  subscriber, an upper bound of due → durable, exact to the millisecond (same clock).
* pending deadlines and playing / finished rooms, read from the store itself every few seconds;
  fires/s; session and engine CPU % (of one core) and RSS.
* ``quiet_*``: the box is shared, so every second also records the CPU that processes other than
  this run's used (``others_cpu``, from /proc/stat); the lateness figures are repeated over the
  seconds where that stayed under ``--quiet-below`` (25 % of a core by default).

With a ``redis://`` store the bench adds its own ``?prefix=bench-<random>:`` and deletes those keys
afterwards. The Stack removes its work dir (service logs, SQLite file) after a run that did not fail
(``NINETYNINE_LOAD_KEEP=1`` keeps it). ``--py-spy PATH`` records the session with py-spy (100 Hz,
raw) for up to 15 s of the window; py-spy pauses the process to sample, so that run's lateness is
not a clean measurement.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import secrets
import sqlite3
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit, urlunsplit

import aiohttp
import grpc
import grpc.aio
import redis.asyncio as aioredis
import redis.exceptions

from bench.load.stack import (
    HOST,
    ProcSample,
    Stack,
    StackConfig,
    bucket_count,
    bucket_quantile,
    histogram_buckets,
    read_proc,
)
from ninetynine.engine.v1 import game_pb2
from ninetynine.session.deadlines import SHORT_TURN_SECONDS
from ninetynine.session.store import open_store
from ninetynine.session.v1 import room_document_pb2 as doc_pb
from ninetynine.session.v1 import session_service_pb2 as pb
from ninetynine.session.v1 import session_service_pb2_grpc as pb_grpc

LATENESS = "ninetynine_session_deadline_lateness_seconds"
MOVE_DURATION = "ninetynine_session_move_duration_seconds"
DURABLE_TIMEOUT = 'source="timeout",stage="durable"'
PY_SPY = Path(sys.executable).with_name("py-spy")
PENDING_EVERY_S = 5.0
_TICKS = os.sysconf("SC_CLK_TCK")
# Long enough games (see the module doc): the auto-played game outlasts any run.
ROOM_OPTIONS = game_pb2.Options(mode=game_pb2.MODE_CLASSIC, lives=5, on_the_board=True, turn_seconds=30)


@dataclass
class DeadlineConfig:
    rooms: int = 1000
    rate: float = 100.0  # deadlines falling due per second once the ramp is over
    duration: float = 60.0  # measured seconds
    store: str = "sqlite"  # sqlite[?synchronous=normal] (a fresh file) or redis://host:port[/db]
    watch: int = 100  # rooms with a spectator Subscribe stream (client-seen lateness)
    concurrency: int = 64  # setup RPCs in flight
    settle: float = 2.0  # seconds between the end of the ramp and the window
    log_level: str = "info"
    py_spy: str = ""  # raw py-spy profile of the session during the window, written here
    quiet: bool = False
    # A second counts as quiet when the box's other tenants used less CPU than this (% of one core).
    quiet_below: float = 25.0

    @property
    def turn_s(self) -> float:
        """Every turn's length: the N deadlines spread over one turn fall due at ``rate``/s."""
        return self.rooms / self.rate

    @property
    def time_scale(self) -> float:
        return self.turn_s / SHORT_TURN_SECONDS

    @property
    def turn_ms(self) -> int:
        # As the session computes it (ninetynine.session.deadlines.TurnClock): round(seconds * 1000 * scale).
        return round(SHORT_TURN_SECONDS * 1000 * self.time_scale)


@dataclass
class Window:
    t0_ms: int  # wall clock, the session's
    t1_ms: int
    quiet: set[int]  # numbers (from 1) of the seconds the box's other tenants were quiet in


def second_of(at_ms: int, t0_ms: int) -> int:
    """The number (from 1) of the window's second that ``at_ms`` falls in."""
    return (at_ms - t0_ms) // 1000 + 1


@dataclass
class Seated:
    room_id: str
    host_token: str
    guest_token: str


@dataclass
class Second:
    t: int
    fires: int
    late_p50_ms: float | None  # bucket upper bounds
    late_p99_ms: float | None
    cpu_session: float
    cpu_engine: float
    rss_session_mb: float
    others_cpu: float  # CPU % (of one core) used on the box by processes other than this run's
    pending: int | None  # only every PENDING_EVERY_S


@dataclass
class Summary:
    rooms: int
    store: str
    rate_target: float
    turn_s: float
    time_scale: float
    duration_s: float
    setup_s: float = 0.0  # create + join of every room
    ramp_s: float = 0.0
    ramp_lag_max_ms: float = 0.0  # how late the ramp started a room (uneven deadlines if large)
    setup_errors: int = 0
    pending_at_window: int | None = None
    pending_min: int | None = None
    pending_max: int | None = None
    playing_end: int | None = None
    finished_end: int | None = None
    fires: int = 0
    fires_per_s: float = 0.0
    hist_p50_ms: float | None = None
    hist_p99_ms: float | None = None
    hist_p999_ms: float | None = None
    hist_max_ms: float | None = None  # upper bound of the highest non-empty bucket (inf: > 5 s)
    durable_p99_ms: float | None = None
    exact_fires: int = 0
    exact_p50_ms: float | None = None
    exact_p99_ms: float | None = None
    exact_p999_ms: float | None = None
    exact_max_ms: float | None = None
    exact_inconsistent: int = 0
    exact_other_sources: int = 0  # moves not played by the timeout policy (should be 0)
    watched_fires: int = 0
    watched_p50_ms: float | None = None
    watched_p99_ms: float | None = None
    watched_p999_ms: float | None = None
    watched_max_ms: float | None = None
    cpu_session_pct: float = 0.0  # mean over the window, of one core
    cpu_engine_pct: float = 0.0
    cpu_session_max_pct: float = 0.0  # busiest second
    rss_session_mb: float = 0.0
    rss_engine_mb: float = 0.0
    loadavg_before: float = 0.0  # the box is shared: its 1-minute load average before and after
    loadavg_after: float = 0.0
    # Share of the last minute in which some runnable task waited for a CPU (PSI), at the window's end.
    cpu_pressure_pct: float | None = None
    redis_prefix: str = ""  # the keys this run wrote (deleted afterwards)
    profiled: bool = False
    # The same figures over the quiet seconds only (see DeadlineConfig.quiet_below): the box is shared.
    others_cpu_mean_pct: float = 0.0
    quiet_below_pct: float = 0.0
    quiet_seconds: int = 0
    quiet_fires: int = 0
    quiet_hist_p99_ms: float | None = None
    quiet_hist_p999_ms: float | None = None
    quiet_exact_p50_ms: float | None = None
    quiet_exact_p99_ms: float | None = None
    quiet_exact_p999_ms: float | None = None
    quiet_exact_max_ms: float | None = None
    quiet_watched_p99_ms: float | None = None
    seconds: list[Second] = field(default_factory=list)


def quantile(sorted_values: Sequence[float], q: float) -> float | None:
    """Nearest-rank quantile of already sorted values."""
    if not sorted_values:
        return None
    return float(sorted_values[min(len(sorted_values) - 1, max(0, math.ceil(q * len(sorted_values)) - 1))])


def ms(bound: float | None) -> float | None:
    return None if bound is None else round(bound * 1000, 3)


def loadavg() -> float:
    return os.getloadavg()[0]


def box_busy_s() -> float:
    """CPU seconds the whole box has spent busy (all cores), from /proc/stat."""
    with open("/proc/stat", encoding="ascii") as fh:
        ticks = [int(v) for v in fh.readline().split()[1:]]
    idle = ticks[3] + ticks[4]  # idle + iowait
    return (sum(ticks[:8]) - idle) / _TICKS


def delta(before: list[tuple[float, float]], after: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The cumulative buckets of the observations between two scrapes."""
    old = dict(before)
    return [(bound, count - old.get(bound, 0.0)) for bound, count in after]


def add(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> list[tuple[float, float]]:
    if not a:
        return b
    extra = dict(b)
    return [(bound, count + extra.get(bound, 0.0)) for bound, count in a]


def cpu_pressure() -> float | None:
    """``some avg60`` of /proc/pressure/cpu: how contended the shared box was; None without PSI."""
    try:
        with open("/proc/pressure/cpu", encoding="ascii") as fh:
            some = fh.readline().split()
    except OSError:
        return None
    fields = dict(item.split("=", 1) for item in some[1:])
    return float(fields["avg60"]) if "avg60" in fields else None


def wall_ms() -> int:
    return time.time_ns() // 1_000_000  # the session's clock (service.now_ms)


def fire_lateness(
    doc: doc_pb.RoomDocument, turn_ms: int, t0_ms: int, t1_ms: int
) -> tuple[list[tuple[int, int]], bool, int]:
    """([(fire start, due → fire start)] of the timeouts started in [t0, t1), deadline reproduced?, others).

    Every turn lasts ``turn_ms`` from its start; a turn starts at the game's start or at the
    previous move (the session passes the same ``now`` to the engine and to the move record).
    """
    out: list[tuple[int, int]] = []
    others = 0
    start = doc.started_at_ms
    for move in doc.moves:
        if move.source != "timeout":
            others += 1
        elif t0_ms <= move.at_ms < t1_ms:
            out.append((move.at_ms, move.at_ms - (start + turn_ms)))
        start = move.at_ms
    consistent = doc.phase != pb.ROOM_PHASE_PLAYING or (
        doc.deadline_ms == start + turn_ms and doc.turn_started_at_ms == start
    )
    return out, consistent, others


class PendingProbe:
    """Pending deadlines and rooms by phase, read from the store the session writes."""

    def __init__(self, stack: Stack, store_url: str, prefix: str) -> None:
        self.sqlite_path = "" if prefix else os.path.join(stack.workdir, "rooms.db")
        self.prefix = prefix
        self.redis: aioredis.Redis | None = None
        if prefix:
            self.redis = aioredis.from_url(plain_redis_url(store_url))

    async def count(self) -> tuple[int | None, int | None, int | None]:
        """(rooms with a deadline, rooms playing, rooms finished); None where the store did not answer."""
        try:
            return await self._count()
        except (sqlite3.Error, redis.exceptions.RedisError):
            return None, None, None

    async def _count(self) -> tuple[int, int, int]:
        if self.redis is not None:
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.zcard(f"{self.prefix}due")
                pipe.zcard(f"{self.prefix}rooms:phase:playing")
                pipe.zcard(f"{self.prefix}rooms:phase:finished")
                due, playing, finished = await pipe.execute()
            return int(due), int(playing), int(finished)
        return await asyncio.to_thread(self._sqlite_count)

    def _sqlite_count(self) -> tuple[int, int, int]:
        # A reader of the WAL file: it never blocks the session's writer.
        conn = sqlite3.connect(f"file:{self.sqlite_path}?mode=ro", uri=True, timeout=5)
        try:
            due, playing, finished = conn.execute(
                "SELECT COUNT(due_at_ms), COALESCE(SUM(phase = 'playing'), 0),"
                " COALESCE(SUM(phase = 'finished'), 0) FROM rooms"
            ).fetchone()
        finally:
            conn.close()
        return int(due), int(playing), int(finished)

    async def close(self) -> None:
        if self.redis is not None:
            await self.redis.aclose()


def plain_redis_url(url: str) -> str:
    """``url`` without its query (the store's own options), for a plain redis-py client."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


async def delete_prefix(url: str, prefix: str) -> int:
    client = aioredis.from_url(plain_redis_url(url))
    deleted = 0
    try:
        batch: list[bytes] = []
        async for key in client.scan_iter(match=f"{prefix}*", count=1000):
            batch.append(key)
            if len(batch) >= 1000:
                deleted += await client.unlink(*batch)
                batch = []
        if batch:
            deleted += await client.unlink(*batch)
    finally:
        await client.aclose()
    return deleted


async def create_rooms(
    stub: pb_grpc.SessionServiceAsyncStub, n: int, concurrency: int
) -> tuple[list[Seated], int]:
    """N lobby rooms, each with its host and a second human; (rooms, errors)."""
    seated: list[Seated] = []
    errors = 0
    next_index = 0

    async def worker() -> None:
        nonlocal next_index, errors
        while next_index < n:
            i = next_index
            next_index += 1
            try:
                host = await stub.CreateRoom(
                    pb.CreateRoomRequest(name=f"h{i}", max_seats=2, options=ROOM_OPTIONS)
                )
                guest = await stub.JoinRoom(pb.JoinRoomRequest(room_id=host.room.room_id, name=f"g{i}"))
            except grpc.aio.AioRpcError:
                errors += 1
                continue
            seated.append(Seated(host.room.room_id, host.seat_token, guest.seat_token))

    await asyncio.gather(*(worker() for _ in range(min(concurrency, n))))
    return seated, errors


async def start_and_leave(stub: pb_grpc.SessionServiceAsyncStub, room: Seated) -> bool:
    """Start the game and have both humans leave: from now on every turn is auto-played."""
    try:
        await stub.StartGame(pb.StartGameRequest(token=room.host_token))
        await stub.LeaveRoom(pb.LeaveRoomRequest(token=room.host_token))
        await stub.LeaveRoom(pb.LeaveRoomRequest(token=room.guest_token))
    except grpc.aio.AioRpcError:
        return False
    return True


async def watch_room(
    stub: pb_grpc.SessionServiceAsyncStub, room_id: str, samples: list[tuple[int, int]]
) -> None:
    """Append (arrival ms, arrival − due ms) for each timeout this spectator sees, until cancelled."""
    spectator = await stub.Spectate(pb.SpectateRequest(room_id=room_id))
    due = 0  # the running turn's deadline, from the last view; 0 = unknown
    call = stub.Subscribe(pb.SubscribeRequest(token=spectator.spectator_token, after_seq=0, batched=True))
    async for item in call:
        if not item.HasField("batch"):
            continue
        arrived = wall_ms()
        batch = item.batch
        if due and any(event.HasField("timeout_applied") for event in batch.events):
            samples.append((arrived, arrived - due))
        # No view: a newer move is already stored and brings its own; the deadline is unknown till then.
        due = batch.view.room.deadline_ms if batch.HasField("view") else 0


class Scraper:
    def __init__(self, http: aiohttp.ClientSession, url: str) -> None:
        self.http = http
        self.url = url
        self.lateness: list[tuple[float, float]] = []
        self.durable: list[tuple[float, float]] = []

    async def scrape(self) -> None:
        try:
            async with self.http.get(
                self.url, timeout=aiohttp.ClientTimeout(total=5), headers={"Accept-Encoding": "identity"}
            ) as resp:
                text = await resp.text()
        except (aiohttp.ClientError, TimeoutError):
            return  # keep the last scrape
        lines = "\n".join(line for line in text.splitlines() if line.startswith((LATENESS, MOVE_DURATION)))
        self.lateness = histogram_buckets(lines, LATENESS)
        self.durable = histogram_buckets(lines, MOVE_DURATION, DURABLE_TIMEOUT)


def cpu_between(before: ProcSample | None, after: ProcSample | None) -> float:
    if before is None or after is None or after.at <= before.at:
        return 0.0
    return 100.0 * (after.cpu_s - before.cpu_s) / (after.at - before.at)


async def measure(cfg: DeadlineConfig, out: TextIO) -> Summary:
    store_url, prefix = cfg.store, ""
    if store_url.startswith(("redis://", "rediss://")):
        if "prefix=" in store_url:
            raise SystemExit("--store: leave out prefix=, the bench picks its own and deletes its keys")
        prefix = f"bench-{secrets.token_hex(6)}:"
        store_url += ("&" if "?" in store_url else "?") + f"prefix={prefix}"
    summary = Summary(
        redis_prefix=prefix,
        quiet_below_pct=cfg.quiet_below,
        rooms=cfg.rooms,
        store=cfg.store,
        rate_target=cfg.rate,
        turn_s=round(cfg.turn_s, 3),
        time_scale=cfg.time_scale,
        duration_s=cfg.duration,
    )
    stack_cfg = StackConfig(turn_time_scale=cfg.time_scale, log_level=cfg.log_level, store=store_url)
    try:
        with Stack(stack_cfg) as stack:
            try:
                room_ids, window = await drive(cfg, stack, store_url, prefix, summary, out)
                # The window is over: read every room as stored now (the Stack removes its SQLite file
                # on exit). Moves fired since the window closed are left out by their time.
                await read_back(cfg, stack, store_url, room_ids, window, summary)
            except BaseException:
                print(f"session log tail:\n{stack.log_tail('session', 20)}", file=out)
                raise
    finally:
        if prefix:
            deleted = await delete_prefix(store_url, prefix)
            print(f"redis: deleted {deleted} keys under {prefix}", file=out)
    return summary


async def drive(
    cfg: DeadlineConfig, stack: Stack, store_url: str, prefix: str, summary: Summary, out: TextIO
) -> tuple[list[str], Window]:
    """Set up, ramp, measure; returns the started rooms and the window."""
    probe = PendingProbe(stack, store_url, prefix)
    target = f"{HOST}:{stack.ports['session']}"
    loop = asyncio.get_running_loop()
    samples: list[tuple[int, int]] = []
    watchers: list[asyncio.Task[None]] = []
    async with (
        grpc.aio.insecure_channel(target) as channel,
        grpc.aio.insecure_channel(target) as watch_channel,
        aiohttp.ClientSession() as http,
    ):
        stub = pb_grpc.SessionServiceStub(channel)
        watch_stub = pb_grpc.SessionServiceStub(watch_channel)
        scraper = Scraper(http, stack.session_metrics_url)
        try:
            began = loop.time()
            seated, summary.setup_errors = await create_rooms(stub, cfg.rooms, cfg.concurrency)
            summary.setup_s = round(loop.time() - began, 1)
            print(
                f"created {len(seated)} rooms in {summary.setup_s} s; ramp {cfg.turn_s:.1f} s at "
                f"{cfg.rate:g} starts/s (turn {cfg.turn_ms} ms, --turn-time-scale {cfg.time_scale:.4g})",
                file=out,
                flush=True,
            )
            watched = {i * len(seated) // cfg.watch for i in range(min(cfg.watch, len(seated)))}
            started: list[str] = []

            async def start(i: int, room: Seated) -> None:
                if not await start_and_leave(stub, room):
                    summary.setup_errors += 1
                    return
                started.append(room.room_id)
                if i in watched:
                    watchers.append(asyncio.create_task(watch_room(watch_stub, room.room_id, samples)))

            began = loop.time()
            starters: list[asyncio.Task[None]] = []
            lag = 0.0
            for i, room in enumerate(seated):
                delay = began + i / cfg.rate - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
                lag = max(lag, -delay)
                starters.append(asyncio.create_task(start(i, room)))
            await asyncio.gather(*starters)
            summary.ramp_s = round(loop.time() - began, 1)
            summary.ramp_lag_max_ms = round(lag * 1000, 1)
            await asyncio.sleep(max(0.0, began + cfg.turn_s + cfg.settle - loop.time()))

            # The window.
            pending, _, _ = await probe.count()
            summary.pending_at_window = summary.pending_min = summary.pending_max = pending
            await scraper.scrape()
            late0, durable0 = scraper.lateness, scraper.durable
            pids = {**stack.pids(), "bench": os.getpid()}
            first = {name: read_proc(pid) for name, pid in pids.items()}
            last_second = dict(first)
            summary.loadavg_before = loadavg()
            profiler = None
            if cfg.py_spy:
                profiler = asyncio.create_task(profile(pids["session"], cfg.py_spy, cfg.duration))
                summary.profiled = True
            t0_ms = wall_ms()
            window_start = loop.time()
            busy_before = box_busy_s()
            scrapes = [scraper.lateness]
            if not cfg.quiet:
                print(f"{'t':>4} {'fires':>6} {'late50':>7} {'late99':>7} {'cpu% ses/eng':>13} "
                      f"{'others%':>7} {'rss MB':>7} {'pending':>7}", file=out, flush=True)  # fmt: skip
            next_pending = window_start + PENDING_EVERY_S
            last_tick, busy_last = window_start, busy_before
            for t in range(1, int(cfg.duration) + 1):
                await asyncio.sleep(max(0.0, window_start + t - loop.time()))
                before = scraper.lateness
                await scraper.scrape()
                scrapes.append(scraper.lateness)
                now = {name: read_proc(pid) for name, pid in pids.items()}
                tick, busy_now = loop.time(), box_busy_s()
                ours = sum(
                    sample.cpu_s - old.cpu_s
                    for name, sample in now.items()
                    if sample is not None and (old := last_second.get(name)) is not None
                )
                others = max(0.0, 100.0 * (busy_now - busy_last - ours) / max(1e-3, tick - last_tick))
                last_tick, busy_last = tick, busy_now
                pending_now: int | None = None
                if loop.time() >= next_pending:
                    next_pending += PENDING_EVERY_S
                    pending_now, _, _ = await probe.count()
                    if pending_now is not None:
                        lo, hi = summary.pending_min, summary.pending_max
                        summary.pending_min = pending_now if lo is None else min(lo, pending_now)
                        summary.pending_max = pending_now if hi is None else max(hi, pending_now)
                session_now = now["session"]
                row = Second(
                    t=t,
                    fires=bucket_count(before, scraper.lateness),
                    late_p50_ms=ms(bucket_quantile(before, scraper.lateness, 0.5)),
                    late_p99_ms=ms(bucket_quantile(before, scraper.lateness, 0.99)),
                    cpu_session=round(cpu_between(last_second["session"], session_now), 1),
                    cpu_engine=round(cpu_between(last_second["engine"], now["engine"]), 1),
                    rss_session_mb=round((session_now.rss_bytes if session_now else 0) / 2**20, 1),
                    others_cpu=round(others, 1),
                    pending=pending_now,
                )
                last_second = now
                summary.seconds.append(row)
                if not cfg.quiet:
                    print(
                        f"{t:>4} {row.fires:>6} {fmt(row.late_p50_ms):>7} {fmt(row.late_p99_ms):>7} "
                        f"{row.cpu_session:>6.1f}/{row.cpu_engine:<6.1f} {row.others_cpu:>7.1f} "
                        f"{row.rss_session_mb:>7.1f} {fmt(pending_now):>7}",
                        file=out,
                        flush=True,
                    )
            t1_ms = wall_ms()
            elapsed = loop.time() - window_start
            summary.loadavg_after = loadavg()
            summary.cpu_pressure_pct = cpu_pressure()
            end = {name: read_proc(pid) for name, pid in pids.items()}
            summary.cpu_session_pct = round(cpu_between(first["session"], end["session"]), 1)
            summary.cpu_engine_pct = round(cpu_between(first["engine"], end["engine"]), 1)
            summary.cpu_session_max_pct = max((s.cpu_session for s in summary.seconds), default=0.0)
            summary.rss_session_mb = round((end["session"].rss_bytes if end["session"] else 0) / 2**20, 1)
            summary.rss_engine_mb = round((end["engine"].rss_bytes if end["engine"] else 0) / 2**20, 1)
            summary.fires = bucket_count(late0, scraper.lateness)
            summary.fires_per_s = round(summary.fires / elapsed, 1)
            summary.hist_p50_ms = ms(bucket_quantile(late0, scraper.lateness, 0.5))
            summary.hist_p99_ms = ms(bucket_quantile(late0, scraper.lateness, 0.99))
            summary.hist_p999_ms = ms(bucket_quantile(late0, scraper.lateness, 0.999))
            summary.hist_max_ms = ms(bucket_quantile(late0, scraper.lateness, 1.0))
            summary.durable_p99_ms = ms(bucket_quantile(durable0, scraper.durable, 0.99))
            _, summary.playing_end, summary.finished_end = await probe.count()
            seen = [(arrived, late) for arrived, late in samples if t0_ms <= arrived < t1_ms]
            watched_late = sorted(late for _, late in seen)
            summary.watched_fires = len(watched_late)
            summary.watched_p50_ms = quantile(watched_late, 0.5)
            summary.watched_p99_ms = quantile(watched_late, 0.99)
            summary.watched_p999_ms = quantile(watched_late, 0.999)
            summary.watched_max_ms = quantile(watched_late, 1.0)
            # The quiet seconds: the box's other tenants left this run the CPU.
            summary.others_cpu_mean_pct = round(
                sum(row.others_cpu for row in summary.seconds) / max(1, len(summary.seconds)), 1
            )
            quiet = {row.t for row in summary.seconds if row.others_cpu < cfg.quiet_below}
            summary.quiet_seconds = len(quiet)
            quiet_hist: list[tuple[float, float]] = []
            for t in quiet:
                quiet_hist = add(quiet_hist, delta(scrapes[t - 1], scrapes[t]))
            summary.quiet_hist_p99_ms = ms(bucket_quantile([], quiet_hist, 0.99))
            summary.quiet_hist_p999_ms = ms(bucket_quantile([], quiet_hist, 0.999))
            quiet_watched = sorted(late for arrived, late in seen if second_of(arrived, t0_ms) in quiet)
            summary.quiet_watched_p99_ms = quantile(quiet_watched, 0.99)
            if profiler is not None:
                await profiler
            return started, Window(t0_ms, t1_ms, quiet)
        finally:
            for task in watchers:
                task.cancel()
            await asyncio.gather(*watchers, return_exceptions=True)
            await probe.close()


async def profile(pid: int, path: str, duration: float) -> None:
    """py-spy over the middle of the window (it pauses the session to sample: see the module doc)."""
    seconds = max(1, min(15, int(duration) - 10))
    await asyncio.sleep(min(5.0, max(0.0, duration - seconds) / 2))
    proc = await asyncio.create_subprocess_exec(
        str(PY_SPY), "record", "-r", "100", "-f", "raw", "-o", path, "--pid", str(pid), "-d", str(seconds),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    await proc.wait()


async def read_back(
    cfg: DeadlineConfig,
    stack: Stack,
    store_url: str,
    room_ids: list[str],
    window: Window,
    summary: Summary,
) -> None:
    """Exact due → fire start of every timeout in the window, from the stored room documents."""
    if store_url.startswith("sqlite"):
        stored = await asyncio.to_thread(read_sqlite_rooms, os.path.join(stack.workdir, "rooms.db"))
    else:
        stored = await read_store_rooms(store_url, room_ids)
    fires: list[tuple[int, int]] = []
    for room_id in room_ids:
        data = stored.get(room_id)
        if data is None:
            summary.exact_inconsistent += 1
            continue
        fired, consistent, others = fire_lateness(
            doc_pb.RoomDocument.FromString(data), cfg.turn_ms, window.t0_ms, window.t1_ms
        )
        fires.extend(fired)
        summary.exact_inconsistent += not consistent
        summary.exact_other_sources += others
    late = sorted(late for _, late in fires)
    summary.exact_fires = len(late)
    summary.exact_p50_ms = quantile(late, 0.5)
    summary.exact_p99_ms = quantile(late, 0.99)
    summary.exact_p999_ms = quantile(late, 0.999)
    summary.exact_max_ms = quantile(late, 1.0)
    quiet = sorted(late for at_ms, late in fires if second_of(at_ms, window.t0_ms) in window.quiet)
    summary.quiet_fires = len(quiet)
    summary.quiet_exact_p50_ms = quantile(quiet, 0.5)
    summary.quiet_exact_p99_ms = quantile(quiet, 0.99)
    summary.quiet_exact_p999_ms = quantile(quiet, 0.999)
    summary.quiet_exact_max_ms = quantile(quiet, 1.0)


def read_sqlite_rooms(path: str) -> dict[str, bytes]:
    """Every room's document, through a read-only connection beside the session's writer."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    try:
        return {room_id: data for room_id, data in conn.execute("SELECT room_id, data FROM rooms")}
    finally:
        conn.close()


async def read_store_rooms(store_url: str, room_ids: list[str]) -> dict[str, bytes]:
    """The rooms' documents through the session's own store class (Redis: any number of readers)."""
    store = open_store(store_url)
    limit = asyncio.Semaphore(32)
    out: dict[str, bytes] = {}

    async def one(room_id: str) -> None:
        async with limit:
            record = await store.load_room(room_id)
        if record is not None:
            out[room_id] = record.data

    try:
        await asyncio.gather(*(one(room_id) for room_id in room_ids))
    finally:
        await store.close()
    return out


def fmt(value: float | None) -> str:
    if value is None:
        return "-"
    if value == math.inf:
        return ">5000"
    return f"{value:g}"


def report(s: Summary, out: TextIO) -> None:
    print(
        f"\n{s.rooms} rooms on {s.store}: turn {s.turn_s} s (scale {s.time_scale:.4g}), target "
        f"{s.rate_target:g} fires/s; setup {s.setup_s} s, ramp {s.ramp_s} s (start lag max "
        f"{s.ramp_lag_max_ms} ms), setup errors {s.setup_errors}",
        file=out,
    )
    print(
        f"pending deadlines: {s.pending_at_window} at the window, {s.pending_min}..{s.pending_max} during; "
        f"playing {s.playing_end}, finished {s.finished_end} at the end",
        file=out,
    )
    print(f"fires: {s.fires} in {s.duration_s:g} s = {s.fires_per_s} /s", file=out)
    print(
        f"lateness, histogram (due -> durable, bucket upper bounds): p50 <= {fmt(s.hist_p50_ms)} ms, "
        f"p99 <= {fmt(s.hist_p99_ms)} ms, p99.9 <= {fmt(s.hist_p999_ms)} ms, max <= {fmt(s.hist_max_ms)} ms; "
        f"fire start -> durable p99 <= {fmt(s.durable_p99_ms)} ms",
        file=out,
    )
    print(
        f"lateness, exact (due -> fire start, {s.exact_fires} fires): p50 {fmt(s.exact_p50_ms)} ms, "
        f"p99 {fmt(s.exact_p99_ms)} ms, p99.9 {fmt(s.exact_p999_ms)} ms, max {fmt(s.exact_max_ms)} ms "
        f"(rooms not reproduced: {s.exact_inconsistent}, non-timeout moves: {s.exact_other_sources})",
        file=out,
    )
    print(
        f"lateness, watched (due -> delivered to a subscriber, {s.watched_fires} fires): p50 "
        f"{fmt(s.watched_p50_ms)} ms, p99 {fmt(s.watched_p99_ms)} ms, p99.9 {fmt(s.watched_p999_ms)} ms, "
        f"max {fmt(s.watched_max_ms)} ms",
        file=out,
    )
    print(
        f"session CPU {s.cpu_session_pct} % (busiest second {s.cpu_session_max_pct} %), RSS "
        f"{s.rss_session_mb} MB; engine CPU {s.cpu_engine_pct} %, RSS {s.rss_engine_mb} MB; load average "
        f"{s.loadavg_before:.2f} -> {s.loadavg_after:.2f}, CPU pressure (some, avg60) "
        f"{fmt(s.cpu_pressure_pct)} %, other tenants {s.others_cpu_mean_pct} % CPU on average"
        + ("; PROFILED (py-spy pauses)" if s.profiled else ""),
        file=out,
    )
    print(
        f"quiet seconds (other tenants < {s.quiet_below_pct:g} % CPU): {s.quiet_seconds} of "
        f"{len(s.seconds)}, {s.quiet_fires} fires: exact p50 {fmt(s.quiet_exact_p50_ms)} ms, p99 "
        f"{fmt(s.quiet_exact_p99_ms)} ms, p99.9 {fmt(s.quiet_exact_p999_ms)} ms, max "
        f"{fmt(s.quiet_exact_max_ms)} ms; histogram p99 <= {fmt(s.quiet_hist_p99_ms)} ms, p99.9 <= "
        f"{fmt(s.quiet_hist_p999_ms)} ms; watched p99 {fmt(s.quiet_watched_p99_ms)} ms",
        file=out,
        flush=True,
    )


def build_parser() -> argparse.ArgumentParser:
    d = DeadlineConfig()
    parser = argparse.ArgumentParser(
        prog="python -m bench.load.deadlines", description=(__doc__ or "").split("\n\n")[0]
    )
    parser.add_argument("--rooms", type=int, default=d.rooms, help="rooms, hence pending deadlines")
    parser.add_argument("--rate", type=float, default=d.rate, help="deadlines due per second")
    parser.add_argument("--duration", type=float, default=d.duration, help="measured seconds")
    parser.add_argument(
        "--store",
        default=d.store,
        help="sqlite, sqlite?synchronous=normal (a fresh file) or redis://host:port",
    )
    parser.add_argument("--watch", type=int, default=d.watch, help="rooms followed by a Subscribe stream")
    parser.add_argument("--concurrency", type=int, default=d.concurrency, help="setup RPCs in flight")
    parser.add_argument("--log-level", default=d.log_level, help="the services' log level")
    parser.add_argument(
        "--quiet-below",
        type=float,
        default=d.quiet_below,
        help="a second is quiet when other processes on the box used less CPU than this (%% of a core)",
    )
    parser.add_argument("--py-spy", default="", metavar="PATH", help="profile the session (raw) to PATH")
    parser.add_argument("--quiet", action="store_true", help="no per-second lines")
    parser.add_argument("--json", metavar="PATH", help="write the summary and every second to PATH")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.rooms < 1 or args.rate <= 0 or args.duration < 1 or args.watch < 0 or args.concurrency < 1:
        raise SystemExit("--rooms, --concurrency >= 1, --rate > 0, --duration >= 1, --watch >= 0")
    cfg = DeadlineConfig(
        rooms=args.rooms,
        rate=args.rate,
        duration=args.duration,
        store=args.store,
        watch=args.watch,
        concurrency=args.concurrency,
        log_level=args.log_level,
        py_spy=args.py_spy,
        quiet=args.quiet,
        quiet_below=args.quiet_below,
    )
    summary = asyncio.run(measure(cfg, sys.stdout))
    report(summary, sys.stdout)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(to_json(summary), fh, indent=1)
    return 0


def to_json(summary: Summary) -> dict[str, Any]:
    """The summary as JSON data; a histogram bound past the last bucket (inf) becomes the string ">5000"."""

    def clean(value: Any) -> Any:
        if isinstance(value, float) and math.isinf(value):
            return ">5000"
        if isinstance(value, dict):
            return {key: clean(item) for key, item in value.items()}
        if isinstance(value, list):
            return [clean(item) for item in value]
        return value

    data: dict[str, Any] = clean(asdict(summary))
    return data


if __name__ == "__main__":
    sys.exit(main())
