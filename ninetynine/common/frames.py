"""A stream's messages between two of our processes on one machine, as frames on a Unix socket.

A gRPC message costs grpc.aio far more CPU than the message itself: every one is handed from
grpc's I/O thread to its poller thread to the event loop, and on a process that was idle each
hand-over wakes a sleeping thread (``bench grpc_wake``: a stream message costs 3 to 10 times a
frame on a socket the event loop reads itself). The hops a move crosses most (the session's moves
to the engine, the gateway's plays and room streams to the session) can therefore also run, when
both processes share a machine, as the same protobuf messages each behind a 4-byte big-endian
length (:func:`frame`) on a Unix socket that both event loops read themselves.

A connection carries one bidirectional stream and starts with its :func:`preamble`, which names
the protocol's version and the gRPC method whose messages it carries. A connection that does not,
a frame longer than :data:`MAX_FRAME` or bytes that do not parse as the method's request end the
connection.

Who may connect: the socket is made readable and writable by its owner only
(:func:`private_socket`), lives in a directory only its owner may enter (``serve`` makes a private
one), and the listener also refuses a peer whose user is not its own (:func:`same_user`).

On the calling side, :class:`FrameCall` stands in for the grpc.aio stream-stream call that
:class:`ninetynine.common.sharedcalls.SharedCall` holds. While its listener is away (restarting) it
waits for it, as a gRPC call waits for a ready server; when the connection cannot be made, breaks
or ends, the call fails with UNAVAILABLE, and the shared call's callers resend or resubscribe on a
new connection as when a gRPC stream breaks.
"""

from __future__ import annotations

import asyncio
import os
import socket
import struct
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Generic, TypeVar

import grpc
from google.protobuf.descriptor import ServiceDescriptor

from ninetynine.common.sharedcalls import rpc_error

__all__ = [
    "HEADER",
    "MAX_FRAME",
    "WRITE_HIGH_WATER",
    "FrameCall",
    "frame",
    "frame_call",
    "method_path",
    "preamble",
    "private_socket",
    "remove_socket",
    "same_user",
]

HEADER = 4
# As gRPC's default limit on a received message.
MAX_FRAME = 4 * 1024 * 1024
# Pending output past which a writer waits for its peer to read (no unbounded buffering).
WRITE_HIGH_WATER = 1024 * 1024
# The longest preamble a listener reads before it gives up on the connection.
MAX_PREAMBLE = 128
# A caller waits this long for a listener that is restarting, retrying from the first pause
# (doubling up to the longest) before its call fails UNAVAILABLE; the callers' own deadlines are
# shorter.
CONNECT_WAIT_S = 30.0
CONNECT_FIRST_PAUSE_S = 0.02
CONNECT_MAX_PAUSE_S = 1.0

_PEERCRED = struct.Struct("3i")  # pid, uid, gid

_Req = TypeVar("_Req")
_Resp = TypeVar("_Resp")


def method_path(service: ServiceDescriptor, name: str) -> str:
    """The gRPC path of ``service``'s method ``name`` (``/pkg.Service/Name``), as a preamble names it."""
    return f"/{service.full_name}/{service.methods_by_name[name].name}"


def preamble(method: str) -> bytes:
    """The first bytes of a connection that carries the gRPC ``method`` (``/pkg.Service/Name``)."""
    return f"ninetynine-frames/1 {method}\n".encode()


def frame(data: bytes) -> bytes:
    """``data`` as one frame: its length in :data:`HEADER` big-endian bytes, then the bytes."""
    return len(data).to_bytes(HEADER, "big") + data


def same_user(transport: asyncio.BaseTransport) -> bool:
    """Whether the peer of a Unix socket runs as this process's user (True where it cannot be told)."""
    sock = transport.get_extra_info("socket")
    peercred = getattr(socket, "SO_PEERCRED", None)
    if sock is None or peercred is None:
        return True
    _, uid, _ = _PEERCRED.unpack(sock.getsockopt(socket.SOL_SOCKET, peercred, _PEERCRED.size))
    return bool(uid == os.getuid())


@contextmanager
def private_socket(path: str) -> Iterator[None]:
    """Around binding a Unix socket at ``path``: a stale one there goes, the new one is the owner's only."""
    target = Path(path)
    if target.is_socket():
        target.unlink()
    old = os.umask(0o177)
    try:
        yield
    finally:
        os.umask(old)


def remove_socket(server: asyncio.Server, path: str) -> None:
    """Stop listening and remove the socket file, so that a stopped service leaves nothing behind."""
    server.close()
    with suppress(FileNotFoundError):
        if Path(path).is_socket():
            os.unlink(path)


class FrameCall(Generic[_Req, _Resp]):
    """A bidirectional call over a frames socket: iterate it for the answers; it fails with
    UNAVAILABLE when the connection cannot be made, breaks or ends."""

    def __init__(
        self,
        path: str,
        method: str,
        requests: AsyncIterator[_Req],
        serialize: Callable[[_Req], bytes],
        parse: Callable[[bytes], _Resp],
    ) -> None:
        self.path = path
        self.method = method
        self.serialize = serialize
        self.parse = parse
        self._requests = requests
        self._writer: asyncio.Task[None] | None = None

    def __aiter__(self) -> AsyncIterator[_Resp]:
        return self._answers()

    def _unavailable(self, what: str) -> grpc.aio.AioRpcError:
        return rpc_error(grpc.StatusCode.UNAVAILABLE, f"frames {self.method} at {self.path}: {what}")

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """Connect, waiting for a listener that is not there yet (restarting) as a gRPC call waits
        for a ready server (``waitForReady``), up to :data:`CONNECT_WAIT_S`."""
        loop = asyncio.get_running_loop()
        give_up = loop.time() + CONNECT_WAIT_S
        pause = CONNECT_FIRST_PAUSE_S
        while True:
            try:
                return await asyncio.open_unix_connection(self.path)
            except (FileNotFoundError, ConnectionRefusedError) as exc:
                if loop.time() + pause > give_up:
                    raise self._unavailable(f"cannot connect: {exc}") from None
            except OSError as exc:
                raise self._unavailable(f"cannot connect: {exc}") from None
            await asyncio.sleep(pause)
            pause = min(pause * 2, CONNECT_MAX_PAUSE_S)

    async def _answers(self) -> AsyncIterator[_Resp]:
        reader, writer = await self._connect()
        writer.write(preamble(self.method))
        self._writer = asyncio.create_task(self._write(writer))
        try:
            while True:
                header = await reader.readexactly(HEADER)
                size = int.from_bytes(header, "big")
                if size > MAX_FRAME:
                    raise self._unavailable(f"a {size}-byte answer")
                yield self.parse(await reader.readexactly(size))
        except (asyncio.IncompleteReadError, OSError) as exc:
            raise self._unavailable(f"connection lost: {exc!r}") from None
        finally:
            self._writer.cancel()
            writer.close()

    async def _write(self, writer: asyncio.StreamWriter) -> None:
        serialize = self.serialize
        try:
            async for request in self._requests:
                writer.write(frame(serialize(request)))
                if writer.transport.get_write_buffer_size() > WRITE_HIGH_WATER:
                    await writer.drain()
        except (ConnectionError, OSError):
            pass  # the reader sees the connection end and fails the call

    def cancel(self) -> None:
        if self._writer is not None:
            self._writer.cancel()


def frame_call(
    path: str, method: str, serialize: Callable[[_Req], bytes], parse: Callable[[bytes], _Resp]
) -> Callable[[AsyncIterator[_Req]], FrameCall[_Req, _Resp]]:
    """The ``method`` of a shared call (:class:`~ninetynine.common.sharedcalls.SharedCall`) whose
    gRPC ``method`` runs over the frames socket at ``path``."""

    def open_call(requests: AsyncIterator[_Req]) -> FrameCall[_Req, _Resp]:
        return FrameCall(path, method, requests, serialize, parse)

    return open_call
