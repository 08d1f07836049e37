"""The gateway's shared calls over a local socket: PlayMany and SubscribeMany as frames.

A move crosses the gateway ↔ session hop at least twice (the play in, the room's batches out). When
the gateway and the session run on one machine (``ninety-nine serve`` with one session), the
gateway opens its shared PlayMany and SubscribeMany calls here instead of over gRPC: the same
messages, framed (:mod:`ninetynine.common.frames`), each connection carrying one call of the method
its preamble names. A connection runs what the gRPC method runs (:class:`PlayMany`,
:class:`SubscribeMany`): the same plays, canonical lines, metrics, refusals and drain on shutdown.

What the gRPC server gives a call and a socket does not is here: requests are parsed leniently
(bytes that do not parse, or a frame longer than :data:`~ninetynine.common.frames.MAX_FRAME`, end
the connection with MALFORMED_REQUEST counted and logged, as they end the gRPC call); answers wait
for the peer to read once :data:`~ninetynine.common.frames.WRITE_HIGH_WATER` bytes are pending, and
requests are read only as the call takes them up, so no buffer grows without bound; each
connection gets the canonical line and latency sample of its gRPC twin when it ends (with
``transport=frames``). Whoever may connect: this user only (see
:mod:`ninetynine.common.frames`); the socket stands in for the service credential.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable

import grpc
from google.protobuf.message import Message

from ninetynine.common.context import request_scope
from ninetynine.common.errors import ServiceError
from ninetynine.common.frames import (
    HEADER,
    MAX_FRAME,
    MAX_PREAMBLE,
    WRITE_HIGH_WATER,
    frame,
    method_path,
    preamble,
    private_socket,
    remove_socket,
    same_user,
)
from ninetynine.common.lenient import checked, lenient, malformed_request
from ninetynine.common.logging import get_logger
from ninetynine.session.draining import OpenStreams
from ninetynine.session.errors import DOMAIN
from ninetynine.session.multiplex import SubscribeMany
from ninetynine.session.playmany import PlayMany, Recorder
from ninetynine.session.service import RoomService
from ninetynine.session.v1 import session_service_pb2 as pb

__all__ = ["PLAY_MANY", "SUBSCRIBE_MANY", "SessionFrames"]

log = get_logger(__name__)

_SERVICE = pb.DESCRIPTOR.services_by_name["SessionService"]
PLAY_MANY = method_path(_SERVICE, "PlayMany")
SUBSCRIBE_MANY = method_path(_SERVICE, "SubscribeMany")
_REQUESTS: dict[bytes, tuple[str, type[Message]]] = {
    preamble(PLAY_MANY): (PLAY_MANY, pb.PlayManyRequest),
    preamble(SUBSCRIBE_MANY): (SUBSCRIBE_MANY, pb.SubscribeManyRequest),
}


class SessionFrames:
    """The session's frames socket: one connection per shared call of a gateway on this machine."""

    def __init__(
        self,
        rooms: RoomService,
        streams: OpenStreams,
        record: Recorder | None,
        on_refusal: Callable[[str], None],
        path: str,
    ) -> None:
        self.rooms = rooms
        self.streams = streams
        self.record = record
        self.on_refusal = on_refusal
        self.path = path
        self.server: asyncio.Server | None = None
        self.connections: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        """Listen on the Unix socket ``path`` (replacing a stale one), usable by this user only."""
        with private_socket(self.path):
            self.server = await asyncio.start_unix_server(self._connected, self.path)

    def stop_listening(self) -> None:
        """Take no new connections (the shutdown's first step; the open calls are drained with the rest)."""
        if self.server is not None:  # once: a later call must not unlink a successor's socket
            remove_socket(self.server, self.path)
            self.server = None

    async def wait_closed(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for the open calls to end, then cut off the rest."""
        self.stop_listening()
        pending = set(self.connections)
        if pending:
            _, late = await asyncio.wait(pending, timeout=timeout)
            for task in late:
                task.cancel()
            await asyncio.gather(*late, return_exceptions=True)

    async def _connected(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.connections.add(task)
        try:
            await self._serve(reader, writer)
        finally:
            self.connections.discard(task)
            writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not same_user(writer.transport):
            log.warning("session frames: refused a peer of another user")
            return
        try:
            line = await reader.readuntil(b"\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError):
            return
        known = _REQUESTS.get(line) if len(line) <= MAX_PREAMBLE else None
        if known is None:
            log.warning("session frames: connection ended", reason="not a session frames preamble")
            return
        method, request_type = known
        call: PlayMany | SubscribeMany = (
            PlayMany(self.rooms, "", self.record) if method == PLAY_MANY else SubscribeMany(self.rooms, "")
        )
        await self._run(method, call, self._requests(reader, request_type), writer)

    async def _run(
        self,
        method: str,
        call: PlayMany | SubscribeMany,
        requests: AsyncIterator[Message],
        writer: asyncio.StreamWriter,
    ) -> None:
        started = time.perf_counter()
        code = grpc.StatusCode.OK
        fields: dict[str, object] = {"transport": "frames"}
        with request_scope(None, method=method):
            try:
                with self.streams.track(call):
                    async for answer in call.run(requests):  # type: ignore[arg-type]
                        data = answer if isinstance(answer, bytes) else answer.SerializeToString()
                        writer.write(frame(data))
                        if writer.is_closing():
                            break  # the peer went away: its call ends here
                        if writer.transport.get_write_buffer_size() > WRITE_HIGH_WATER:
                            await writer.drain()
            except ServiceError as err:  # a request that does not parse: the connection ends
                code = err.code
                fields["reason"] = err.reason
            except (ConnectionError, OSError):
                code = grpc.StatusCode.UNAVAILABLE
            finally:
                if isinstance(call, PlayMany):
                    fields["plays"] = call.received
                else:
                    fields["subscriptions"] = call.opened
                if self.record is not None:
                    self.record(method, code, time.perf_counter() - started, fields, None)

    async def _requests(
        self, reader: asyncio.StreamReader, request_type: type[Message]
    ) -> AsyncIterator[Message]:
        """The call's requests, read as it takes them; the peer's end of writing ends them."""
        parse = lenient(request_type)
        while True:
            try:
                header = await reader.readexactly(HEADER)
                size = int.from_bytes(header, "big")
                if size > MAX_FRAME:
                    self.on_refusal("MALFORMED_REQUEST")
                    raise malformed_request(DOMAIN, f"a frame of {size} bytes (at most {MAX_FRAME})")
                data = await reader.readexactly(size)
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            request = parse(data)
            checked(request, DOMAIN, self.on_refusal)
            yield request  # type: ignore[misc]
