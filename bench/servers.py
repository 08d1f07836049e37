"""Real services for the benchmarks, in a child process (own GIL) or in a thread of this one.

``python -m bench.servers engine`` starts, in one asyncio loop, the real engine server
(:func:`ninetynine.engine.server.create_engine_server`, with its logging interceptor and
metrics) plus two echo services as transport baselines: one on a bare grpc.aio server
(:func:`ninetynine.common.grpcserver.create_server`, same channel options, no interceptor) and
one registered on the engine's own server (same interceptor as ``Apply``), and a length-prefixed
frame echo on a plain asyncio TCP server (what a message costs without gRPC). ``python -m
bench.servers session --engine HOST:PORT --store URL`` starts the real session server and its
deadline scheduler. Either prints one JSON line with the bound ports, then serves until its
stdin closes -- so a benchmark that dies takes its servers with it.

:class:`ServerProcess` runs such a child; :class:`ServerThread` runs the same servers on an
event loop in a thread of the benchmark process (client and server then share one GIL).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import grpc
import grpc.aio
from prometheus_client import CollectorRegistry

from ninetynine.common.frames import HEADER
from ninetynine.common.grpcserver import create_server
from ninetynine.common.logging import configure_logging
from ninetynine.common.runner import run_loop, tune_gc
from ninetynine.engine.server import EngineMetrics, create_engine_server

ECHO_SERVICE = "bench.v1.Echo"
ECHO_METHOD = f"/{ECHO_SERVICE}/Echo"
ECHO_STREAM_METHOD = f"/{ECHO_SERVICE}/EchoStream"
APPLY_METHOD = "/ninetynine.engine.v1.EngineService/Apply"
REPO_ROOT = Path(__file__).resolve().parent.parent

Ports = dict[str, int]
Cleanup = Callable[[], Coroutine[Any, Any, None]]
Starter = Callable[[], Coroutine[Any, Any, tuple[Ports, Cleanup]]]


async def _echo(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
    return request


async def _echo_stream(requests: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
    async for request in requests:
        yield request


class RawFrameEcho(asyncio.Protocol):
    """Sends every frame (the engine frames' length prefix, then the bytes) back as it came: a
    message on a TCP connection the event loop reads itself, the transport baseline without
    gRPC's threads and HTTP/2."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while len(self.buffer) >= HEADER:
            end = HEADER + int.from_bytes(self.buffer[:HEADER], "big")
            if len(self.buffer) < end:
                return
            assert self.transport is not None
            self.transport.write(bytes(self.buffer[:end]))
            del self.buffer[:end]


def echo_handler() -> grpc.GenericRpcHandler[Any, Any]:
    """``Echo``: a unary method that returns its request bytes untouched (no (de)serialization at
    all); ``EchoStream``: the same for each message of a bidirectional stream."""
    method = grpc.unary_unary_rpc_method_handler(_echo)
    stream = grpc.stream_stream_rpc_method_handler(_echo_stream)
    return grpc.method_handlers_generic_handler(ECHO_SERVICE, {"Echo": method, "EchoStream": stream})


async def start_engine_and_echo() -> tuple[Ports, Cleanup]:
    """The engine (plus an echo on its server) and a bare echo server, started; ports by name."""
    engine, engine_port, _ = create_engine_server(
        "127.0.0.1:0", metrics=EngineMetrics.create(CollectorRegistry())
    )
    engine.add_generic_rpc_handlers((echo_handler(),))
    bare, echo_port, _ = create_server("127.0.0.1:0", service_names=[ECHO_SERVICE])
    bare.add_generic_rpc_handlers((echo_handler(),))
    await engine.start()
    await bare.start()
    raw = await asyncio.get_running_loop().create_server(RawFrameEcho, "127.0.0.1", 0)
    raw_port = raw.sockets[0].getsockname()[1]

    async def stop() -> None:
        raw.close()
        await engine.stop(None)
        await bare.stop(None)

    return {"engine": engine_port, "echo": echo_port, "raw": raw_port}, stop


async def start_session(engine_target: str, store_url: str) -> tuple[Ports, Cleanup]:
    """The real session server (and its deadline scheduler) on ``store_url``, started."""
    from ninetynine.session.server import close_room_service, create_session_server

    server, port, _, rooms = create_session_server(
        "127.0.0.1:0",
        engine_target=engine_target,
        store_url=store_url,
        registry=CollectorRegistry(),
        engine_timeout=5.0,  # the bench loads a 2-core box: don't fail moves on a slow engine
    )
    await server.start()
    rooms.start()

    async def stop() -> None:
        await server.stop(None)
        await close_room_service(rooms)

    return {"session": port}, stop


def _starter(argv: Sequence[str]) -> Starter:
    parser = argparse.ArgumentParser(prog="python -m bench.servers")
    sub = parser.add_subparsers(dest="what", required=True)
    sub.add_parser("engine", help="engine + echo servers")
    session = sub.add_parser("session", help="session server")
    session.add_argument("--engine", required=True)
    session.add_argument("--store", required=True)
    args = parser.parse_args(argv)
    if args.what == "engine":
        return start_engine_and_echo

    def session_starter() -> Coroutine[Any, Any, tuple[Ports, Cleanup]]:
        return start_session(args.engine, args.store)

    return session_starter


async def _serve_until_stdin_closes(start: Starter) -> None:
    tune_gc()  # as `ninety-nine <service>` runs (ninetynine.common.runner)
    ports, stop = await start()
    print(json.dumps(ports), flush=True)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)  # returns at EOF: the parent is done or gone
    await stop()


def main(argv: Sequence[str] | None = None) -> int:
    start = _starter(sys.argv[1:] if argv is None else argv)
    # Production logging (one JSON line per RPC), written to the child's stderr (/dev/null).
    configure_logging("bench", level="info")
    run_loop(_serve_until_stdin_closes(start))  # uvloop, like the real services
    return 0


class ServerProcess:
    """``python -m bench.servers ARGS`` as a child process; ``ports`` once entered."""

    def __init__(self, *args: str) -> None:
        self.args = args
        self.ports: Ports = {}
        self._proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> ServerProcess:
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]),
        }
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "bench.servers", *self.args],
            cwd=REPO_ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if not line:
            self._proc.wait(5)
            raise RuntimeError(f"bench.servers {' '.join(self.args)} exited with {self._proc.returncode}")
        self.ports = json.loads(line)
        return self

    @property
    def pid(self) -> int:
        assert self._proc is not None, "not started"
        return self._proc.pid

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        proc = self._proc
        if proc is None:
            return
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class ServerThread:
    """The same servers on an event loop in a thread of this process (shared GIL)."""

    def __init__(self, start: Starter) -> None:
        self._start = start
        self.ports: Ports = {}
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="bench-servers", daemon=True)
        self._stop: Cleanup | None = None

    def __enter__(self) -> ServerThread:
        self._thread.start()
        self.ports, self._stop = asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(30)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._stop is not None:
            asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()


if __name__ == "__main__":
    sys.exit(main())
