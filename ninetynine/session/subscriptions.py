"""Subscriptions: a room's events after a seq, then live ones, each move followed by the viewer's view.

Unbatched (``Subscribe``), every event and every view is its own message. Batched (the gateways'
``Subscribe`` and every ``SubscribeMany`` subscription), each move arrives as one ``batch`` item
assembled from bytes that are already serialized (the stored events, the cached view): a
subscriber costs a concatenation, not a parse and a serialization of every event and view.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator

from ninetynine.common.errors import Lang
from ninetynine.common.wire import first_varint, length_delimited
from ninetynine.session import rooms
from ninetynine.session.errors import session_error
from ninetynine.session.presence import Presence
from ninetynine.session.roomcache import RoomCache, now_ms
from ninetynine.session.store.base import EventsTrimmed, InvalidStoreInput, StoredEvent, StoreUnavailable
from ninetynine.session.v1 import session_service_pb2 as pb
from ninetynine.session.views import Views

# Field numbers of a batched Subscribe message.
_BATCH = pb.SubscribeResponse.DESCRIPTOR.fields_by_name["batch"].number
_BATCH_EVENTS = pb.EventBatch.DESCRIPTOR.fields_by_name["events"].number
_BATCH_VIEW = pb.EventBatch.DESCRIPTOR.fields_by_name["view"].number
_BATCH_END = pb.RoomEvent.DESCRIPTOR.fields_by_name["batch_end"].number

# Stands for "nothing for a while" among a subscription's tail items.
_HEARTBEAT = object()


def batch_end(payload: bytes) -> bool:
    """``RoomEvent.batch_end`` of a serialized event, read without parsing the whole event."""
    return first_varint(payload, _BATCH_END) != 0


class Subscriptions:
    """The Subscribe streams of one replica (SubscribeMany runs one per subscription)."""

    def __init__(
        self,
        cache: RoomCache,
        views: Views,
        presence: Presence,
        *,
        heartbeat_s: float,
        stopping: asyncio.Event,
    ) -> None:
        self.cache = cache
        self.store = cache.store
        self.metrics = cache.metrics
        self.views = views
        self.presence = presence
        self.heartbeat_s = heartbeat_s
        self._stopping = stopping

    async def subscribe(
        self,
        token: str,
        after_seq: int,
        lang: Lang,
        *,
        batched: bool = False,
        heartbeats: bool = True,
        view_json: bool = False,
    ) -> AsyncIterator[pb.SubscribeResponse | bytes]:
        """The room's events after ``after_seq``, then live ones, for the token's holder.

        Batched, each move is yielded as the serialized bytes of its ``batch`` item, which the
        server's serializer passes through, with its view as client JSON when ``view_json``
        (:meth:`Views.update_bytes`). ``heartbeats=False`` leaves out the idle heartbeats
        (and the task that makes them possible): SubscribeMany keeps its shared call alive itself.
        Once the token stops acting for its seat or spectator place, the stream ends with
        INVALID_TOKEN (:meth:`_check_bound`).
        """
        room_id = rooms.token_room(token)
        loaded = await self.cache.load(room_id, fresh=True)
        caller = rooms.identify(loaded.doc, token)
        digest = rooms.token_digest(token)
        viewer = caller.player_id
        last = loaded.doc.last_seq
        oldest = await self.cache.store_call("oldest", self.store.oldest_event_seq(room_id))
        if after_seq > last or after_seq + 1 < oldest:
            # Unknown future or a gap we no longer hold: a snapshot replaces the client's state.
            yield pb.SubscribeResponse(snapshot=pb.Snapshot(seq=last, reason="GAP_TOO_OLD"))
            if batched:
                view = await self.views.update_bytes(room_id, last, viewer, lang, view_json=view_json)
                if view is not None:
                    yield length_delimited(_BATCH, length_delimited(_BATCH_VIEW, view))
            else:
                update = await self.views.update(room_id, last, viewer, lang)
                if update is not None:
                    yield update
            after_seq = last
        self.metrics.subscribers.inc()
        await self.presence.opened(room_id, viewer, digest)
        source = self._tail_items(room_id, after_seq, heartbeats)
        parts: list[bytes] = []  # the batched events of the move being assembled
        try:
            catching_up_to = last
            async for item in source:
                if item is _HEARTBEAT:
                    yield pb.SubscribeResponse(heartbeat=pb.Heartbeat(at_ms=now_ms()))
                    continue
                if item is None:
                    break
                if isinstance(item, EventsTrimmed):
                    yield pb.SubscribeResponse(snapshot=pb.Snapshot(seq=last, reason="GAP_TOO_OLD"))
                    break
                if isinstance(item, StoreUnavailable):
                    self.metrics.store_errors.labels(self.cache.store_kind, "tail").inc()
                    raise session_error("STORE_UNAVAILABLE")
                if isinstance(item, BaseException):
                    raise item
                assert isinstance(item, StoredEvent)
                stored = item
                if batched:
                    encoded = self.views.event_bytes(room_id, stored, viewer)
                    parts.append(length_delimited(_BATCH_EVENTS, encoded))
                    if not batch_end(stored.payload):
                        continue
                    await self._check_bound(room_id, stored.seq, caller, digest)
                    if stored.seq >= catching_up_to:
                        self.cache.fanned_out(room_id, stored.seq)
                        view = await self.views.update_bytes(
                            room_id, stored.seq, viewer, lang, view_json=view_json
                        )
                        if view is not None:
                            parts.append(length_delimited(_BATCH_VIEW, view))
                    batch, parts = b"".join(parts), []
                    yield length_delimited(_BATCH, batch)
                    continue
                await self._check_bound(room_id, stored.seq, caller, digest)
                event = self.views.filtered(stored, viewer)
                yield pb.SubscribeResponse(event=event)
                if event.batch_end and stored.seq >= catching_up_to:
                    self.cache.fanned_out(room_id, stored.seq)
                    update = await self.views.update(room_id, stored.seq, viewer, lang)
                    if update is not None:
                        yield update
        finally:
            await source.aclose()
            self.metrics.subscribers.dec()
            await self.presence.closed(room_id, viewer, digest, record=not self._stopping.is_set())

    async def _check_bound(self, room_id: str, seq: int, caller: rooms.Caller, digest: bytes) -> None:
        """End a subscription whose token no longer acts for its seat or spectator place.

        Checked against the room as of event ``seq`` or later before anything of that event goes
        out: leaving revokes a token for good, so a newer version answers for ``seq`` too, and
        every replica learns it from the room's own log (the leave's event, then its document).
        """
        loaded = await self.cache.current(room_id, seq)
        if not loaded.holds(caller, digest):
            raise session_error("INVALID_TOKEN", roomId=room_id)

    async def _tail_items(
        self, room_id: str, after_seq: int, heartbeats: bool
    ) -> AsyncGenerator[StoredEvent | BaseException | object | None, None]:
        """The store's tail as items: events, then ``None`` at its end or the error that ended it;
        with ``heartbeats``, ``_HEARTBEAT`` after each idle ``heartbeat_s``."""
        if not heartbeats:
            tail = self.store.tail(room_id, after_seq)
            try:
                async for stored in tail:
                    yield stored
                yield None
            except (EventsTrimmed, StoreUnavailable, InvalidStoreInput) as err:
                yield err
            finally:
                await tail.aclose()  # type: ignore[attr-defined]
            return
        # The tail is pumped by its own task so that an idle stream can send heartbeats: grpc.aio
        # does not always cancel an idle server stream whose client went away, but the next write
        # on it fails, which ends the subscription.
        queue: asyncio.Queue[StoredEvent | BaseException | None] = asyncio.Queue(maxsize=1000)
        pump = asyncio.create_task(self._pump(room_id, after_seq, queue))
        try:
            while True:
                if queue.empty():
                    try:
                        async with asyncio.timeout(self.heartbeat_s):
                            item = await queue.get()
                    except TimeoutError:
                        yield _HEARTBEAT
                        continue
                else:
                    item = queue.get_nowait()
                yield item
                if item is None or isinstance(item, BaseException):
                    return
        finally:
            pump.cancel()

    async def _pump(
        self, room_id: str, after_seq: int, queue: asyncio.Queue[StoredEvent | BaseException | None]
    ) -> None:
        """Copy the store's tail into ``queue``; errors travel as items, the end as ``None``."""
        tail = self.store.tail(room_id, after_seq)
        try:
            async for stored in tail:
                await queue.put(stored)
            await queue.put(None)
        except (EventsTrimmed, StoreUnavailable, InvalidStoreInput) as err:
            await queue.put(err)
        finally:
            await tail.aclose()  # type: ignore[attr-defined]
