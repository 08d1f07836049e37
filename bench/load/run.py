"""One load run: start the stack, measure the echo floor, connect, seat, play, report, stop.

Phases, each bounded in time: (1) the echo floor on the idle machine; (2) connect every
client (``hello`` only) over the first half of the ramp -- the gateway's RSS growth divided by
the clients is the memory per idle connection; (3) start the tables over the second half of
the ramp; (4) the measured window of ``duration`` seconds, one report line per second; (5)
stop: close every socket, stop the services. The summary covers the measured window only.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import os
import random
import resource
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Coroutine
from dataclasses import asdict, dataclass, field
from typing import Any, TextIO, TypeVar

import aiohttp

from bench.framework import percentile
from bench.load.clients import Behaviour, Client, RequestFailed, Table, Tally
from bench.load.stack import (
    PROCS,
    REPO_ROOT,
    ProcSampler,
    Stack,
    StackConfig,
    bucket_count,
    bucket_quantile,
    histogram_buckets,
    open_files,
    per_process,
    read_proc,
)
from bench.servers import ServerProcess
from ninetynine.common.runner import tune_gc

LATENESS = "ninetynine_session_deadline_lateness_seconds"
MOVE_DURATION = "ninetynine_session_move_duration_seconds"
# Session-side move stages scraped each second: received -> durable, received -> fanned out.
STAGES = ("durable", "fanout")
MB = 1024 * 1024
T = TypeVar("T")


@dataclass
class LoadConfig:
    players: int = 400  # WebSocket clients in all (seated humans and spectators)
    duration: float = 60.0  # measured seconds after the ramp
    ramp: float = 20.0
    turn_seconds: int = 10  # the rooms' turnSeconds option (10, 15, 20 or 30)
    turn_time_scale: float = 0.6  # the session's --turn-time-scale: 10 s turns become 6 s
    bot_think_ms: int = 3000  # bots pace like people: a move every ~3 s per room
    bot_room_every: int = 5  # every 5th room has 3 people and a bot
    spectator_room_every: int = 10  # every 10th room has a spectator
    think_min_s: float = 1.5
    think_max_s: float = 4.0
    afk_probability: float = 0.02
    reconnects_per_minute: float = 0.02
    log_level: str = "info"
    store: str = "sqlite"
    engine_local: bool = False  # the session runs the rules itself (--engine local); no engine process
    seed: int = 7
    quiet: bool = False
    idle: bool = False  # connect and seat only, no games: memory per idle connection (run_idle)

    @property
    def turn_deadline_s(self) -> float:
        return self.turn_seconds * self.turn_time_scale


@dataclass
class Second:
    t: float
    moves: int
    p50_ms: float | None
    p99_ms: float | None
    p999_ms: float | None
    lateness_p99_ms: float | None
    errors: int
    stuck: int
    rooms_playing: int
    cpu: dict[str, float]
    rss_mb: dict[str, float]
    wall: float = 0.0  # Unix time of the end of this second, to line it up with the services' logs
    # p99 bucket bound of the session's own move stages (ms), so a slow second can be placed:
    # session/store (durable), session fan-out, or after the session (gateway, this generator).
    session_p99_ms: dict[str, float | None] = field(default_factory=dict)
    # The generator's own stalls this second: longest event-loop lag and GC pause total (ms);
    # client-seen latency includes them, so a spike with a large value here is the generator's.
    loadgen_lag_ms: float = 0.0
    loadgen_gc_ms: float = 0.0


@dataclass
class Summary:
    config: dict[str, Any]
    echo_floor: dict[str, float]
    echo_loaded: dict[str, float] = field(default_factory=dict)
    clients: int = 0
    rooms: int = 0
    rooms_playing_end: int = 0
    moves: int = 0
    moves_per_s: float = 0.0
    move_samples: int = 0
    p50_ms: float | None = None
    p99_ms: float | None = None
    p999_ms: float | None = None
    p99_vs_echo_p99: float | None = None
    lateness_samples: int = 0
    lateness_p50_ms: float | None = None
    lateness_p99_ms: float | None = None
    errors: dict[str, int] = field(default_factory=dict)
    stuck_max: int = 0
    stuck_end: int = 0
    games_finished: int = 0
    reconnects: int = 0
    duplicate_events: int = 0
    cpu_avg: dict[str, float] = field(default_factory=dict)
    rss_mb_end: dict[str, float] = field(default_factory=dict)
    idle_connection_kb: float | None = None
    room_kb: float | None = None
    connect_failures: int = 0
    seconds: list[Second] = field(default_factory=list)


@dataclass
class IdleSummary:
    """``--idle``: what N connections cost while nothing is played (see :func:`run_idle`)."""

    config: dict[str, Any]
    clients: int = 0
    rooms: int = 0
    connected: int = 0
    connect_failures: int = 0
    connect_s: float = 0.0
    seated: int = 0
    seat_failures: int = 0
    seat_s: float = 0.0
    open_at_end: int = 0
    # per process: soft open-files limit, and files open once everyone is seated
    open_files_limit: dict[str, int | None] = field(default_factory=dict)
    open_files_seated: dict[str, int | None] = field(default_factory=dict)
    # stage ("before", "hello", "seated", "end") -> process -> RSS MB
    rss_mb: dict[str, dict[str, float]] = field(default_factory=dict)
    # stage ("hello": connected and greeted; "bound": the growth from seating) -> process -> KiB
    kib_per_connection: dict[str, dict[str, float]] = field(default_factory=dict)
    cpu_avg_hold: dict[str, float] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)


def raise_open_files_limit() -> int:
    """Raise this process's soft open-files limit to the hard one; children inherit it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def _ms(values: list[float], pct: float) -> float | None:
    return round(percentile(values, pct) * 1000, 2) if values else None


def echo_once(port: int, calls: int, interval_ms: float = 0.0) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-m", "bench.load.echo", "--port", str(port), "--calls", str(calls),
         "--interval-ms", str(interval_ms)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    result: dict[str, float] = json.loads(out.stdout)
    return result


async def _echo_during(port: int, seconds: float) -> dict[str, float]:
    calls = max(50, int(seconds * 10))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bench.load.echo", "--port", str(port), "--calls", str(calls),
        "--interval-ms", "100", cwd=REPO_ROOT, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    try:
        stdout, _ = await asyncio.wait_for(proc.communicate(), seconds * 2 + 60)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        return {}
    return json.loads(stdout) if stdout else {}


def build_tables(cfg: LoadConfig, url: str, tally: Tally) -> list[Table]:
    rng = random.Random(cfg.seed)
    behaviour = Behaviour(
        think_s=(cfg.think_min_s, cfg.think_max_s),
        afk_probability=cfg.afk_probability,
        reconnects_per_minute=cfg.reconnects_per_minute,
    )

    def client(name: str) -> Client:
        return Client(url, name, tally, behaviour, random.Random(rng.getrandbits(32)))

    tables: list[Table] = []
    left = cfg.players
    while left >= 3:
        index = len(tables)
        humans = 3 if index % cfg.bot_room_every == cfg.bot_room_every - 1 else 4
        humans = min(humans, left)
        spectators = 1 if index % cfg.spectator_room_every == 0 and left > humans else 0
        people = [client(f"c{index}-{n}") for n in range(humans + spectators)]
        tables.append(Table(index, people[0], people[1:humans], people[humans:], tally, cfg.turn_seconds))
        left -= humans + spectators
    if tables and left:
        first = tables[0]
        first.spectators.extend(client(f"extra-{n}") for n in range(left))
    return tables


async def _paced(items: list[Any], seconds: float, start: Any) -> list[Any]:
    """``start(item)`` for every item, spread evenly over ``seconds``; the started tasks."""
    tasks = []
    began = time.monotonic()
    for n, item in enumerate(items):
        due = began + seconds * n / max(1, len(items))
        delay = due - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(start(item)))
    return tasks


async def _connect(client: Client, tally: Tally) -> bool:
    for attempt in range(3):
        try:
            await client.connect()
            return True
        except Exception as exc:  # noqa: BLE001 - any failure to connect is counted, then retried
            tally.errors[f"connect:{type(exc).__name__}"] += 1
            await asyncio.sleep(0.5 * (attempt + 1))
    return False


async def _chaos(tables: list[Table], cfg: LoadConfig, stop: asyncio.Event, rng: random.Random) -> None:
    """Once a second: keepalive pings (and expiry of unanswered ones), and random seated or
    watching clients drop and resume. Only a reconnect needs a task; the rest is a plain call."""
    clients = [c for t in tables for c in t.clients]
    per_second = cfg.reconnects_per_minute / 60
    busy: set[asyncio.Task[None]] = set()
    while not stop.is_set():
        now = time.monotonic()
        for client in clients:
            if client.table is not None and client.table.playing and rng.random() < per_second:
                task = asyncio.create_task(client.reconnect())
                busy.add(task)
                task.add_done_callback(busy.discard)
            else:
                client.keepalive(now)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 1.0)
    for task in list(busy):
        task.cancel()


class StallWatch:
    """This process's own stalls: the longest event-loop lag and the GC pause time per interval.

    The lag is how late a 10 ms timer fires; the timer re-arms itself (a plain callback, not a
    sleeping task: 100 wake-ups a second are cheaper that way)."""

    TICK_S = 0.01

    def __init__(self) -> None:
        self.max_lag_s = 0.0
        self.gc_s = 0.0
        self._gc_started = 0.0
        self._due = 0.0
        self._timer: asyncio.TimerHandle | None = None

    def _on_gc(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._gc_started = time.perf_counter()
        elif self._gc_started:
            self.gc_s += time.perf_counter() - self._gc_started

    def _tick(self) -> None:
        now = time.perf_counter()
        if self._due:
            self.max_lag_s = max(self.max_lag_s, now - self._due)
        self._due = now + self.TICK_S
        self._timer = asyncio.get_running_loop().call_later(self.TICK_S, self._tick)

    def start(self) -> None:
        gc.callbacks.append(self._on_gc)
        self._tick()

    def stop(self) -> None:
        with contextlib.suppress(ValueError):
            gc.callbacks.remove(self._on_gc)
        if self._timer is not None:
            self._timer.cancel()

    def take(self) -> tuple[float, float]:
        """(max loop lag ms, GC ms) since the last call."""
        taken = (round(self.max_lag_s * 1000, 1), round(self.gc_s * 1000, 1))
        self.max_lag_s = self.gc_s = 0.0
        return taken


class Reporter:
    def __init__(
        self, cfg: LoadConfig, stack: Stack, tally: Tally, http: aiohttp.ClientSession, out: TextIO
    ) -> None:
        self.cfg = cfg
        self.stack = stack
        self.tally = tally
        self.http = http
        self.out = out
        pids = {**stack.pids(), "loadgen": os.getpid()}
        self.sampler = ProcSampler(pids)
        self.lateness: list[tuple[float, float]] = []
        self.stages: dict[str, list[tuple[float, float]]] = {stage: [] for stage in STAGES}
        self.stuck_ever: set[str] = set()
        self.stalls = StallWatch()

    async def scrape(self) -> None:
        """Read the session's histograms (lateness, move stages); keep the old ones if it fails."""
        try:
            # identity: the page is on loopback, gunzipping it every second only costs CPU here
            async with self.http.get(
                self.stack.session_metrics_url,
                timeout=aiohttp.ClientTimeout(total=5),
                headers={"Accept-Encoding": "identity"},
            ) as resp:
                text = await resp.text()
        except (aiohttp.ClientError, TimeoutError):
            return
        # Only the lines of the two histograms, found once, instead of splitting the page per series.
        lines = "\n".join(line for line in text.splitlines() if line.startswith((LATENESS, MOVE_DURATION)))
        self.lateness = histogram_buckets(lines, LATENESS)
        for stage in STAGES:
            self.stages[stage] = histogram_buckets(lines, MOVE_DURATION, f'stage="{stage}"')

    def header(self) -> None:
        if not self.cfg.quiet:
            print(
                f"{'t':>4} {'moves':>6} {'p50ms':>7} {'p99ms':>7} {'p999ms':>7} {'late99':>7} {'err':>4} "
                f"{'stuck':>5} {'rooms':>5} {'dur99':>6} {'fan99':>6} {'lag':>5} {'gc':>4}  "
                "cpu% engine/session/gateway/loadgen   rss MB",
                file=self.out,
                flush=True,
            )

    async def second(self, t: float) -> tuple[Second, list[float], Counter[str]]:
        latencies, moves, errors = self.tally.take_interval()
        latencies.sort()
        lateness_before, stages_before = self.lateness, dict(self.stages)
        await self.scrape()
        late99 = bucket_quantile(lateness_before, self.lateness, 0.99)
        session_p99: dict[str, float | None] = {}
        for stage in STAGES:
            bound = bucket_quantile(stages_before[stage], self.stages[stage], 0.99)
            session_p99[stage] = None if bound is None else round(bound * 1000, 1)
        lag_ms, gc_ms = self.stalls.take()
        now = time.monotonic()
        stuck = 0
        for room_id, table in list(self.tally.rooms.items()):
            if table.playing and now - table.last_event_at > 3 * self.cfg.turn_deadline_s:
                stuck += 1
                self.stuck_ever.add(room_id)
        procs = self.sampler.sample()
        row = Second(
            t=round(t, 1),
            moves=moves,
            p50_ms=_ms(latencies, 50),
            p99_ms=_ms(latencies, 99),
            p999_ms=_ms(latencies, 99.9),
            lateness_p99_ms=None if late99 is None else round(late99 * 1000, 1),
            errors=sum(errors.values()),
            stuck=stuck,
            rooms_playing=sum(1 for tb in self.tally.rooms.values() if tb.playing),
            cpu={name: round(cpu, 1) for name, (cpu, _) in procs.items()},
            rss_mb={name: round(rss / MB, 1) for name, (_, rss) in procs.items()},
            wall=round(time.time(), 3),
            session_p99_ms=session_p99,
            loadgen_lag_ms=lag_ms,
            loadgen_gc_ms=gc_ms,
        )
        if not self.cfg.quiet:
            cpu = per_process(row.cpu, PROCS)
            rss = per_process(row.rss_mb, PROCS)

            def f(v: float | None) -> str:
                return "-" if v is None else f"{v:.1f}"

            print(
                f"{row.t:>4.0f} {row.moves:>6} {f(row.p50_ms):>7} {f(row.p99_ms):>7} {f(row.p999_ms):>7} "
                f"{f(row.lateness_p99_ms):>7} {row.errors:>4} {row.stuck:>5} {row.rooms_playing:>5} "
                f"{f(session_p99['durable']):>6} {f(session_p99['fanout']):>6} {lag_ms:>5.0f} {gc_ms:>4.0f}  "
                f"{cpu:<34} {rss}",
                file=self.out,
                flush=True,
            )
        return row, latencies, errors


async def run_load(cfg: LoadConfig, stack: Stack, echo_port: int, out: TextIO) -> Summary:
    summary = Summary(config=asdict(cfg), echo_floor={})
    tally = Tally()
    stop = asyncio.Event()
    connector = aiohttp.TCPConnector(limit=0, force_close=False)
    async with aiohttp.ClientSession(connector=connector) as http:
        tables = build_tables(cfg, stack.ws_url, tally)
        clients = [c for t in tables for c in t.clients]
        summary.clients, summary.rooms = len(clients), len(tables)
        reporter = Reporter(cfg, stack, tally, http, out)

        def rss(name: str) -> int:
            sample = read_proc(stack.pids()[name])
            return 0 if sample is None else sample.rss_bytes

        rss_before = rss("gateway")
        # Keepalive from the start: with a long ramp the first clients would otherwise be silent
        # for longer than the gateway's idle limit (3 × heartbeat = 60 s) before seating begins.
        chaos = asyncio.create_task(_chaos(tables, cfg, stop, random.Random(cfg.seed + 1)))
        print(f"connecting {len(clients)} clients over {cfg.ramp / 2:.0f} s ...", file=out, flush=True)
        connect_tasks = await _paced(clients, cfg.ramp / 2, lambda c: _connect(c, tally))
        connected = await asyncio.gather(*connect_tasks)
        summary.connect_failures = connected.count(False)
        await asyncio.sleep(1.0)
        rss_idle = {name: rss(name) for name in ("session", "gateway")}
        if clients:
            summary.idle_connection_kb = round((rss_idle["gateway"] - rss_before) / len(clients) / 1024, 1)
        print(f"seating {len(tables)} rooms over {cfg.ramp / 2:.0f} s ...", file=out, flush=True)
        games = await _paced(tables, cfg.ramp / 2, lambda t: t.play_games(stop))
        # The clients, tables and connections live for the whole run: keep them out of the cyclic
        # GC's scans, whose full passes otherwise stalled this process for 0.2-0.6 s (StallWatch),
        # and collect the young generation as rarely as the services do: most of what a frame
        # allocates dies young, and the collector had ~11 % of this process's py-spy samples.
        gc.collect()
        tune_gc()
        tally.take_interval()
        reporter.sampler.sample()
        await reporter.scrape()
        lateness_start = reporter.lateness
        reporter.stalls.start()
        echo_task = asyncio.create_task(_echo_during(echo_port, cfg.duration))
        reporter.header()
        began = time.monotonic()
        all_latencies: list[float] = []
        all_errors: Counter[str] = Counter()
        cpu_sums: Counter[str] = Counter()
        moves_start, finished_start, reconnects_start = 0, tally.games_finished, tally.reconnects
        for n in range(1, int(cfg.duration) + 1):
            await asyncio.sleep(max(0.0, began + n - time.monotonic()))
            row, latencies, errors = await reporter.second(time.monotonic() - began)
            summary.seconds.append(row)
            all_latencies.extend(latencies)
            all_errors.update(errors)
            moves_start += row.moves
            summary.stuck_max = max(summary.stuck_max, row.stuck)
            cpu_sums.update(row.cpu)
        elapsed = time.monotonic() - began
        reporter.stalls.stop()
        lateness_end = reporter.lateness
        last = summary.seconds[-1] if summary.seconds else None
        summary.rss_mb_end = dict(last.rss_mb) if last else {}
        summary.stuck_end = last.stuck if last else 0
        summary.rooms_playing_end = last.rooms_playing if last else 0
        rss_rooms = {name: rss(name) for name in ("session", "gateway")}
        if summary.rooms_playing_end:
            grown = sum(rss_rooms[n] - rss_idle[n] for n in rss_rooms)
            summary.room_kb = round(grown / summary.rooms_playing_end / 1024, 1)
        stop.set()
        summary.echo_loaded = await echo_task
        chaos.cancel()
        await asyncio.wait(games, timeout=15)
        for c in clients:
            c.close()

    all_latencies.sort()
    summary.moves = moves_start
    summary.moves_per_s = round(moves_start / elapsed, 1)
    summary.move_samples = len(all_latencies)
    summary.p50_ms, summary.p99_ms, summary.p999_ms = (_ms(all_latencies, p) for p in (50, 99, 99.9))
    summary.lateness_samples = bucket_count(lateness_start, lateness_end)
    for q, name in ((0.5, "lateness_p50_ms"), (0.99, "lateness_p99_ms")):
        value = bucket_quantile(lateness_start, lateness_end, q)
        setattr(summary, name, None if value is None else round(value * 1000, 1))
    summary.errors = dict(all_errors)
    summary.games_finished = tally.games_finished - finished_start
    summary.reconnects = tally.reconnects - reconnects_start
    summary.duplicate_events = tally.duplicate_events
    summary.cpu_avg = {
        name: round(total / max(1, len(summary.seconds)), 1) for name, total in cpu_sums.items()
    }
    return summary


IDLE_PROCS = PROCS
IDLE_SETTLE_S = 2.0  # after each stage, before reading RSS: late replies and allocations land
IDLE_LINE_EVERY_S = 5


async def run_idle(cfg: LoadConfig, stack: Stack, out: TextIO) -> IdleSummary:
    """Memory of idle connections: connect and ``hello`` every client over the first half of the
    ramp, then bind them (create/join/spectate, no bot, no game) over the second half, then hold
    them ``duration`` seconds with keepalive pings only. RSS of every process is read before, after
    each stage and at the end; growth per connection is reported per stage (KiB)."""
    summary = IdleSummary(config=asdict(cfg))
    tally = Tally()
    stop = asyncio.Event()
    tables = build_tables(cfg, stack.ws_url, tally)
    clients = [c for t in tables for c in t.clients]
    summary.clients, summary.rooms = len(clients), len(tables)
    pids = {**stack.pids(), "loadgen": os.getpid()}
    for name, pid in pids.items():
        summary.open_files_limit[name] = open_files(pid)[0]
    limits = ", ".join(f"{n} {summary.open_files_limit.get(n)}" for n in ("loadgen", "gateway", "session"))
    print(
        f"idle: {len(clients)} clients, {len(tables)} rooms; open-files limit {limits}", file=out, flush=True
    )

    def rss_mb() -> dict[str, float]:
        samples = {name: read_proc(pid) for name, pid in pids.items()}
        return {name: round(s.rss_bytes / MB, 1) for name, s in samples.items() if s is not None}

    def per_connection(after: dict[str, float], before: dict[str, float], n: int) -> dict[str, float]:
        return {name: round((after[name] - before.get(name, 0.0)) * 1024 / max(1, n), 1) for name in after}

    gc.collect()
    summary.rss_mb["before"] = rss_mb()
    chaos = asyncio.create_task(_chaos(tables, cfg, stop, random.Random(cfg.seed + 1)))  # keepalive
    print(f"connecting {len(clients)} clients over {cfg.ramp / 2:.0f} s ...", file=out, flush=True)
    began = time.monotonic()
    connected = await asyncio.gather(*await _paced(clients, cfg.ramp / 2, lambda c: _connect(c, tally)))
    summary.connect_s = round(time.monotonic() - began, 1)
    summary.connected = connected.count(True)
    summary.connect_failures = connected.count(False)
    await asyncio.sleep(IDLE_SETTLE_S)
    summary.rss_mb["hello"] = rss_mb()
    print(
        f"  {summary.connected} connected, {summary.connect_failures} failed, in {summary.connect_s} s",
        file=out,
        flush=True,
    )

    async def seat(table: Table) -> bool:
        try:
            await table.seat(bot=False)
            return True
        except RequestFailed as failed:
            tally.errors[f"seat:{failed.code}"] += 1
            return False

    print(f"seating {len(tables)} rooms (no games) over {cfg.ramp / 2:.0f} s ...", file=out, flush=True)
    began = time.monotonic()
    seated = await asyncio.gather(*await _paced(tables, cfg.ramp / 2, seat))
    summary.seat_s = round(time.monotonic() - began, 1)
    summary.seated = sum(len(t.clients) for t, ok in zip(tables, seated, strict=True) if ok)
    summary.seat_failures = seated.count(False)
    await asyncio.sleep(IDLE_SETTLE_S)
    summary.rss_mb["seated"] = rss_mb()
    for name, pid in pids.items():
        summary.open_files_seated[name] = open_files(pid)[1]
    print(
        f"  {summary.seated} bound in {summary.seat_s} s ({summary.seat_failures} rooms failed); "
        f"files open: gateway {summary.open_files_seated.get('gateway')}, "
        f"loadgen {summary.open_files_seated.get('loadgen')}",
        file=out,
        flush=True,
    )

    gc.collect()
    tune_gc()
    sampler = ProcSampler(pids)
    cpu_sums: Counter[str] = Counter()
    samples = 0
    if not cfg.quiet:
        print(f"{'t':>4} {'open':>6} {'err':>5}  cpu% engine/session/gateway/loadgen   rss MB", file=out)
    began = time.monotonic()
    for n in range(1, int(cfg.duration) + 1):
        await asyncio.sleep(max(0.0, began + n - time.monotonic()))
        if n % IDLE_LINE_EVERY_S and n != int(cfg.duration):
            continue
        procs = sampler.sample()
        cpu_sums.update({name: cpu for name, (cpu, _) in procs.items()})
        samples += 1
        if not cfg.quiet:
            still_open = sum(1 for c in clients if c.ws is not None and c.ws.open)
            cpu = per_process({n: c for n, (c, _) in procs.items()}, IDLE_PROCS)
            mem = per_process({n: rss / MB for n, (_, rss) in procs.items()}, IDLE_PROCS)
            errors = sum(tally.errors.values())
            print(f"{n:>4} {still_open:>6} {errors:>5}  {cpu:<34} {mem}", file=out, flush=True)
    stop.set()
    await chaos
    summary.rss_mb["end"] = rss_mb()
    summary.open_at_end = sum(1 for c in clients if c.ws is not None and c.ws.open)
    summary.cpu_avg_hold = {name: round(total / max(1, samples), 1) for name, total in cpu_sums.items()}
    summary.errors = dict(tally.errors)
    rss = summary.rss_mb
    summary.kib_per_connection = {
        "hello": per_connection(rss["hello"], rss["before"], summary.connected),
        "bound": per_connection(rss["seated"], rss["hello"], summary.seated),
    }
    for client in clients:
        client.close()
    return summary


def print_idle_summary(s: IdleSummary, out: TextIO) -> None:
    stages = ("before", "hello", "seated", "end")
    lines = [
        f"\n== idle: {s.clients} clients in {s.rooms} rooms, {s.config['duration']:.0f} s held ==",
        f"connected {s.connected} ({s.connect_failures} failed, {s.connect_s} s), "
        f"bound {s.seated} ({s.seat_failures} rooms failed, {s.seat_s} s), open at the end {s.open_at_end}",
        f"{'RSS MB':<10}" + "".join(f"{stage:>9}" for stage in stages),
    ]
    for name in IDLE_PROCS:
        if name == "engine" and s.config.get("engine_local"):
            lines.append(f"  {name:<8} not running (--engine-local: the rules run in the session)")
            continue
        lines.append(
            f"  {name:<8}" + "".join(f"{s.rss_mb.get(st, {}).get(name, 0.0):>9.1f}" for st in stages)
        )
    for stage, label in (("hello", "connected + hello"), ("bound", "bound to a waiting room, extra")):
        per = s.kib_per_connection.get(stage, {})
        lines.append(f"KiB per connection, {label}: " + ", ".join(f"{n} {v}" for n, v in per.items()))
    lines += [
        "cpu % avg while holding " + ", ".join(f"{k} {v}" for k, v in s.cpu_avg_hold.items()),
        "open files (limit): "
        + ", ".join(
            f"{n} {s.open_files_seated.get(n)} ({s.open_files_limit.get(n)})" for n in ("gateway", "loadgen")
        ),
        f"errors {sum(s.errors.values())} {s.errors or ''}",
    ]
    print("\n".join(lines), file=out, flush=True)


def run(cfg: LoadConfig, out: TextIO = sys.stdout) -> Summary | IdleSummary:
    """The whole run, services included; returns the summary (also printed)."""
    limit = raise_open_files_limit()
    # One socket per client here, and one per client in the gateway (its own process, the same
    # inherited limit); the rest is the services' and this process's other files.
    if cfg.players + 200 > limit:
        raise SystemExit(f"{cfg.players} clients need ~{cfg.players + 200} open files; the limit is {limit}")
    stack_cfg = StackConfig(
        turn_time_scale=cfg.turn_time_scale,
        bot_think_ms=cfg.bot_think_ms,
        log_level=cfg.log_level,
        store=cfg.store,
        engine_local=cfg.engine_local,
    )
    if cfg.idle:
        with Stack(stack_cfg) as stack:
            try:
                idle = _run_loop(run_idle(cfg, stack, out))
            finally:
                _report_exits(stack, out)
        print_idle_summary(idle, out)
        return idle
    with ServerProcess("engine") as echo_server:
        echo_port = echo_server.ports["echo"]
        floor = echo_once(echo_port, 3000)
        print(
            f"gRPC echo floor (64 B, loopback, idle): p50 {floor['p50_us']:.0f} µs, "
            f"p99 {floor['p99_us']:.0f} µs, p99.9 {floor['p999_us']:.0f} µs",
            file=out,
            flush=True,
        )
        with Stack(stack_cfg) as stack:
            try:
                summary = _run_loop(run_load(cfg, stack, echo_port, out))
            finally:
                _report_exits(stack, out)
    summary.echo_floor = floor
    if summary.p99_ms is not None:
        summary.p99_vs_echo_p99 = round(summary.p99_ms * 1000 / floor["p99_us"], 1)
    print_summary(summary, out)
    return summary


def _report_exits(stack: Stack, out: TextIO) -> None:
    for name, proc in stack.procs.items():
        code = proc.poll()
        if code is not None:
            print(f"{name} exited with {code}:\n{stack.log_tail(name)}", file=out, flush=True)


def _run_loop(coro: Coroutine[Any, Any, T]) -> T:
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    return uvloop.run(coro)  # type: ignore[no-any-return]


def print_summary(s: Summary, out: TextIO) -> None:
    def f(v: float | None, unit: str = " ms") -> str:
        return "-" if v is None else f"{v:.1f}{unit}"

    loaded = s.echo_loaded
    # No engine process to measure: its work is in the session's CPU and RSS.
    engine_note = " (engine: in the session, --engine-local)" if s.config.get("engine_local") else ""
    print(
        "\n".join(
            [
                f"\n== {s.clients} clients, {s.rooms} rooms ({s.rooms_playing_end} playing at the end), "
                f"{s.config['duration']:.0f} s measured ==",
                f"moves {s.moves} ({s.moves_per_s}/s), games finished {s.games_finished}, "
                f"reconnects {s.reconnects}, duplicate events {s.duplicate_events}",
                f"client-seen move latency: p50 {f(s.p50_ms)}, p99 {f(s.p99_ms)}, p99.9 {f(s.p999_ms)} "
                f"({s.move_samples} plays); p99 = {f(s.p99_vs_echo_p99, '×')} the echo p99 "
                f"({s.echo_floor.get('p99_us', 0):.0f} µs idle"
                + (f", {loaded['p99_us']:.0f} µs under this load)" if loaded else ")"),
                f"deadline lateness (timeouts): p50 ≤ {f(s.lateness_p50_ms)}, p99 ≤ {f(s.lateness_p99_ms)} "
                f"({s.lateness_samples} deadlines)",
                f"errors {sum(s.errors.values())} {s.errors or ''}; "
                f"stuck rooms max {s.stuck_max}, at end {s.stuck_end}; connect failures {s.connect_failures}",
                "cpu % avg " + ", ".join(f"{k} {v}" for k, v in s.cpu_avg.items()) + engine_note,
                "rss MB " + ", ".join(f"{k} {v}" for k, v in s.rss_mb_end.items()) + engine_note,
                f"memory: {f(s.idle_connection_kb, ' KiB')} per idle connection (gateway), "
                f"{f(s.room_kb, ' KiB')} per playing room "
                "(session + gateway, its 4-5 bound connections included)",
            ]
        ),
        file=out,
        flush=True,
    )
