"""Move latency through the session service against the engine's own ``Apply``, in the same run.

Issue 4: ``make bench`` adds the move latency through the session (p50/p99 of ``Play`` until
its durable answer) against the engine's ``Apply`` latency measured in the same run. Three
child processes: the real engine server, and the real session server
(:func:`ninetynine.session.server.create_session_server`, with its deadline scheduler) on each
store in turn -- SQLite (WAL, a temp dir) and Redis (127.0.0.1:6379, a unique key prefix,
deleted afterwards). The bench drives rooms of two human seats (no bots: it plays both seats,
always the first legal play of the seat's ``GetView``); a finished game is replaced by a new
room. Only ``Play`` is timed; the ``GetView`` that picks the move is not.

Each ``Play`` costs the session: token lookup, load the room, an engine ``Apply`` over gRPC,
one durable write (SQLite transaction with the state, the events and the deadline, or the Redis
compare-and-set script), and the fan-out. The engine ``Apply`` baseline uses the same client
(synchronous grpc, pre-serialized mid-game requests) against the same engine process; blocks
of session moves and engine calls alternate so load drifts hit both alike.
"""

from __future__ import annotations

import contextlib
import secrets
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import redis

from bench.engine_grpc import kr_positions, record
from bench.framework import Report
from bench.rules_apply import apply_request_bytes
from bench.servers import APPLY_METHOD, ServerProcess
from ninetynine.engine.v1 import engine_service_pb2 as engine_pb
from ninetynine.engine.v1 import game_pb2, state_pb2
from ninetynine.session.v1 import session_service_pb2 as pb
from ninetynine.session.v1 import session_service_pb2_grpc as pb_grpc

MOVES = 1000  # timed Play calls per store (and as many engine Apply calls)
BLOCK = 50
REDIS_URL = "redis://127.0.0.1:6379/0"
TIMEOUT = 10.0


@dataclass
class Table:
    """One room of two seats the bench plays for: seat tokens by player id, a client_seq each."""

    tokens: dict[str, str]
    client_seq: dict[str, int] = field(default_factory=dict)


class SessionDriver:
    """Opens two-seat rooms and makes moves in them (first legal play of the current seat)."""

    def __init__(self, stub: pb_grpc.SessionServiceStub) -> None:
        self.stub = stub
        self.table = self.new_table()

    def new_table(self) -> Table:
        options = game_pb2.Options(turn_seconds=30)  # long turns: no deadline fires mid-bench
        created = self.stub.CreateRoom(
            pb.CreateRoomRequest(name="A", options=options, max_seats=2), timeout=TIMEOUT
        )
        joined = self.stub.JoinRoom(
            pb.JoinRoomRequest(room_id=created.room.room_id, name="B"), timeout=TIMEOUT
        )
        self.stub.StartGame(pb.StartGameRequest(token=created.seat_token), timeout=TIMEOUT)
        return Table({created.player_id: created.seat_token, joined.player_id: joined.seat_token})

    def next_move(self) -> pb.PlayRequest:
        """The next Play of the current table (a new table when the game is over); not timed."""
        while True:
            table = self.table
            view = self.stub.GetView(
                pb.GetViewRequest(token=next(iter(table.tokens.values()))), timeout=TIMEOUT
            ).view
            if view.phase == state_pb2.PHASE_FINISHED:
                self.table = self.new_table()
                continue
            token = table.tokens[view.current]
            own = self.stub.GetView(pb.GetViewRequest(token=token), timeout=TIMEOUT).view
            if not own.my_turn or not own.legal_plays:
                continue  # the turn moved on between the two views (cannot happen without timers)
            seq = table.client_seq.get(token, 0) + 1
            table.client_seq[token] = seq
            return pb.PlayRequest(token=token, client_seq=seq, action=own.legal_plays[0].action)


def measure_store(
    report: Report, label: str, engine_port: int, store_url: str, apply_requests: list[bytes]
) -> None:
    moves = report.samples(MOVES)
    with (
        ServerProcess("session", "--engine", f"127.0.0.1:{engine_port}", "--store", store_url) as session,
        grpc.insecure_channel(f"127.0.0.1:{session.ports['session']}") as session_channel,
        grpc.insecure_channel(f"127.0.0.1:{engine_port}") as engine_channel,
    ):
        driver = SessionDriver(pb_grpc.SessionServiceStub(session_channel))
        play = session_channel.unary_unary(
            "/ninetynine.session.v1.SessionService/Play", request_serializer=None, response_deserializer=None
        )
        engine_apply = engine_channel.unary_unary(
            APPLY_METHOD, request_serializer=None, response_deserializer=None
        )
        n = len(apply_requests)

        def play_once() -> int:
            data = driver.next_move().SerializeToString()
            start = time.perf_counter_ns()
            answer = play(data, timeout=TIMEOUT)
            elapsed = time.perf_counter_ns() - start
            if pb.PlayResponse.FromString(answer).duplicate:
                raise RuntimeError("a fresh client_seq came back as a duplicate")
            return elapsed

        def apply_once(i: int) -> int:
            start = time.perf_counter_ns()
            apply_call(apply_requests[i % n])
            return time.perf_counter_ns() - start

        def apply_call(data: bytes) -> None:
            engine_pb.ApplyResponse.FromString(engine_apply(data, timeout=TIMEOUT))

        for i in range(min(100, moves)):  # warm-up: connections, store, caches
            play_once()
            apply_once(i)
        plays: list[int] = []
        applies: list[int] = []
        while len(plays) < moves:
            size = min(BLOCK, moves - len(plays))
            plays.extend(play_once() for _ in range(size))
            start = len(applies)
            applies.extend(apply_once(start + k) for k in range(size))
    suite = f"session_move {label}"
    report.note("")
    report.note(f"-- session on {label} --")
    report.note(f"{'case':<44} {'samples':>8} {'p50 µs':>10} {'p99 µs':>9} {'vs Apply':>8}")
    direct = record(report, suite, "engine Apply (direct)", applies, None)
    through = record(report, suite, f"session Play → durable ({label})", plays, direct)
    report.note(
        f"session/engine p50 {through.median_us / direct.median_us:.1f}×, "
        f"p99 {through.p99_us / direct.p99_us:.1f}×"
    )


def _delete_keys(prefix: str) -> None:
    client = redis.Redis.from_url(REDIS_URL)
    try:
        keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
        if keys:
            client.delete(*keys)
    finally:
        client.close()


def run(report: Report) -> None:
    report.begin_suite("session_move", "Play through the session vs the engine's Apply (µs)")
    apply_requests = [apply_request_bytes(p) for p in kr_positions()]
    report.note("2 human seats per room, kr-product defaults; engine Apply on mid-game 4p states")
    with ServerProcess("engine") as engine, tempfile.TemporaryDirectory(prefix="bench-session-") as tmp:
        measure_store(
            report, "SQLite", engine.ports["engine"], f"sqlite:///{Path(tmp) / 'rooms.db'}", apply_requests
        )
        prefix = f"nn-bench-{secrets.token_hex(4)}:"
        try:
            measure_store(
                report, "Redis", engine.ports["engine"], f"{REDIS_URL}?prefix={prefix}", apply_requests
            )
        except (redis.ConnectionError, RuntimeError) as exc:  # no Redis here: SQLite still counts
            report.note(f"Redis skipped: {exc}")
        finally:
            with contextlib.suppress(redis.ConnectionError):
                _delete_keys(prefix)
