"""What the shared gRPC plumbing (``ninetynine.common``) costs per RPC, in CPU time.

Issue 3's speed goal leaves 15 % of an echo round trip for everything the engine adds, and the
canonical-log interceptor is paid by every RPC of every service. Wall-clock latency on this shared
2-core box moves by ±20 % between runs, so this module counts *CPU time* (``process_time`` for
whole round trips, ``thread_time`` for the pieces) over many calls, which the neighbours' load
disturbs much less.

1. Round trips, in one process and one event loop: a grpc.aio client calling a bytes echo on a
   bare server (:func:`ninetynine.common.grpcserver.create_server`, no interceptor), on a server
   with a pass-through interceptor (grpc's own interceptor pipeline) and on a server with
   :class:`~ninetynine.common.interceptors.CanonicalLogInterceptor` (latency histogram labelled by
   ``mode``, one JSON line per call written to ``/dev/null``). The echo binds ``mode`` and ``seq``
   like the engine's handlers. Small blocks, alternating; per block the CPU time of the whole
   process (client, servers, grpc's threads) divided by the calls. The column "+CPU" is the median
   of the per-round differences to the bare server's block of the same round, so slow drifts in
   the machine's load cancel. In a real round trip the plumbing costs several times what the same
   Python costs in a hot loop (cold caches, the GIL handed to and from grpc's poller thread).
2. The pieces, each timed alone on this thread (best of several passes of many calls): the
   interceptor's handler lookup, the wrapped handler with the line dropped by level and with no
   histogram, with the histogram, with the line, and the building blocks (request id,
   :func:`~ninetynine.common.context.request_scope`, :func:`~ninetynine.common.context.bind_rpc_fields`,
   a structlog line, histogram observation, lenient request parsing). The wrapped handler runs on
   a minimal stand-in for the servicer context (the three methods it reads), driven without an
   event loop, so only the plumbing's own Python is counted.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

import grpc
import grpc.aio
from prometheus_client import CollectorRegistry, Histogram

from bench.framework import CaseResult, Report
from bench.rules_apply import apply_request_bytes, mid_game_positions
from ninetynine.common.context import bind_rpc_fields, new_request_id, request_scope
from ninetynine.common.grpcserver import create_server
from ninetynine.common.interceptors import CanonicalLogInterceptor
from ninetynine.common.lenient import lenient
from ninetynine.common.logging import configure_logging, get_logger
from ninetynine.common.metrics import histogram
from ninetynine.engine.rules import Options
from ninetynine.engine.v1 import engine_service_pb2 as pb

ECHO_SERVICE = "bench.v1.Echo"
ECHO_METHOD = f"/{ECHO_SERVICE}/Echo"
BLOCK = 20  # round trips per block
ROUNDS = 300  # blocks per server, alternating
PIECE_CALLS = 4000  # calls per pass of a piece
PIECE_PASSES = 7

Context = grpc.aio.ServicerContext[Any, Any]


async def _echo_binding_fields(request: bytes, context: Context) -> bytes:
    bind_rpc_fields(mode="kr-product", seq=42)
    return request


def _echo_handler() -> grpc.GenericRpcHandler[Any, Any]:
    method = grpc.unary_unary_rpc_method_handler(_echo_binding_fields)
    return grpc.method_handlers_generic_handler(ECHO_SERVICE, {"Echo": method})


def _rpc_histogram(registry: CollectorRegistry) -> Histogram:
    return histogram(
        "ninetynine_bench_rpc_duration_seconds", "bench", ("method", "code", "mode"), registry=registry
    )


def _record(
    report: Report, suite: str, name: str, us: float, base: CaseResult | None, samples: int
) -> CaseResult:
    result = report.add_figure(name, us, samples, base, suite)
    extra = "" if base is None else f"  (+{us - base.median_us:.1f})"
    report.note(f"{name:<58} {us:>9.2f}{extra}")
    return result


# -- 1. round trips ----------------------------------------------------------------------------


class _PassThrough(grpc.aio.ServerInterceptor):  # type: ignore[type-arg]
    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Any],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Any:
        return await continuation(handler_call_details)


async def _round_trips(report: Report, requests: Sequence[bytes]) -> None:
    registry = CollectorRegistry()
    canonical = CanonicalLogInterceptor("bench", _rpc_histogram(registry), label_fields=("mode",))
    variants: dict[str, list[Any]] = {
        "echo, bare server": [],
        "echo, pass-through interceptor": [_PassThrough()],
        "echo, CanonicalLogInterceptor": [canonical],
    }
    servers: list[grpc.aio.Server] = []
    channels: dict[str, grpc.aio.Channel] = {}
    try:
        for name, interceptors in variants.items():
            server, port, _ = create_server(
                "127.0.0.1:0", service_names=[ECHO_SERVICE], interceptors=interceptors
            )
            server.add_generic_rpc_handlers((_echo_handler(),))
            await server.start()
            servers.append(server)
            channels[name] = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
        calls = {name: ch.unary_unary(ECHO_METHOD, None, None) for name, ch in channels.items()}
        n = len(requests)
        cpu: dict[str, list[float]] = {name: [] for name in calls}
        wall: dict[str, list[float]] = {name: [] for name in calls}
        rounds = max(20, int(ROUNDS * report.scale))
        for round_no in range(-5, rounds):  # five warm-up rounds
            order = list(calls) if round_no % 2 == 0 else list(reversed(calls))
            for name in order:
                call = calls[name]
                cpu_start, wall_start = time.process_time_ns(), time.perf_counter_ns()
                for i in range(BLOCK):
                    await call(requests[i % n], timeout=10)
                if round_no >= 0:
                    cpu[name].append((time.process_time_ns() - cpu_start) / BLOCK / 1000)
                    wall[name].append((time.perf_counter_ns() - wall_start) / BLOCK / 1000)
    finally:
        for ch in channels.values():
            await ch.close(None)
        for server in servers:
            await server.stop(None)
    suite = "rpc_overhead round trip"
    report.note(f"{'round trip (µs per call; medians of blocks)':<46} {'CPU':>9} {'+CPU':>7} {'wall':>9}")
    bare = cpu["echo, bare server"]
    for name in calls:
        cpu_us, wall_us = statistics.median(cpu[name]), statistics.median(wall[name])
        extra = statistics.median(a - b for a, b in zip(cpu[name], bare, strict=True))
        report.results.append(
            CaseResult(suite, name, len(cpu[name]) * BLOCK, cpu_us, cpu_us, cpu_us, None, None)
        )
        report.note(f"{name:<46} {cpu_us:>9.1f} {extra:>7.1f} {wall_us:>9.1f}")


# -- 2. pieces ---------------------------------------------------------------------------------


class _StandInContext:
    """The part of a grpc.aio servicer context the interceptor's wrapper reads."""

    def __init__(self, metadata: tuple[tuple[str, str], ...]) -> None:
        self._metadata = metadata

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return self._metadata

    def code(self) -> grpc.StatusCode | None:
        return None

    def time_remaining(self) -> float | None:
        return None


class _CallDetails(grpc.HandlerCallDetails):
    def __init__(self, method: str, metadata: tuple[tuple[str, str], ...]) -> None:
        self.method = method
        self.invocation_metadata = metadata


def _drive(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine that never suspends (no event loop needed) and return its result."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise RuntimeError("the coroutine suspended")


async def cpu_us_per_call(
    call: Callable[[], object], calls: int = PIECE_CALLS, passes: int = PIECE_PASSES
) -> float:
    """Thread CPU time per call, best of ``passes`` passes of ``calls`` calls.

    Each pass ends by letting the event loop run what the calls scheduled (the interceptor
    writes its line from a loop callback), inside the timing.
    """
    clock = time.thread_time_ns
    best = float("inf")
    for _ in range(passes):
        start = clock()
        for _ in range(calls):
            call()
        await asyncio.sleep(0)
        best = min(best, (clock() - start) / calls)
    return best / 1000


def _wrapped_echo(interceptor: CanonicalLogInterceptor, metadata: tuple[tuple[str, str], ...]) -> Any:
    handler = grpc.unary_unary_rpc_method_handler(_echo_binding_fields)

    async def continuation(_: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler[Any, Any]:
        return handler

    details = _CallDetails(ECHO_METHOD, metadata)
    return _drive(interceptor.intercept_service(continuation, details)), continuation, details


async def _pieces(report: Report, request_bytes: bytes, devnull: Any) -> None:
    calls = max(200, int(PIECE_CALLS * report.scale))
    suite = "rpc_overhead pieces"
    metadata = (("user-agent", "grpc-python/1.0"), ("x-request-id", "bench-0123456789abcdef"))
    context: Any = _StandInContext(metadata)
    payload = b"x" * 64

    async def time_it(call: Callable[[], object]) -> float:
        return await cpu_us_per_call(call, calls)

    report.note(f"{'piece (thread CPU µs per call, best of passes)':<58} {'µs':>9}")
    direct = _record(
        report,
        suite,
        "echo handler called directly",
        await time_it(lambda: _drive(_echo_binding_fields(payload, context))),
        None,
        calls,
    )

    registry = CollectorRegistry()
    with_histogram = CanonicalLogInterceptor("bench", _rpc_histogram(registry), label_fields=("mode",))
    without_histogram = CanonicalLogInterceptor("bench")

    configure_logging("bench", level="warning", json_logs=True, stream=devnull)
    wrapped_bare, _, _ = _wrapped_echo(without_histogram, metadata)
    _record(
        report,
        suite,
        "wrapped: scope + layers (line dropped, no histogram)",
        await time_it(lambda: _drive(wrapped_bare.unary_unary(payload, context))),
        direct,
        calls,
    )
    wrapped_hist, continuation, details = _wrapped_echo(with_histogram, metadata)
    _record(
        report,
        suite,
        "wrapped: + histogram (line dropped)",
        await time_it(lambda: _drive(wrapped_hist.unary_unary(payload, context))),
        direct,
        calls,
    )
    configure_logging("bench", level="info", json_logs=True, stream=devnull)
    _record(
        report,
        suite,
        "wrapped: + histogram + JSON line to /dev/null (full)",
        await time_it(lambda: _drive(wrapped_hist.unary_unary(payload, context))),
        direct,
        calls,
    )
    no_id = _StandInContext((("user-agent", "grpc-python/1.0"),))
    _record(
        report,
        suite,
        "wrapped, full, no x-request-id (one generated)",
        await time_it(lambda: _drive(wrapped_hist.unary_unary(payload, no_id))),
        direct,
        calls,
    )
    _record(
        report,
        suite,
        "intercept_service (per-call handler lookup)",
        await time_it(lambda: _drive(with_histogram.intercept_service(continuation, details))),
        None,
        calls,
    )

    # Building blocks.
    _record(report, suite, "new_request_id()", await time_it(new_request_id), None, calls)

    def scope() -> None:
        with request_scope("bench-0123456789abcdef", accept_language=None, method=ECHO_METHOD):
            pass

    _record(report, suite, "request_scope enter + exit", await time_it(scope), None, calls)

    def scope_and_bind() -> None:
        with request_scope("bench-0123456789abcdef", accept_language=None, method=ECHO_METHOD):
            bind_rpc_fields(mode="kr-product", seq=42)

    _record(
        report,
        suite,
        "request_scope + bind_rpc_fields(mode, seq)",
        await time_it(scope_and_bind),
        None,
        calls,
    )
    log = get_logger("bench.rpc")

    def structlog_line() -> None:
        with request_scope("bench-0123456789abcdef", accept_language=None, method=ECHO_METHOD):
            log.info("rpc", mode="kr-product", seq=42, method=ECHO_METHOD, code="OK", duration_ms=0.123)

    _record(
        report,
        suite,
        "request_scope + structlog JSON line to /dev/null",
        await time_it(structlog_line),
        None,
        calls,
    )
    hist = _rpc_histogram(CollectorRegistry())
    _record(
        report,
        suite,
        "Histogram.labels(...).observe()",
        await time_it(lambda: hist.labels(ECHO_METHOD, "OK", "kr-product").observe(0.0002)),
        None,
        calls,
    )
    child = hist.labels(ECHO_METHOD, "OK", "kr-product")
    _record(
        report, suite, "cached child .observe()", await time_it(lambda: child.observe(0.0002)), None, calls
    )
    _record(
        report,
        suite,
        "ApplyRequest.FromString (~1 kB)",
        await time_it(lambda: pb.ApplyRequest.FromString(request_bytes)),
        None,
        calls,
    )
    parse = lenient(pb.ApplyRequest)
    _record(
        report,
        suite,
        "lenient(ApplyRequest) parse (~1 kB)",
        await time_it(lambda: parse(request_bytes)),
        None,
        calls,
    )


# -- entry point -------------------------------------------------------------------------------


def run(report: Report) -> None:
    positions = mid_game_positions(Options(), 4, games=4, seed=1000)
    requests = [apply_request_bytes(p) for p in positions]
    report.begin_suite("rpc_overhead", "per-RPC cost of ninetynine.common's gRPC plumbing (CPU µs)")
    with open(os.devnull, "w", encoding="utf-8") as devnull:
        try:
            configure_logging("bench", level="info", json_logs=True, stream=devnull)
            asyncio.run(_round_trips(report, requests))
            asyncio.run(_pieces(report, requests[0], devnull))
        finally:
            configure_logging("bench", level="warning")
