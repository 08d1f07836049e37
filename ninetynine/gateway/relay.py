"""The gateway's room streams over a few shared SubscribeMany calls instead of one Subscribe each.

Every bound client follows its room. With one ``Subscribe`` per client, a move in a room of four
would be four gRPC messages into this process (and four out of the session); here the clients' room
streams share ``streams`` SubscribeMany calls, chosen by room so that the subscribers of one room
share a call and the session can put a whole move's batches in one message.

:meth:`SessionRelay.subscribe` behaves like ``stub.Subscribe(...)`` for its caller: it yields
``SubscribeResponse`` items and fails with a ``grpc.aio.AioRpcError`` carrying the status (and the
``ErrorInfo`` trailer) that Subscribe would have failed with, so the caller's retry and error paths
are the same. When a shared call breaks (a session replica went away), each of its subscriptions
fails with that call's status and its caller resubscribes from its last seq, on a new call (with
several replicas behind round-robin, a new call may land on another replica).

The clients' plays go the same way: :class:`PlayRelay` carries them on ``streams`` shared PlayMany
calls instead of one unary ``Play`` call each. :meth:`PlayRelay.play` behaves like
``stub.Play(...)``: it returns the ``PlayResponse`` or raises a ``grpc.aio.AioRpcError`` with the
code, details and ``grpc-status-details-bin`` trailer Play would have failed with
(DEADLINE_EXCEEDED after the caller's timeout). When a shared call breaks (the session replica
drained it on shutdown, or went away), each of its unanswered plays is sent again on a new call,
up to :data:`~ninetynine.common.grpcclient.RETRY_MAX_ATTEMPTS` sendings in all (the unary calls'
retry budget) within the same timeout: plays are idempotent by ``client_seq``, so the resend is safe
whether or not the first one landed, and with several replicas behind round robin the new call
lands on one that is still serving (the gateway's channel makes it wait for one to be connected,
see :func:`ninetynine.common.grpcclient.failover_options`). Only if every sending fails does the play
fail with the call's status (UNAVAILABLE when the session went away, DEADLINE_EXCEEDED when no
replica was there within the timeout), and the client resends it itself. A play the
session answered with a refusal (an UNAVAILABLE one included, e.g. ENGINE_UNAVAILABLE) is never
resent here: the refusal goes back to the caller as it is.
"""

from __future__ import annotations

import asyncio
import itertools
import zlib
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any, Generic, TypeVar

import grpc
import grpc.aio
from prometheus_client import Counter

from ninetynine.common.context import request_id, request_scope
from ninetynine.common.errors import STATUS_DETAILS_KEY
from ninetynine.common.grpcclient import RETRY_MAX_ATTEMPTS
from ninetynine.common.logging import get_logger
from ninetynine.session.v1 import session_service_pb2 as spb
from ninetynine.session.v1 import session_service_pb2_grpc as spb_grpc

log = get_logger(__name__)

# Items one subscription may have waiting before its reader counts as stuck; it is then ended
# (UNAVAILABLE) and resubscribes from its last seq, so one slow client cannot grow memory unbounded.
MAX_PENDING_ITEMS = 2000

_Item = spb.SubscriptionItem | grpc.aio.AioRpcError
_Req = TypeVar("_Req")
_Resp = TypeVar("_Resp")
_C = TypeVar("_C", bound="_Call[Any, Any]")


def _error(code: grpc.StatusCode, details: str, status_details: bytes = b"") -> grpc.aio.AioRpcError:
    trailers = grpc.aio.Metadata()
    if status_details:
        trailers.add(STATUS_DETAILS_KEY, status_details)
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), trailers, details, None)


_CODES = {code.value[0]: code for code in grpc.StatusCode}
# How a shared call that the session ended or cut off fails its plays (the gateway's own closing
# is CANCELLED too, but then nothing is resent: see ``_Pool.closing``). A replica killed mid-stream
# can surface as INTERNAL (the stream reset under it), seen in the double-kill fault test.
_RETRY_CODES = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED, grpc.StatusCode.INTERNAL})
_RESEND_PAUSE_S = 0.05


class _Call(ABC, Generic[_Req, _Resp]):
    """One shared bidirectional call: requests queued by many callers, answers read by one task.

    The call outlives the caller that happens to open it, so it gets a request id of its own (the
    session's line for the call is then not taken for one of that caller's). Once the call ends,
    for whatever reason, it is ``broken`` and :meth:`_fail` hands the ending status to everyone
    still waiting on it; the pool opens a new call for the next caller.
    """

    kind = ""  # "room" or "play": log lines and the call's request-scope field

    def __init__(self, method: Callable[[AsyncIterator[_Req]], Any], index: int) -> None:
        self.index = index
        self.requests: asyncio.Queue[_Req] = asyncio.Queue()
        self.broken = False
        with request_scope(None, shared_stream=f"{self.kind}-{index}"):
            self.call = method(self._requests())
            self.reader = asyncio.create_task(self._read())

    async def _requests(self) -> AsyncIterator[_Req]:
        while True:
            yield await self.requests.get()

    async def _read(self) -> None:
        error: grpc.aio.AioRpcError
        try:
            async for message in self.call:
                self._on_message(message)
            error = _error(grpc.StatusCode.UNAVAILABLE, f"the session ended the shared {self.kind} stream")
        except grpc.aio.AioRpcError as exc:
            error = exc
        except asyncio.CancelledError:
            error = _error(grpc.StatusCode.CANCELLED, "the gateway is closing")
            raise
        finally:
            self.broken = True
            self._fail(error)

    @abstractmethod
    def _on_message(self, message: _Resp) -> None:
        """Hand one message of the call to whoever waits for it."""

    @abstractmethod
    def _fail(self, error: grpc.aio.AioRpcError) -> None:
        """The call has ended with ``error``: fail everyone still waiting on it."""

    def cancel(self) -> None:
        self.call.cancel()
        self.reader.cancel()


class _Pool(Generic[_C]):
    """``streams`` shared calls opened by ``open_call(index)``, chosen by room, reopened after a break.

    By room, so that a room's traffic keeps to one call (and, with several session replicas behind
    round robin, to one replica).
    """

    def __init__(self, open_call: Callable[[int], _C], streams: int) -> None:
        if streams < 1:
            raise ValueError("a relay needs at least one stream")
        self._open_call = open_call
        self.calls: list[_C | None] = [None] * streams
        self._ids = itertools.count(1)
        self.closing = False

    def _call_for(self, room_id: str) -> _C:
        index = zlib.crc32(room_id.encode()) % len(self.calls)
        call = self.calls[index]
        if call is None or call.broken:
            call = self.calls[index] = self._open_call(index)
        return call

    async def close(self) -> None:
        self.closing = True
        calls = [call for call in self.calls if call is not None]
        for call in calls:
            call.cancel()
        await asyncio.gather(*(call.reader for call in calls), return_exceptions=True)
        self.calls = [None] * len(self.calls)


class _SharedCall(_Call[spb.SubscribeManyRequest, spb.SubscribeManyResponse]):
    """One SubscribeMany call and the subscriptions it carries."""

    kind = "room"

    def __init__(self, stub: spb_grpc.SessionServiceAsyncStub, index: int) -> None:
        self.subscriptions: dict[int, asyncio.Queue[_Item]] = {}
        super().__init__(stub.SubscribeMany, index)

    def _on_message(self, message: spb.SubscribeManyResponse) -> None:
        for item in message.items:
            queue = self.subscriptions.get(item.id)
            if queue is None:
                continue  # closed meanwhile
            if queue.qsize() >= MAX_PENDING_ITEMS:
                self.close(item.id)
                queue.put_nowait(_error(grpc.StatusCode.UNAVAILABLE, "room stream backlog"))
                continue
            queue.put_nowait(item)

    def _fail(self, error: grpc.aio.AioRpcError) -> None:
        if self.subscriptions:
            log.info(
                "shared room stream ended",
                stream=self.index,
                subscriptions=len(self.subscriptions),
                code=error.code().name,
            )
        for queue in self.subscriptions.values():
            queue.put_nowait(error)
        self.subscriptions.clear()

    def open(self, sub_id: int, request: spb.SubscribeRequest, lang: str) -> asyncio.Queue[_Item]:
        queue: asyncio.Queue[_Item] = asyncio.Queue()
        self.subscriptions[sub_id] = queue
        spec = spb.OpenSubscription(id=sub_id, request=request, accept_language=lang, request_id=request_id())
        self.requests.put_nowait(spb.SubscribeManyRequest(open=spec))
        return queue

    def close(self, sub_id: int) -> None:
        if self.subscriptions.pop(sub_id, None) is not None and not self.broken:
            self.requests.put_nowait(spb.SubscribeManyRequest(close=sub_id))


class SessionRelay(_Pool[_SharedCall]):
    """``streams`` shared SubscribeMany calls to the session, opened on first use and after a break."""

    def __init__(self, stub: spb_grpc.SessionServiceAsyncStub, streams: int = 2) -> None:
        super().__init__(lambda index: _SharedCall(stub, index), streams)

    async def subscribe(
        self, request: spb.SubscribeRequest, lang: str
    ) -> AsyncGenerator[spb.SubscribeResponse, None]:
        """Like ``Subscribe(request)`` with ``accept-language: lang``, over a shared call."""
        call = self._call_for(request.token.partition(".")[0])
        sub_id = next(self._ids)
        queue = call.open(sub_id, request, lang)
        try:
            while True:
                item = await queue.get()
                if isinstance(item, grpc.aio.AioRpcError):
                    raise item
                if item.WhichOneof("item") == "response":
                    yield item.response
                    continue
                end = item.end
                call.subscriptions.pop(sub_id, None)
                if end.code == grpc.StatusCode.OK.value[0]:
                    return
                raise _error(_CODES.get(end.code, grpc.StatusCode.UNKNOWN), end.message, end.status_details)
        finally:
            call.close(sub_id)


class _PlayCall(_Call[spb.PlayManyRequest, spb.PlayManyResponse]):
    """One PlayMany call and the plays waiting for their answers on it."""

    kind = "play"

    def __init__(self, stub: spb_grpc.SessionServiceAsyncStub, index: int) -> None:
        self.pending: dict[int, asyncio.Future[spb.PlayManyResponse]] = {}
        super().__init__(stub.PlayMany, index)

    def _on_message(self, answer: spb.PlayManyResponse) -> None:
        future = self.pending.pop(answer.call_id, None)
        if future is not None and not future.done():  # None: that play timed out meanwhile
            future.set_result(answer)

    def _fail(self, error: grpc.aio.AioRpcError) -> None:
        if self.pending:
            log.info(
                "shared play stream ended", stream=self.index, plays=len(self.pending), code=error.code().name
            )
        for future in self.pending.values():
            if not future.done():
                future.set_exception(error)
        self.pending.clear()

    def send(self, call_id: int, request: spb.PlayRequest, lang: str) -> asyncio.Future[spb.PlayManyResponse]:
        future: asyncio.Future[spb.PlayManyResponse] = asyncio.get_running_loop().create_future()
        self.pending[call_id] = future
        message = spb.PlayManyRequest(
            call_id=call_id, play=request, request_id=request_id(), accept_language=lang
        )
        self.requests.put_nowait(message)
        return future


class PlayRelay(_Pool[_PlayCall]):
    """``streams`` shared PlayMany calls to the session, opened on first use and after a break.

    ``retries`` counts the plays sent again because the call carrying them broke.
    """

    def __init__(
        self, stub: spb_grpc.SessionServiceAsyncStub, streams: int = 2, retries: Counter | None = None
    ) -> None:
        super().__init__(lambda index: _PlayCall(stub, index), streams)
        self.retries = retries

    async def play(
        self, request: spb.PlayRequest, lang: str, timeout: float | None = None
    ) -> spb.PlayResponse:
        """Like ``Play(request, timeout=timeout)`` with ``accept-language: lang``, over a shared call.

        The current request id (:func:`~ninetynine.common.context.request_id`) goes with the play.
        """
        room_id = request.token.partition(".")[0]
        try:
            async with asyncio.timeout(timeout):
                for attempt in range(1, RETRY_MAX_ATTEMPTS + 1):
                    try:
                        answer = await self._send(room_id, request, lang)
                        break
                    except grpc.aio.AioRpcError as broken:  # the call broke: the session gave no answer
                        if self.closing or broken.code() not in _RETRY_CODES or attempt == RETRY_MAX_ATTEMPTS:
                            raise
                        log.info(
                            "play retried on a new shared stream",
                            room_id=room_id[:16],
                            client_seq=request.client_seq,
                            code=broken.code().name,
                            attempt=attempt + 1,
                        )
                        if self.retries is not None:
                            self.retries.inc()
                        # A replica that just died may still look connected for a moment: the next
                        # call could land on it again, so give the channel time to notice.
                        await asyncio.sleep(_RESEND_PAUSE_S * attempt)
        except TimeoutError:
            raise _error(grpc.StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded") from None
        if answer.WhichOneof("result") == "played":
            return answer.played
        failure = answer.failure
        raise _error(
            _CODES.get(failure.code, grpc.StatusCode.UNKNOWN), failure.message, failure.status_details
        )

    async def _send(self, room_id: str, request: spb.PlayRequest, lang: str) -> spb.PlayManyResponse:
        """The session's answer to one sending of the play; the call's error if the call breaks first.

        A call that broke is marked ``broken``, so a second sending opens a new one.
        """
        call = self._call_for(room_id)
        call_id = next(self._ids)
        future = call.send(call_id, request, lang)
        try:
            return await future
        finally:
            call.pending.pop(call_id, None)
