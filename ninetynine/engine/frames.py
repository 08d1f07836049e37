"""The engine's moves over a local socket: ApplyMany's messages as length-prefixed frames.

A gRPC message costs grpc.aio far more CPU than the message itself: every one is handed from
grpc's I/O thread to its poller thread to the event loop, and on a process that was idle each
hand-over wakes a sleeping thread (``bench grpc_wake``: a stream message costs 3 to 10 times a
frame on a socket the event loop reads itself). A move crosses the session → engine hop twice.
When the session and the engine run on one machine (``ninety-nine serve``, or the engine as a
sidecar of the session's pod), the session sends its moves here instead: the same
``ApplyManyRequest`` and ``ApplyManyResponse`` bytes as on the ApplyMany stream, each behind a
4-byte big-endian length, on a Unix socket that both event loops read themselves. Everything else
(Setup, View, ListRules, other teams' calls, health) stays on gRPC.

The engine answers each frame as it reads it with :func:`ninetynine.engine.applymany.answer_bytes`:
the same answers, refusals, canonical lines and metrics as the stream's. A peer that does not
read its answers is not read from until it does, so no buffer grows without bound. The
connection starts with :data:`PREAMBLE`, which names the protocol and its version; a connection
that does not, a frame longer than :data:`MAX_FRAME` or bytes that do not parse as a request end
the connection.

Who may connect: the socket lives in a directory only its owner may enter (``serve`` makes a
private one), and the engine also refuses a peer whose user is not its own (``SO_PEERCRED``).

On the session's side, :func:`frame_call` stands in for the ApplyMany call of
:class:`ninetynine.common.sharedcalls.SharedCall`: when the connection fails or ends, the call fails
with UNAVAILABLE and the moves still waiting on it are sent again on a new connection, as when a
stream breaks.
"""

from __future__ import annotations

import asyncio
import os
import socket
import struct
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Generic, TypeVar, cast

import grpc

from ninetynine.common.errors import ServiceError
from ninetynine.common.logging import get_logger
from ninetynine.common.sharedcalls import rpc_error
from ninetynine.engine.applymany import Recorder, answer_bytes
from ninetynine.engine.handlers import EngineHandlers

__all__ = ["HEADER", "MAX_FRAME", "PREAMBLE", "FrameCall", "frame", "frame_call", "start_frame_server"]

log = get_logger(__name__)

# The first bytes of every connection: the protocol and its version.
PREAMBLE = b"ninetynine-engine-frames/1\n"
HEADER = 4
# As gRPC's default limit on a received message.
MAX_FRAME = 4 * 1024 * 1024
# Pending output past which the session waits for the engine to read (no unbounded buffering).
WRITE_HIGH_WATER = 1024 * 1024

_PEERCRED = struct.Struct("3i")  # pid, uid, gid

_Resp = TypeVar("_Resp")


def frame(data: bytes) -> bytes:
    """``data`` as one frame: its length in :data:`HEADER` big-endian bytes, then the bytes."""
    return len(data).to_bytes(HEADER, "big") + data


class _EngineFrames(asyncio.Protocol):
    """One connection to the engine: frames in, each answered in order as soon as it is whole."""

    def __init__(self, handlers: EngineHandlers, record: Recorder | None) -> None:
        self.handlers = handlers
        self.record = record
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.greeted = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        if not _same_user(transport):
            log.warning("engine frames: refused a peer of another user")
            transport.abort()

    def data_received(self, data: bytes) -> None:
        transport = self.transport
        assert transport is not None
        buffer = self.buffer
        buffer += data
        if not self.greeted:
            if len(buffer) < len(PREAMBLE):
                if not PREAMBLE.startswith(bytes(buffer)):
                    self._refuse("not the engine frames protocol")
                return
            if buffer[: len(PREAMBLE)] != PREAMBLE:
                self._refuse("not the engine frames protocol")
                return
            del buffer[: len(PREAMBLE)]
            self.greeted = True
        start = 0
        answers: list[bytes] = []
        while len(buffer) - start >= HEADER:
            size = int.from_bytes(buffer[start : start + HEADER], "big")
            if size > MAX_FRAME:
                self._refuse(f"a frame of {size} bytes (at most {MAX_FRAME})")
                return
            end = start + HEADER + size
            if len(buffer) < end:
                break
            try:
                answers.append(
                    frame(answer_bytes(self.handlers, bytes(buffer[start + HEADER : end]), "", self.record))
                )
            except ServiceError as err:  # bytes that do not parse as a request (MALFORMED_REQUEST)
                self._refuse(err.reason)
                return
            start = end
        del buffer[:start]
        if answers:
            transport.write(b"".join(answers))

    # A peer that does not read its answers: stop reading its requests until it does.
    def pause_writing(self) -> None:
        assert self.transport is not None
        self.transport.pause_reading()

    def resume_writing(self) -> None:
        assert self.transport is not None
        self.transport.resume_reading()

    def _refuse(self, why: str) -> None:
        log.warning("engine frames: connection ended", reason=why)
        assert self.transport is not None
        self.transport.abort()


def _same_user(transport: asyncio.Transport) -> bool:
    """Whether the peer of a Unix socket runs as this process's user (True where it cannot be told)."""
    sock = transport.get_extra_info("socket")
    peercred = getattr(socket, "SO_PEERCRED", None)
    if sock is None or peercred is None:
        return True
    _, uid, _ = _PEERCRED.unpack(sock.getsockopt(socket.SOL_SOCKET, peercred, _PEERCRED.size))
    return bool(uid == os.getuid())


async def start_frame_server(path: str, handlers: EngineHandlers, record: Recorder | None) -> asyncio.Server:
    """Listen on the Unix socket ``path`` (replacing a stale one), readable by this user only."""
    target = Path(path)
    if target.is_socket():
        target.unlink()
    loop = asyncio.get_running_loop()
    old = os.umask(0o177)
    try:
        server = await loop.create_unix_server(lambda: _EngineFrames(handlers, record), path)
    finally:
        os.umask(old)
    return server


class FrameCall(Generic[_Resp]):
    """What a grpc.aio stream-stream call is to :class:`~ninetynine.common.sharedcalls.SharedCall`,
    over the engine's socket: iterate it for the answers; it fails with UNAVAILABLE when the
    connection cannot be made, breaks or ends."""

    def __init__(self, path: str, requests: AsyncIterator[bytes], parse: Callable[[bytes], _Resp]) -> None:
        self.path = path
        self.parse = parse
        self._requests = requests
        self._writer: asyncio.Task[None] | None = None

    def __aiter__(self) -> AsyncIterator[_Resp]:
        return self._answers()

    async def _answers(self) -> AsyncIterator[_Resp]:
        try:
            reader, writer = await asyncio.open_unix_connection(self.path)
        except OSError as exc:
            raise rpc_error(grpc.StatusCode.UNAVAILABLE, f"engine frames: cannot connect: {exc}") from None
        writer.write(PREAMBLE)
        self._writer = asyncio.create_task(self._write(writer))
        try:
            while True:
                header = await reader.readexactly(HEADER)
                size = int.from_bytes(header, "big")
                if size > MAX_FRAME:
                    raise rpc_error(grpc.StatusCode.UNAVAILABLE, f"engine frames: a {size}-byte answer")
                yield self.parse(await reader.readexactly(size))
        except (asyncio.IncompleteReadError, OSError) as exc:
            raise rpc_error(grpc.StatusCode.UNAVAILABLE, f"engine frames: connection lost: {exc!r}") from None
        finally:
            self._writer.cancel()
            writer.close()

    async def _write(self, writer: asyncio.StreamWriter) -> None:
        try:
            async for data in self._requests:
                writer.write(frame(data))
                if writer.transport.get_write_buffer_size() > WRITE_HIGH_WATER:
                    await writer.drain()
        except (ConnectionError, OSError):
            pass  # the reader sees the connection end and fails the call

    def cancel(self) -> None:
        if self._writer is not None:
            self._writer.cancel()


def frame_call(
    path: str, parse: Callable[[bytes], _Resp]
) -> Callable[[AsyncIterator[bytes]], FrameCall[_Resp]]:
    """The ``method`` of a shared call over the engine socket at ``path``."""

    def open_call(requests: AsyncIterator[bytes]) -> FrameCall[_Resp]:
        return FrameCall(path, requests, parse)

    return open_call
