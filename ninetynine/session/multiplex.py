"""SubscribeMany: many batched Subscribe streams carried by one gRPC stream.

With one Subscribe stream per client, a gateway with thousands of clients would turn a move in a
room of four into four gRPC messages out of the session and four into the gateway; on this stack
a stream message costs more CPU than building what it carries. Here each ``open`` runs the same
generator as Subscribe (:meth:`Subscriptions.subscribe`, batched) in its own task, and one writer
sends whatever the subscriptions produced meanwhile as a single ``SubscribeManyResponse``:
under load the four batches of a move (and those of other rooms) share a message.

Items are assembled from bytes (the subscription's serialized ``SubscribeResponse``), as the
batched Subscribe does. Each subscription keeps its own order; a subscription that fails ends
with a ``SubscriptionEnd`` carrying the status Subscribe would have ended with, and the stream
goes on. Subscriptions send no heartbeats of their own (nor need a task to make them); an idle
call gets an empty message every ``stream_heartbeat_s`` instead. When the server shuts down, the
call is drained (:mod:`ninetynine.session.draining`): it stops reading, sends what is queued and
ends, and the gateway resubscribes from each subscription's last seq on another replica at once
instead of at the end of the grace period.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterable, AsyncIterator

import grpc

from ninetynine.common.context import request_scope
from ninetynine.common.errors import Lang, ServiceError, lang_from_metadata
from ninetynine.common.logging import get_logger
from ninetynine.common.wire import length_delimited, varint
from ninetynine.session.draining import DrainableCall
from ninetynine.session.errors import session_error
from ninetynine.session.service import RoomService
from ninetynine.session.v1 import session_service_pb2 as pb

log = get_logger(__name__)

# Field numbers, for messages assembled from already-serialized parts.
_ITEMS = pb.SubscribeManyResponse.DESCRIPTOR.fields_by_name["items"].number
_ITEM_ID = pb.SubscriptionItem.DESCRIPTOR.fields_by_name["id"].number
_ITEM_RESPONSE = pb.SubscriptionItem.DESCRIPTOR.fields_by_name["response"].number
_ID_TAG = varint(_ITEM_ID << 3)  # wire type 0 (varint)

# Items waiting for the writer, all subscriptions together. When the consumer stops reading, the
# writer blocks, this fills, and every subscription's producer waits: memory stays bounded.
OUTBOX_ITEMS = 4096
# At most this many subscriptions on one stream (a gateway opens one per client it serves).
MAX_SUBSCRIPTIONS = 50_000


def _item(sub_id: int, response: bytes) -> bytes:
    """A serialized ``SubscriptionItem`` as it appears inside ``SubscribeManyResponse.items``."""
    return length_delimited(_ITEMS, _ID_TAG + varint(sub_id) + length_delimited(_ITEM_RESPONSE, response))


def _end_item(sub_id: int, end: pb.SubscriptionEnd) -> bytes:
    return length_delimited(_ITEMS, pb.SubscriptionItem(id=sub_id, end=end).SerializeToString())


def _end_of(err: ServiceError | None, lang: Lang) -> pb.SubscriptionEnd:
    if err is None:
        return pb.SubscriptionEnd(code=grpc.StatusCode.OK.value[0])
    status = err.to_status(lang)
    return pb.SubscriptionEnd(
        code=status.code, message=status.message, status_details=status.SerializeToString()
    )


class _Stop:
    """Queued by the request reader when the caller is done (or sent garbage): the writer stops."""

    def __init__(self, error: BaseException | None) -> None:
        self.error = error

    def finish(self) -> None:
        if self.error is not None:
            raise self.error


class _Refused(Exception):
    """An ``open`` the stream cannot take (bad id, too many): ends that subscription at once."""

    def __init__(self, error: ServiceError) -> None:
        self.error = error


class SubscribeMany(DrainableCall):
    """One SubscribeMany stream: its subscriptions' tasks and the shared outbox."""

    def __init__(self, rooms: RoomService, stream_lang: str) -> None:
        super().__init__()
        self.rooms = rooms
        self.metrics = rooms.metrics
        self.stream_lang = stream_lang
        self.outbox: asyncio.Queue[bytes | _Stop] = asyncio.Queue(maxsize=OUTBOX_ITEMS)
        self.tasks: dict[int, asyncio.Task[None]] = {}
        self.opened = 0

    async def run(self, requests: AsyncIterable[pb.SubscribeManyRequest]) -> AsyncIterator[bytes]:
        """Yield serialized ``SubscribeManyResponse`` messages until the caller hangs up.

        The stream ends when the caller half-closes (it is leaving), sends a request that does not
        parse (that error ends the call) or the call is drained; the subscriptions end with it.
        """
        reader = self._start_reader(self._read(requests))
        try:
            while True:
                try:
                    async with asyncio.timeout(self.rooms.stream_heartbeat_s):
                        first = await self.outbox.get()
                except TimeoutError:
                    # One heartbeat for the whole call instead of one per subscription: an empty
                    # message. grpc.aio may not cancel an idle stream whose peer went away, but
                    # this write then fails and ends the call.
                    yield b""
                    continue
                if isinstance(first, _Stop):
                    first.finish()
                    return
                parts = [first]
                # The subscribers of one room wake together: give the rest of them one turn of the
                # loop to add their items to this message.
                await asyncio.sleep(0)
                stop: _Stop | None = None
                while not self.outbox.empty():
                    item = self.outbox.get_nowait()
                    if isinstance(item, _Stop):
                        stop = item
                        break
                    parts.append(item)
                self.metrics.shared_messages.inc()
                self.metrics.shared_items.inc(len(parts))
                yield b"".join(parts)
                if stop is not None:
                    stop.finish()
                    return
        finally:
            self._ended()
            reader.cancel()
            tasks = list(self.tasks.values())
            for task in tasks:
                task.cancel()
            # Their cleanup (presence off) runs now, not whenever the loop gets to it.
            await asyncio.gather(reader, *tasks, return_exceptions=True)

    async def _read(self, requests: AsyncIterable[pb.SubscribeManyRequest]) -> None:
        error: BaseException | None = None
        try:
            with self._reading_requests():
                if not self.draining:
                    async for request in requests:
                        action = request.WhichOneof("action")
                        if action == "open":
                            self._open(request.open)
                        elif action == "close":
                            task = self.tasks.pop(request.close, None)
                            if task is not None:
                                task.cancel()
        except ServiceError as err:  # a request that does not parse
            error = err
        except asyncio.CancelledError:
            if not self._drained():
                raise
        await self.outbox.put(_Stop(error))

    def _open(self, spec: pb.OpenSubscription) -> None:
        sub_id = spec.id
        if sub_id in self.tasks:
            return  # a repeated open of a live id: the first one stands
        task = asyncio.create_task(self._subscription(spec))
        self.tasks[sub_id] = task
        self.opened += 1
        task.add_done_callback(lambda done: self._forget(sub_id, done))

    def _forget(self, sub_id: int, task: asyncio.Task[None]) -> None:
        if self.tasks.get(sub_id) is task:
            del self.tasks[sub_id]

    async def _subscription(self, spec: pb.OpenSubscription) -> None:
        sub_id = spec.id
        lang_header = spec.accept_language or self.stream_lang
        lang = lang_from_metadata((("accept-language", lang_header),))
        request = spec.request
        started = time.perf_counter()
        items = 0
        failure: ServiceError | None = None
        room_id = request.token.partition(".")[0][:16]
        with request_scope(
            spec.request_id or None,
            accept_language=lang_header,
            method="SubscribeMany/subscription",
            subscription=sub_id,
            room_id=room_id,
        ):
            try:
                if sub_id == 0 or len(self.tasks) > MAX_SUBSCRIPTIONS:
                    raise _Refused(
                        session_error("TOO_MANY_SUBSCRIPTIONS", limit=MAX_SUBSCRIPTIONS)
                        if sub_id
                        else session_error("INVALID_SUBSCRIPTION", subscription=sub_id)
                    )
                async for response in self.rooms.subscriptions.subscribe(
                    request.token,
                    request.after_seq,
                    lang,
                    batched=True,
                    heartbeats=False,
                    view_json=request.view_json,
                ):
                    data = response if isinstance(response, bytes) else response.SerializeToString()
                    await self.outbox.put(_item(sub_id, data))
                    items += 1
            except _Refused as refused:
                failure = refused.error
            except ServiceError as err:
                failure = err
            except asyncio.CancelledError:
                log.info("subscription closed", items=items, seconds=round(time.perf_counter() - started, 3))
                raise
            log.info(
                "subscription ended",
                items=items,
                code=failure.code.name if failure else "OK",
                reason=failure.reason if failure else "",
                seconds=round(time.perf_counter() - started, 3),
            )
            await self.outbox.put(_end_item(sub_id, _end_of(failure, lang)))
