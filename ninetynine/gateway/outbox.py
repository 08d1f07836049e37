"""A connection's outbox: its bounded backlog of server messages and the one task that drains it.

Direct replies and the pushed room stream go through the same outbox, so they keep their order.
Everything put during one turn of the event loop goes out together at the end of that turn (a
move is several events, the room and the view: one socket write instead of one per message):
written at once when the transport can take it without waiting and nothing is waiting before it,
else left to the writer task, which writes the backlog in batches and waits for a slow reader's
socket to drain. So a connection that keeps up costs no task wake-up per move. A full backlog is
the caller's sign of a slow client; a failed write ends the writer and tells the connection.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import grpc

from ninetynine.common.logging import get_logger
from ninetynine.gateway.convert import JsonId
from ninetynine.gateway.metrics import GatewayMetrics
from ninetynine.gateway.v1 import gateway_service_pb2 as gw

__all__ = ["WRITE_BATCH_MAX", "Outbox", "Outgoing", "Transport"]

log = get_logger("gateway.messages")

# At most this many queued messages go out in one transport write.
WRITE_BATCH_MAX = 64


class Transport(Protocol):
    """What a connection needs from its transport."""

    protocol: str
    # Whether it sends messages as client JSON texts, so one may come already encoded.
    json_text: bool

    async def send(self, out: Outgoing) -> None: ...

    async def send_many(self, outs: list[Outgoing]) -> None:
        """Send several messages in order, as one write where the transport can."""
        ...

    def write_now(self, outs: list[Outgoing]) -> bool:
        """Write several messages in order without waiting, or return False and write nothing."""
        ...

    async def close(self, code: int) -> None: ...


@dataclass
class Outgoing:
    msg: gw.ServerMessage
    reply_id: JsonId | None = None
    # Monotonic time the play arrived (for the mover's 'played': the move latency metric).
    play_received: float | None = None
    # The message's client JSON when it came encoded (a view the session wrote as JSON, for a
    # transport with ``json_text``); ``msg`` is then the message without its view.
    text: bytes | None = None


class Outbox:
    """The backlog of one connection's server messages and its writer task."""

    def __init__(
        self,
        transport: Transport,
        metrics: GatewayMetrics,
        clock: Callable[[], float],
        size: int,
        on_broken: Callable[[], None],
    ) -> None:
        self.transport = transport
        self.metrics = metrics
        self.clock = clock
        self.size = size
        # Called once when a write fails: the socket is gone, nothing more can be sent.
        self.on_broken = on_broken
        self.writer: asyncio.Task[None] | None = None
        self._queue: asyncio.Queue[Outgoing] = asyncio.Queue()
        # Put during this turn of the loop; flushed by one callback at its end.
        self._turn: list[Outgoing] = []
        self._writing = False  # the writer is in a write (it may be waiting for the socket)
        self._broken = False

    def start(self) -> None:
        """Start the writer (inside the event loop)."""
        self.writer = asyncio.create_task(self._write_loop())

    def put(self, out: Outgoing) -> bool:
        """Queue ``out``; False when the backlog is full."""
        turn = self._turn
        if len(turn) + self._queue.qsize() >= self.size:
            return False
        if not turn:
            asyncio.get_running_loop().call_soon(self._flush)
        turn.append(out)
        return True

    def drop_backlog(self) -> None:
        self._turn.clear()
        while not self._queue.empty():
            self._queue.get_nowait()

    async def send_now(self, out: Outgoing) -> None:
        """Write ``out`` at once, past the queue (the goodbye once the writer is stopped)."""
        await self._send_batch([out])

    def _flush(self) -> None:
        batch, self._turn = self._turn, []
        if not batch or self._broken:
            return
        if self._writing or not self._queue.empty() or self.writer is None:
            self._enqueue(batch)
            return
        try:
            written = self.transport.write_now(batch)
        except (ConnectionError, OSError, RuntimeError) as exc:
            self._fail(exc)
            return
        if written:
            self._count(batch)
        else:
            self._enqueue(batch)

    def _enqueue(self, batch: list[Outgoing]) -> None:
        for out in batch:
            self._queue.put_nowait(out)

    def _count(self, batch: list[Outgoing]) -> None:
        for out in batch:
            kind = out.msg.WhichOneof("kind") or ""
            self.metrics.messages.labels("out", kind).inc()
            if out.play_received is not None and kind == "played":
                self.metrics.move_duration.labels(self.transport.protocol).observe(
                    self.clock() - out.play_received
                )

    async def _send_batch(self, batch: list[Outgoing]) -> None:
        if len(batch) == 1:
            await self.transport.send(batch[0])
        else:
            await self.transport.send_many(batch)
        self._count(batch)

    def _fail(self, exc: BaseException) -> None:
        self._broken = True
        log.info("send failed; closing", protocol=self.transport.protocol, error=str(exc))
        self.on_broken()

    async def _write_loop(self) -> None:
        while True:
            batch = [await self._queue.get()]
            while len(batch) < WRITE_BATCH_MAX and not self._queue.empty():
                batch.append(self._queue.get_nowait())
            self._writing = True
            try:
                await self._send_batch(batch)
            except (ConnectionError, OSError, RuntimeError, grpc.RpcError) as exc:
                self._fail(exc)
                return
            finally:
                self._writing = False
