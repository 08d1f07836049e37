"""Many requests over a few shared bidirectional gRPC calls, each answered by a tagged message.

A unary call per request costs both ends more CPU than a message on a call that is already open
(``bench grpc_wake``), so a service that makes many small calls to another (the gateway's plays to
the session, the session's moves to the engine) keeps a few streams open and tags each request
with a ``call_id`` that its answer carries back.

* :class:`SharedCall` is one such call: requests queued by many callers, answers read by one task.
  Once the call ends, for whatever reason, it is ``broken`` and everyone still waiting on it gets
  the ending status; the pool opens a new call for the next caller.
* :class:`CallPool` keeps ``streams`` of them, chosen by a key (a room id) so that one key's traffic
  keeps to one call, and with several replicas behind round robin, to one replica.
* :class:`AnsweringPool` sends one request and waits for its answer, sending it again on a new call
  when the call carrying it breaks before the answer, up to
  :data:`~ninetynine.common.grpcclient.RETRY_MAX_ATTEMPTS` sendings within one timeout. Only for
  requests that are safe to repeat (plays idempotent by ``client_seq``, a stateless engine's moves).
* :func:`failure_error` turns an in-band failure (``code``, ``message``, ``status_details``) into
  the ``grpc.aio.AioRpcError`` the unary call would have raised, so callers keep one error path.
"""

from __future__ import annotations

import asyncio
import itertools
import zlib
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable
from typing import Any, Generic, Protocol, TypeVar

import grpc
import grpc.aio
from prometheus_client import Counter

from ninetynine.common.context import request_scope
from ninetynine.common.errors import STATUS_DETAILS_KEY
from ninetynine.common.grpcclient import RETRY_MAX_ATTEMPTS
from ninetynine.common.logging import get_logger

__all__ = [
    "RETRY_CODES",
    "AnswerLost",
    "AnsweredCall",
    "AnsweringPool",
    "CallPool",
    "SharedCall",
    "failure_error",
    "rpc_error",
]

log = get_logger(__name__)

_Req = TypeVar("_Req")
_Resp = TypeVar("_Resp")
_C = TypeVar("_C", bound="SharedCall[Any, Any]")

CODES = {code.value[0]: code for code in grpc.StatusCode}
# How a shared call that the server ended or cut off fails its requests (the caller's own closing
# is CANCELLED too, but then nothing is resent: see ``CallPool.closing``). A replica killed
# mid-stream can surface as INTERNAL (the stream reset under it), seen in the double-kill fault test.
RETRY_CODES = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED, grpc.StatusCode.INTERNAL})
RESEND_PAUSE_S = 0.05


def rpc_error(code: grpc.StatusCode, details: str, status_details: bytes = b"") -> grpc.aio.AioRpcError:
    """The error a unary call ending with this status raises (``status_details``: the trailer)."""
    trailers = grpc.aio.Metadata()
    if status_details:
        trailers.add(STATUS_DETAILS_KEY, status_details)
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), trailers, details, None)


class Failure(Protocol):
    """An in-band failure message (``PlayFailure``, ``CallFailure``, ``SubscriptionEnd``)."""

    @property
    def code(self) -> int: ...
    @property
    def message(self) -> str: ...
    @property
    def status_details(self) -> bytes: ...


def failure_error(failure: Failure) -> grpc.aio.AioRpcError:
    return rpc_error(
        CODES.get(failure.code, grpc.StatusCode.UNKNOWN), failure.message, failure.status_details
    )


class SharedCall(ABC, Generic[_Req, _Resp]):
    """One shared bidirectional call: requests queued by many callers, answers read by one task.

    The call outlives the caller that happens to open it, so it gets a request id of its own (the
    server's line for the call is then not taken for one of that caller's).
    """

    kind = ""  # log lines and the call's request-scope field

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
            error = rpc_error(grpc.StatusCode.UNAVAILABLE, f"the server ended the shared {self.kind} stream")
        except grpc.aio.AioRpcError as exc:
            error = exc
        except asyncio.CancelledError:
            error = rpc_error(grpc.StatusCode.CANCELLED, "the caller is closing")
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


class CallPool(Generic[_C]):
    """``streams`` shared calls opened by ``open_call(index)``, chosen by key, reopened after a break."""

    def __init__(self, open_call: Callable[[int], _C], streams: int) -> None:
        if streams < 1:
            raise ValueError("a pool needs at least one stream")
        self._open_call = open_call
        self.calls: list[_C | None] = [None] * streams
        self._ids = itertools.count(1)
        self.closing = False

    def _call_for(self, key: str) -> _C:
        index = zlib.crc32(key.encode()) % len(self.calls)
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


class AnswerLost(Exception):
    """Set on an ``answered`` future whose other way can no longer bring the answer.

    :meth:`AnsweringPool.ask` then sends the request again, asking for the answer on the call.
    """


class _Answer(Protocol):
    @property
    def call_id(self) -> int: ...


_A = TypeVar("_A", bound=_Answer)


class AnsweredCall(SharedCall[_Req, _A]):
    """A shared call whose every request gets one answer carrying the request's ``call_id``."""

    def __init__(self, method: Callable[[AsyncIterator[_Req]], Any], index: int) -> None:
        self.pending: dict[int, asyncio.Future[_A]] = {}
        super().__init__(method, index)

    def _on_message(self, answer: _A) -> None:
        future = self.pending.pop(answer.call_id, None)
        if future is not None and not future.done():  # None: that request timed out meanwhile
            future.set_result(answer)

    def _fail(self, error: grpc.aio.AioRpcError) -> None:
        if self.pending:
            log.info(
                "shared stream ended",
                kind=self.kind,
                stream=self.index,
                waiting=len(self.pending),
                code=error.code().name,
            )
        for future in self.pending.values():
            if not future.done():
                future.set_exception(error)
        self.pending.clear()

    def send(self, call_id: int, request: _Req) -> asyncio.Future[_A]:
        future: asyncio.Future[_A] = asyncio.get_running_loop().create_future()
        self.pending[call_id] = future
        self.requests.put_nowait(request)
        return future


class AnsweringPool(CallPool[AnsweredCall[_Req, _A]]):
    """Requests sent on ``streams`` shared calls, each resent on a new call if its call breaks.

    ``retries`` counts the requests sent again because the call carrying them broke.
    """

    def __init__(
        self,
        open_call: Callable[[int], AnsweredCall[_Req, _A]],
        streams: int,
        retries: Counter | None = None,
    ) -> None:
        super().__init__(open_call, streams)
        self.retries = retries

    async def ask(
        self,
        key: str,
        make_request: Callable[[int, bool], _Req],
        timeout: float | None,
        answered: asyncio.Future[_A] | None = None,
    ) -> _A:
        """The answer to ``make_request(call_id, elsewhere)``, sent on ``key``'s call and resent on a
        new one when a call breaks first; DEADLINE_EXCEEDED after ``timeout`` seconds in all.

        ``answered``: the answer when it comes another way; ``elsewhere`` tells the request so (the
        server then sends none on the call). When that way fails with :class:`AnswerLost`, the
        request is sent again with ``elsewhere`` False and answered on the call: only for requests
        whose repeat gets the first one's answer (plays, by ``client_seq``).
        """
        try:
            async with asyncio.timeout(timeout):
                attempt = 1  # sendings that a broken call cost; asking on the call is not one
                while True:
                    call = self._call_for(key)
                    call_id = next(self._ids)
                    future = call.send(call_id, make_request(call_id, answered is not None))
                    try:
                        if answered is None:
                            return await future
                        await asyncio.wait((future, answered), return_when=asyncio.FIRST_COMPLETED)
                        if future.done() and not answered.done():
                            return future.result()
                        if future.done() and not future.cancelled():
                            future.exception()  # a break after the answer is no news
                        if isinstance(answered.exception(), AnswerLost):
                            log.info("answer asked for on the call", kind=call.kind, key=key[:16])
                            answered = None
                            continue
                        return answered.result()
                    except grpc.aio.AioRpcError as broken:  # the call broke: no answer came
                        if self.closing or broken.code() not in RETRY_CODES or attempt >= RETRY_MAX_ATTEMPTS:
                            raise
                        log.info(
                            "request resent on a new shared stream",
                            kind=call.kind,
                            key=key[:16],
                            code=broken.code().name,
                            attempt=attempt + 1,
                        )
                        if self.retries is not None:
                            self.retries.inc()
                        # A replica that just died may still look connected for a moment: the next
                        # call could land on it again, so give the channel time to notice.
                        await asyncio.sleep(RESEND_PAUSE_S * attempt)
                        attempt += 1
                    finally:
                        call.pending.pop(call_id, None)
        except TimeoutError:
            raise rpc_error(grpc.StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded") from None
