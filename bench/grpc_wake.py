"""What one gRPC message costs in CPU, on a busy process and on an idle one.

The move path crosses processes several times (gateway → session, session → engine and back,
session → gateway twice), so the cost of a message is paid several times per move, by the sender
and by the receiver. grpc.aio hands every completion between grpc's poller thread and the event
loop; on a process that was idle that hand-over wakes threads that were asleep, which costs far
more than the message itself. A game server's processes are idle between most moves (a room
moves every few seconds), so the idle figure is the one the move path pays.

Against the bare echo server of :mod:`bench.servers` in a child process (own GIL, uvloop, the
services' channel options), one message at a time, 1 kB payload:

* **back to back** -- the next message as soon as the answer is in;
* **paced** -- one message every :data:`PACE_S` seconds, the process idle in between.

For a unary call and for one message each way on an open bidirectional stream, and, for
comparison, one length-prefixed frame each way on a plain TCP connection that both event loops
read themselves (:class:`bench.servers.RawFrameEcho`): what the same message costs without
grpc.aio's hand-overs between threads and without HTTP/2. CPU per message: the child's threads
(``/proc/<pid>/task/*/schedstat``, nanoseconds) and this process's (``time.process_time``). The
baseline is the unary call back to back; the closing lines give the stream message's cost over
the raw frame's, busy and idle.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import uvloop

from bench.framework import CaseResult, Report
from bench.servers import ECHO_METHOD, ECHO_STREAM_METHOD, ServerProcess
from ninetynine.common.frames import frame

PAYLOAD = b"x" * 1000
BACK_TO_BACK = 3000
PACED = 300
PACE_S = 0.02


def _threads_cpu_ns(pid: int) -> int:
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            continue  # a thread that ended meanwhile
    return total


async def _timed(
    send: Callable[[], Awaitable[None]], pid: int, calls: int, pace_s: float
) -> tuple[float, float]:
    """Server and client CPU µs per ``send()``, one every ``pace_s`` seconds (0: back to back)."""
    server0, client0 = _threads_cpu_ns(pid), time.process_time()
    slept = 0.0
    for _ in range(calls):
        await send()
        if pace_s:
            t = time.process_time()
            await asyncio.sleep(pace_s)
            slept += time.process_time() - t  # the client's own timer wake-ups are not the message's
    server_us = (_threads_cpu_ns(pid) - server0) / calls / 1000
    client_us = (time.process_time() - client0 - slept) / calls * 1e6
    return server_us, client_us


async def _measure_raw(port: int, pid: int, calls: int, pace_s: float) -> tuple[float, float]:
    """The raw frame's server and client CPU µs per message (same payload)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    one = frame(PAYLOAD)

    async def one_frame() -> None:
        writer.write(one)
        await reader.readexactly(len(one))

    try:
        for _ in range(100):
            await one_frame()
        return await _timed(one_frame, pid, calls, pace_s)
    finally:
        writer.close()
        await writer.wait_closed()


async def _measure(port: int, pid: int, calls: int, pace_s: float) -> dict[str, tuple[float, float]]:
    """Server and client CPU µs per message, for the unary call and the stream."""
    identity: Any = None
    out: dict[str, tuple[float, float]] = {}
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        unary = channel.unary_unary(ECHO_METHOD, request_serializer=identity, response_deserializer=identity)
        stream = channel.stream_stream(
            ECHO_STREAM_METHOD, request_serializer=identity, response_deserializer=identity
        )
        for _ in range(100):
            await unary(PAYLOAD)
        call: Any = stream()  # type: ignore[call-arg]  # grpc.aio: no iterator = write() by hand
        for _ in range(100):
            await call.write(PAYLOAD)
            await call.read()

        async def one_unary() -> None:
            await unary(PAYLOAD)

        async def one_streamed() -> None:
            await call.write(PAYLOAD)
            await call.read()

        for name, send in (("unary", one_unary), ("stream", one_streamed)):
            out[name] = await _timed(send, pid, calls, pace_s)
        await call.done_writing()
    return out


def _record(report: Report, name: str, us: float, samples: int, base: CaseResult | None) -> CaseResult:
    result = report.add_figure(name, us, samples, base)
    ratio = "base" if base is None else f"{us / base.median_us:.2f}×"
    report.note(f"{name:<52} {us:>9.0f}  {ratio}")
    return result


def run(report: Report) -> None:
    report.begin_suite("grpc_wake", "CPU per gRPC message, busy and idle process (µs)")
    back_to_back = report.samples(BACK_TO_BACK)
    paced = report.samples(PACED)
    with ServerProcess("engine") as servers:
        port, pid = servers.ports["echo"], servers.pid
        busy = uvloop.run(_measure(port, pid, back_to_back, 0.0))
        idle = uvloop.run(_measure(port, pid, paced, PACE_S))
        busy["raw"] = uvloop.run(_measure_raw(servers.ports["raw"], pid, back_to_back, 0.0))
        idle["raw"] = uvloop.run(_measure_raw(servers.ports["raw"], pid, paced, PACE_S))
    base: CaseResult | None = None
    for label, figures, samples in (
        ("back to back", busy, back_to_back),
        (f"paced {PACE_S * 1000:.0f} ms", idle, paced),
    ):
        for kind in ("unary", "stream", "raw"):
            server_us, client_us = figures[kind]
            name = "raw TCP frame" if kind == "raw" else kind
            result = _record(report, f"{name} {label}: server", server_us, samples, base)
            base = base or result
            _record(report, f"{name} {label}: client", client_us, samples, base)
    for label, figures in (("back to back", busy), ("paced", idle)):
        stream, raw = sum(figures["stream"]), sum(figures["raw"])
        report.note(f"stream message / raw frame, both sides, {label}: {stream / raw:.1f}×")
    report.note(f"cores: {os.cpu_count()}; pin with taskset to compare runs")
