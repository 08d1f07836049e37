"""The gateway's room streams over a few shared SubscribeMany calls instead of one Subscribe each.

Every bound client follows its room. With one ``Subscribe`` per client, a move in a room of four
would be four gRPC messages into this process (and four out of the session); here the clients' room
streams share ``streams`` SubscribeMany calls, chosen by room so that the subscribers of one room
share a call and the session can put a whole move's batches in one message.

:meth:`SessionRelay.subscribe` opens a room stream on a shared call: the call's reader hands each
``SubscribeResponse`` of it to the subscriber's callback as the message comes in (no queue and no
task per subscriber between the socket and the client's outbox), and the :class:`Subscription`'s
``ended`` fails with the ``grpc.aio.AioRpcError`` carrying the status (and the ``ErrorInfo``
trailer) that Subscribe would have failed with, so the caller's retry and error paths are
Subscribe's. When a shared call breaks (a session replica went away), each of its subscriptions
fails with that call's status and its caller resubscribes from its last seq, on a new call (with
several replicas behind round-robin, a new call may land on another replica). A callback that
raises ends its own subscription (UNKNOWN), never the call the others share.

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
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc
import grpc.aio
from google.protobuf.message import Message
from prometheus_client import Counter

from ninetynine.common.context import request_id
from ninetynine.common.frames import frame_call, method_path
from ninetynine.common.logging import get_logger
from ninetynine.common.sharedcalls import (
    AnsweredCall,
    AnsweringPool,
    CallPool,
    SharedCall,
    failure_error,
    rpc_error,
)
from ninetynine.session.v1 import session_service_pb2 as spb

log = get_logger(__name__)

# What opens one shared call: a stub's stream-stream method, or a frames call (same contract).
SubscribeManyMethod = Callable[[AsyncIterator[spb.SubscribeManyRequest]], Any]
PlayManyMethod = Callable[[AsyncIterator[spb.PlayManyRequest]], Any]
# Takes each response of one room stream, in order, inside the shared call's reader.
OnResponse = Callable[[spb.SubscribeResponse], None]


_SERVICE = spb.DESCRIPTOR.services_by_name["SessionService"]
SUBSCRIBE_MANY = method_path(_SERVICE, "SubscribeMany")
PLAY_MANY = method_path(_SERVICE, "PlayMany")


def frames_calls(path: str) -> tuple[SubscribeManyMethod, PlayManyMethod]:
    """SubscribeMany and PlayMany over the session's frames socket at ``path`` (a session on this
    machine, :mod:`ninetynine.session.frames`): the stub's two methods, for a relay's ``method``."""
    return (
        frame_call(path, SUBSCRIBE_MANY, _serialize, spb.SubscribeManyResponse.FromString),
        frame_call(path, PLAY_MANY, _serialize, spb.PlayManyResponse.FromString),
    )


def _serialize(message: Message) -> bytes:
    return message.SerializeToString()


class Subscription:
    """One room stream on a shared call.

    Its responses go to ``on_response`` as the call reads them; ``ended`` is done when the stream
    ends: with None when the session ended it with OK, else with the error Subscribe would have
    raised. :meth:`close` ends it from this side (nothing more is handed over, ``ended`` stays
    pending).
    """

    def __init__(self, call: _SharedCall, sub_id: int, on_response: OnResponse) -> None:
        self.call = call
        self.id = sub_id
        self.on_response = on_response
        self.responses = 0
        self.ended: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def end(self, error: grpc.aio.AioRpcError | None) -> None:
        if self.ended.done():
            return
        if error is None:
            self.ended.set_result(None)
        else:
            self.ended.set_exception(error)

    def close(self) -> None:
        self.call.close(self.id)


class _SharedCall(SharedCall[spb.SubscribeManyRequest, spb.SubscribeManyResponse]):
    """One SubscribeMany call and the subscriptions it carries."""

    kind = "room"

    def __init__(self, method: SubscribeManyMethod, index: int) -> None:
        self.subscriptions: dict[int, Subscription] = {}
        super().__init__(method, index)

    def _on_message(self, message: spb.SubscribeManyResponse) -> None:
        subscriptions = self.subscriptions
        for item in message.items:
            subscription = subscriptions.get(item.id)
            if subscription is None:
                continue  # closed meanwhile
            if item.WhichOneof("item") == "response":
                subscription.responses += 1
                try:
                    subscription.on_response(item.response)
                except Exception:
                    log.exception("room stream subscriber failed", stream=self.index, subscription=item.id)
                    self.close(item.id)
                    subscription.end(
                        rpc_error(grpc.StatusCode.UNKNOWN, "the room stream's subscriber failed")
                    )
                continue
            del subscriptions[item.id]
            end = item.end
            subscription.end(None if end.code == grpc.StatusCode.OK.value[0] else failure_error(end))

    def _fail(self, error: grpc.aio.AioRpcError) -> None:
        if self.subscriptions:
            log.info(
                "shared room stream ended",
                stream=self.index,
                subscriptions=len(self.subscriptions),
                code=error.code().name,
            )
        for subscription in self.subscriptions.values():
            subscription.end(error)
        self.subscriptions.clear()

    def open(
        self, sub_id: int, request: spb.SubscribeRequest, lang: str, on_response: OnResponse
    ) -> Subscription:
        subscription = self.subscriptions[sub_id] = Subscription(self, sub_id, on_response)
        spec = spb.OpenSubscription(id=sub_id, request=request, accept_language=lang, request_id=request_id())
        self.requests.put_nowait(spb.SubscribeManyRequest(open=spec))
        return subscription

    def close(self, sub_id: int) -> None:
        if self.subscriptions.pop(sub_id, None) is not None and not self.broken:
            self.requests.put_nowait(spb.SubscribeManyRequest(close=sub_id))


class SessionRelay(CallPool[_SharedCall]):
    """``streams`` shared SubscribeMany calls to the session, opened on first use and after a break.

    ``method`` opens one: the stub's ``SubscribeMany``, or the session's frames socket
    (:func:`frames_calls`).
    """

    def __init__(self, method: SubscribeManyMethod, streams: int = 2) -> None:
        super().__init__(lambda index: _SharedCall(method, index), streams)

    def subscribe(self, request: spb.SubscribeRequest, lang: str, on_response: OnResponse) -> Subscription:
        """Like ``Subscribe(request)`` with ``accept-language: lang``, over a shared call: each
        response goes to ``on_response``; the caller closes the subscription when done with it."""
        call = self._call_for(request.token.partition(".")[0])
        return call.open(next(self._ids), request, lang, on_response)


class _PlayCall(AnsweredCall[spb.PlayManyRequest, spb.PlayManyResponse]):
    """One PlayMany call and the plays waiting for their answers on it."""

    kind = "play"

    def __init__(self, method: PlayManyMethod, index: int) -> None:
        super().__init__(method, index)


class PlayRelay(AnsweringPool[spb.PlayManyRequest, spb.PlayManyResponse]):
    """``streams`` shared PlayMany calls to the session, opened on first use and after a break.

    ``method`` opens one (the stub's ``PlayMany``, or the session's frames socket); ``retries``
    counts the plays sent again because the call carrying them broke.
    """

    def __init__(self, method: PlayManyMethod, streams: int = 2, retries: Counter | None = None) -> None:
        super().__init__(lambda index: _PlayCall(method, index), streams, retries)

    async def play(
        self,
        request: spb.PlayRequest,
        lang: str,
        timeout: float | None = None,
        answered: asyncio.Future[spb.PlayManyResponse] | None = None,
    ) -> spb.PlayResponse:
        """Like ``Play(request, timeout=timeout)`` with ``accept-language: lang``, over a shared call.

        The current request id (:func:`~ninetynine.common.context.request_id`) goes with the play.
        ``answered``: set by the caller's room stream when the move's last event carries this play's
        answer; the session then sends no answer of its own for an applied play. When the stream
        fails it with :class:`~ninetynine.common.sharedcalls.AnswerLost` (it skipped events, or
        ended), the play is sent again without that request and its repeat is answered on the call.
        """
        rid = request_id()

        def message(call_id: int, on_room_stream: bool) -> spb.PlayManyRequest:
            return spb.PlayManyRequest(
                call_id=call_id,
                play=request,
                request_id=rid,
                accept_language=lang,
                answer_on_room_stream=on_room_stream,
            )

        answer = await self.ask(request.token.partition(".")[0], message, timeout, answered)
        if answer.WhichOneof("result") == "played":
            return answer.played
        raise failure_error(answer.failure)
