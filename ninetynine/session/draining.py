"""Ending the shared calls (PlayMany, SubscribeMany) early when a session replica shuts down.

A gateway carries all its clients' plays and room streams over a few long-lived calls. Left alone,
those calls would stay on a stopping replica for its whole grace period, keep receiving new plays
there, and then be cut off with the plays in flight failing UNAVAILABLE. Instead, once the server
has begun to stop (new calls are refused, the gateway has been told to go elsewhere),
:meth:`OpenStreams.drain` asks every open call to stop reading requests: a PlayMany call answers
the plays it has already started and ends (OK); a SubscribeMany call sends what it has queued and
ends. The gateway takes an ended call as broken: it resends the plays that got no answer (they are
idempotent by ``client_seq``) and resubscribes from the last seq, on a new call that lands on
another replica.

A request that gRPC had already received but the call had not yet taken up when the drain began
gets no answer: the call ends without it, and the caller resends it on its new call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from ninetynine.common.logging import get_logger

log = get_logger(__name__)


class DrainableCall:
    """A call whose request reader the server can stop between two requests (see :meth:`drain`).

    The subclass starts its reader with :meth:`_start_reader`, wraps its read loop in
    :meth:`_reading_requests`, handles ``CancelledError`` there with :meth:`_drained`, and calls
    :meth:`_ended` before it cancels the reader on the way out.
    """

    def __init__(self) -> None:
        self.draining = False
        self._reader: asyncio.Task[None] | None = None
        self._reading = False
        self._gone = False

    def drain(self) -> None:
        """Stop reading requests; the reader then finishes the call as if the caller had half-closed."""
        if self.draining:
            return
        self.draining = True
        if self._reading and self._reader is not None:
            self._reader.cancel()

    def _start_reader(self, reading: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        self._reader = asyncio.create_task(reading)
        return self._reader

    @contextmanager
    def _reading_requests(self) -> Iterator[None]:
        """Around the read loop: only while inside it may :meth:`drain` interrupt the reader."""
        self._reading = not self.draining
        try:
            yield
        finally:
            self._reading = False

    def _drained(self) -> bool:
        """In the reader's ``except CancelledError``: True when :meth:`drain` stopped the reading
        (the reader goes on to end the call), False when the call itself is going away (re-raise)."""
        task = asyncio.current_task()
        if not self.draining or self._gone or task is None:
            return False
        task.uncancel()
        return True

    def _ended(self) -> None:
        """The call is going away: a cancellation of the reader from now on is not a drain."""
        self._gone = True


class Listener(Protocol):
    """Another way in for the shared calls than the gRPC server (the frames socket)."""

    async def start(self) -> None: ...

    def stop_listening(self) -> None: ...

    async def wait_closed(self, timeout: float) -> None: ...


class OpenStreams:
    """The shared calls open on one session server, whichever listener took them, so that its
    shutdown can drain them; ``listeners`` stop taking calls when the drain begins."""

    def __init__(self) -> None:
        self.draining = False
        self._open: set[DrainableCall] = set()
        self.listeners: list[Listener] = []

    @contextmanager
    def track(self, call: DrainableCall) -> Iterator[None]:
        """While the handler of ``call`` runs; a call that starts after the drain began drains at once."""
        self._open.add(call)
        if self.draining:
            call.drain()
        try:
            yield
        finally:
            self._open.discard(call)

    async def drain(self) -> None:
        """Ask every open call to stop reading and end (``serve``'s ``on_draining``)."""
        self.draining = True
        for listener in self.listeners:
            listener.stop_listening()
        calls = list(self._open)
        log.info("draining shared calls", calls=len(calls))
        for call in calls:
            call.drain()
