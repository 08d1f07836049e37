"""``Apply`` over gRPC against an echo of the same size, and where the in-process time goes.

Issue 3's speed goal: ``Apply`` p50 within 1.15× the p50 of a trivial echo RPC carrying a
payload the size of a real ``ApplyRequest``. In the same run this module starts the real engine
server (:func:`ninetynine.engine.server.create_engine_server`: interceptor, canonical JSON log
line, metrics) and two echo services (bytes in, the same bytes out, no (de)serialization):

* ``echo (bare server)`` -- a grpc.aio server with the same options and no interceptor: the
  floor of one loopback round trip with this payload; the ratio is taken against it;
* ``echo (engine server)`` -- the echo registered on the engine's own server, so it pays the
  same logging interceptor as ``Apply``: the difference to ``Apply`` is the engine's own work.

The client is a synchronous grpc channel sending pre-serialized bytes (every method alike).
Requests rotate through every mid-game position of 40 random kr-product 4-player games
(``bench.rules_apply.mid_game_positions``, ~600 distinct states, in the order they were played).
``Apply`` is timed two ways, because the engine keeps the states it answered with decoded
(:mod:`ninetynine.engine.recent`):

* ``Apply, state it answered with`` -- the positions in order, so each request carries the state
  the engine answered the previous one with, as a caller that plays a game sends it (only the
  first of each game's positions is decoded);
* ``Apply, state decoded`` -- every other position, so no request carries a state the engine
  answered with: every state is decoded and checked.

The methods run in alternating blocks of :data:`BLOCK` calls so drifts in machine load hit all of
them alike.

Two placements: servers in a child process (the realistic one: client and server do not
share a GIL) and servers on a thread of the bench process (shared GIL, everything slower).

Finally the in-process breakdown of the engine's ``Apply`` handler, stage by stage, in µs.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass

import grpc
from prometheus_client import CollectorRegistry

from bench.framework import CaseResult, Report, percentile
from bench.rules_apply import Position, apply_request_bytes, mid_game_positions
from bench.servers import APPLY_METHOD, ECHO_METHOD, ServerProcess, ServerThread, start_engine_and_echo
from ninetynine.common.logging import configure_logging
from ninetynine.engine import convert
from ninetynine.engine.applymany import answer_bytes
from ninetynine.engine.handlers import EngineHandlers, RulesMetrics
from ninetynine.engine.recent import RecentStates
from ninetynine.engine.rules import Action, Event, GameState, Options, apply, validate_state
from ninetynine.engine.v1 import engine_service_pb2 as pb

CALLS = 3000  # per method and placement
ANSWERED = "Apply, state it answered with"
DECODED = "Apply, state decoded"
BLOCK = 100
GOAL_RATIO = 1.15
STAGE_SAMPLES = 5000


def kr_positions() -> list[Position]:
    return mid_game_positions(Options(), 4, games=40, seed=1000)


# -- round trips -------------------------------------------------------------------------------


def alternate_blocks(
    calls: dict[str, Callable[[int], object]], per_method: int, block: int = BLOCK
) -> dict[str, list[int]]:
    """Run each call ``per_method`` times in alternating blocks; nanoseconds per call by name."""
    timings: dict[str, list[int]] = {name: [] for name in calls}
    names = list(calls)
    clock = time.perf_counter_ns
    done = 0
    round_no = 0
    while done < per_method:
        size = min(block, per_method - done)
        # Rotate the order each round: no method always runs right after another.
        for name in names[round_no % len(names) :] + names[: round_no % len(names)]:
            call = calls[name]
            samples = timings[name]
            for k in range(done, done + size):
                start = clock()
                call(k)
                samples.append(clock() - start)
        done += size
        round_no += 1
    return timings


def record(report: Report, suite: str, name: str, ns: list[int], base: CaseResult | None) -> CaseResult:
    ordered = sorted(ns)
    median = percentile(ordered, 50) / 1000
    result = CaseResult(
        suite=suite,
        name=name,
        samples=len(ordered),
        median_us=median,
        p99_us=percentile(ordered, 99) / 1000,
        mean_us=sum(ordered) / len(ordered) / 1000,
        baseline=None if base is None else base.name,
        ratio=None if base is None else median / base.median_us,
    )
    report.results.append(result)
    ratio = "   base" if base is None else f"{result.ratio:7.2f}×"
    report.note(f"{name:<44} {result.samples:>8} {median:>10.1f} {result.p99_us:>9.1f} {ratio:>8}")
    return result


def measure_round_trips(
    report: Report, placement: str, ports: dict[str, int], requests: list[bytes]
) -> float:
    """Time echo (bare), echo (engine server) and Apply both ways; return the Apply/echo p50 ratio of
    requests carrying the state the engine answered with."""
    count = report.samples(CALLS)
    with (
        grpc.insecure_channel(f"127.0.0.1:{ports['engine']}") as engine_channel,
        grpc.insecure_channel(f"127.0.0.1:{ports['echo']}") as echo_channel,
    ):
        apply_call = engine_channel.unary_unary(
            APPLY_METHOD, request_serializer=None, response_deserializer=None
        )
        engine_echo = engine_channel.unary_unary(
            ECHO_METHOD, request_serializer=None, response_deserializer=None
        )
        bare_echo = echo_channel.unary_unary(ECHO_METHOD, request_serializer=None, response_deserializer=None)
        n = len(requests)
        unanswered = requests[::2]  # no request carries the state answered to the one before it
        m = len(unanswered)
        # Apply must succeed: a refusal would be a different (cheaper or dearer) path.
        pb.ApplyResponse.FromString(apply_call(requests[0], timeout=10))
        calls: dict[str, Callable[[int], object]] = {
            "echo (bare server)": lambda i: bare_echo(requests[i % n], timeout=10),
            "echo (engine server, interceptor)": lambda i: engine_echo(requests[i % n], timeout=10),
            ANSWERED: lambda i: apply_call(requests[i % n], timeout=10),
            DECODED: lambda i: apply_call(unanswered[i % m], timeout=10),
        }
        alternate_blocks(calls, max(BLOCK, count // 10))  # warm-up: connections, caches, allocator
        timings = alternate_blocks(calls, count)
    suite = f"engine_grpc {placement}"
    report.note("")
    report.note(f"-- {placement} --")
    report.note(f"{'case':<44} {'samples':>8} {'p50 µs':>10} {'p99 µs':>9} {'vs echo':>8}")
    base = record(report, suite, "echo (bare server)", timings["echo (bare server)"], None)
    logged = record(
        report, suite, "echo (engine server, interceptor)", timings["echo (engine server, interceptor)"], base
    )
    applied = record(report, suite, ANSWERED, timings[ANSWERED], base)
    decoded = record(report, suite, DECODED, timings[DECODED], base)
    for result in (applied, decoded):
        ratio = result.median_us / base.median_us
        verdict = "met" if ratio <= GOAL_RATIO else "not met"
        report.note(
            f"{result.name}: Apply/echo p50 ratio {ratio:.2f}× (goal ≤ {GOAL_RATIO}×: {verdict}); "
            f"p99 ratio {result.p99_us / base.p99_us:.2f}×; of the gap, interceptor "
            f"{logged.median_us - base.median_us:.0f} µs, "
            f"engine work {result.median_us - logged.median_us:.0f} µs"
        )
    return applied.median_us / base.median_us


# -- in-process breakdown ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Stages:
    """One position's inputs for every stage of the handler, prepared outside the timing."""

    request_bytes: bytes
    request: pb.ApplyRequest
    unchecked: GameState
    action: Action
    new_state: GameState
    events: list[Event]
    response: pb.ApplyResponse


def prepare_stages(position: Position) -> Stages:
    data = apply_request_bytes(position)
    request = pb.ApplyRequest.FromString(data)
    state = convert.state_from_proto(request.state, validate=False)
    action = convert.action_from_proto(request.action)
    new_state, events = apply(state, request.player_id, action)
    return Stages(data, request, state, action, new_state, events, build_response(new_state, events))


def build_response(new_state: GameState, events: list[Event]) -> pb.ApplyResponse:
    response = pb.ApplyResponse()
    convert.state_into(new_state, response.state)
    convert.events_into(events, response.events)
    return response


def engine_handlers(memo: bool) -> EngineHandlers:
    """The engine's own handlers (metrics on a private registry, no log fields), with or without its memo."""
    recent = None if memo else RecentStates(0)
    return EngineHandlers(RulesMetrics.create(CollectorRegistry()), log_fields=False, recent=recent)


def measure_stages(report: Report, positions: list[Position]) -> None:
    report.begin_suite("engine_apply_stages", "the Apply handler in-process, stage by stage (µs)")
    prepared = [prepare_stages(p) for p in positions]
    n = len(prepared)

    def case(name: str, work: Callable[[Stages], object]) -> CaseResult:
        def make_call(i: int) -> Callable[[], object]:
            stages = prepared[i % n]
            return lambda: work(stages)

        return report.time_calls(name, make_call, samples=STAGE_SAMPLES)

    remembering, forgetting = engine_handlers(memo=True), engine_handlers(memo=False)
    # ApplyMany calls in the order the games were played: each carries the state the engine
    # answered the previous one with (as the session sends them), except at a game's start.
    calls = [
        pb.ApplyManyRequest(call_id=1, apply=pb.ApplyRequest.FromString(s.request_bytes)).SerializeToString()
        for s in prepared
    ]

    def on_stream(handlers: EngineHandlers) -> Callable[[int], Callable[[], object]]:
        def make_call(i: int) -> Callable[[], object]:
            data = calls[i % n]
            return lambda: answer_bytes(handlers, data, "ko", None)

        return make_call

    answered = report.time_calls(
        "ApplyMany call, state it answered with", on_stream(remembering), samples=STAGE_SAMPLES
    )
    whole = report.time_calls("ApplyMany call, memo off", on_stream(forgetting), samples=STAGE_SAMPLES)
    parts = [
        case("1 parse ApplyRequest", lambda s: pb.ApplyRequest.FromString(s.request_bytes)),
        case(
            "2 proto → GameState + Action",
            lambda s: (
                convert.state_from_proto(s.request.state, validate=False),
                convert.action_from_proto(s.request.action),
            ),
        ),
        case("3 validate_state", lambda s: validate_state(s.unchecked)),
        case("4 rules.apply", lambda s: apply(s.unchecked, s.request.player_id, s.action)),
        case("5 GameState + events → proto", lambda s: build_response(s.new_state, s.events)),
        case("6 serialize ApplyResponse", lambda s: s.response.SerializeToString()),
    ]
    total = sum(p.median_us for p in parts)
    report.note(
        f"sum of stage medians {total:.1f} µs; an ApplyMany call {whole.median_us:.1f} µs with the memo "
        f"off, {answered.median_us:.1f} µs when its state is one the engine answered with (2 and 3 skipped)"
    )


# -- entry point -------------------------------------------------------------------------------


def run(report: Report) -> None:
    positions = kr_positions()
    requests = [apply_request_bytes(p) for p in positions]
    sizes = sorted(len(r) for r in requests)
    report.begin_suite("engine_grpc", "Apply round trip vs an echo of the same payload (µs)")
    report.note(
        f"{len(requests)} mid-game kr-product 4p ApplyRequests, "
        f"{sizes[len(sizes) // 2]} bytes median ({sizes[0]}–{sizes[-1]}); echo carries the same bytes"
    )
    with ServerProcess("engine") as child:
        measure_round_trips(report, "servers in a child process", child.ports, requests)
    # Same servers on a thread here; their per-RPC log lines go nowhere instead of stderr.
    with open(os.devnull, "w", encoding="utf-8") as devnull:
        configure_logging("bench", level="info", json_logs=True, stream=devnull)
        try:
            with ServerThread(start_engine_and_echo) as local:
                measure_round_trips(report, "servers on a thread (shared GIL)", local.ports, requests)
        finally:
            configure_logging("bench", level="warning")
    measure_stages(report, positions)
