"""The engine's moves over a local socket: ApplyMany's messages as frames (:mod:`ninetynine.common.frames`).

A move crosses the session → engine hop twice. When the session and the engine run on one
machine (``ninety-nine serve``, or the engine as a sidecar of the session's pod), the session sends
its moves here instead of on the ApplyMany stream: the same ``ApplyManyRequest`` and
``ApplyManyResponse`` bytes, framed. Everything else (Setup, View, ListRules, other teams' calls,
health) stays on gRPC.

The engine answers each frame as it reads it with :func:`ninetynine.engine.applymany.answer_bytes`:
the same answers, refusals, canonical lines and metrics as the stream's. A peer that does not
read its answers is not read from until it does, so no buffer grows without bound. A connection
that does not start with :data:`PREAMBLE`, a frame longer than
:data:`~ninetynine.common.frames.MAX_FRAME` or bytes that do not parse as a request end the
connection. On the session's side, :func:`frame_call` is the ApplyMany call of its shared calls.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import cast

from ninetynine.common.errors import ServiceError
from ninetynine.common.frames import (
    HEADER,
    MAX_FRAME,
    FrameCall,
    frame,
    method_path,
    private_socket,
    same_user,
)
from ninetynine.common.frames import frame_call as _frame_call
from ninetynine.common.frames import preamble as _preamble
from ninetynine.common.logging import get_logger
from ninetynine.engine.applymany import Recorder, answer_bytes
from ninetynine.engine.handlers import EngineHandlers
from ninetynine.engine.v1 import engine_service_pb2 as pb

__all__ = ["APPLY_MANY", "PREAMBLE", "frame_call", "start_frame_server"]

log = get_logger(__name__)

APPLY_MANY = method_path(pb.DESCRIPTOR.services_by_name["EngineService"], "ApplyMany")
# The first bytes of every connection: the protocol, its version and the method.
PREAMBLE = _preamble(APPLY_MANY)


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
        if not same_user(transport):
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


async def start_frame_server(path: str, handlers: EngineHandlers, record: Recorder | None) -> asyncio.Server:
    """Listen on the Unix socket ``path`` (replacing a stale one), readable by this user only."""
    with private_socket(path):
        loop = asyncio.get_running_loop()
        return await loop.create_unix_server(lambda: _EngineFrames(handlers, record), path)


def _identity(data: bytes) -> bytes:
    return data


def frame_call(path: str) -> Callable[[AsyncIterator[bytes]], FrameCall[bytes, pb.ApplyManyResponse]]:
    """The ApplyMany ``method`` of the session's shared calls over the engine socket at ``path``
    (requests already serialized, answers parsed)."""
    return _frame_call(path, APPLY_MANY, _identity, pb.ApplyManyResponse.FromString)
