"""The room stream of a bound connection: follow the room, push its events, rooms and views.

The stream runs over the gateway's shared SubscribeMany calls (:mod:`ninetynine.gateway.relay`).
When it breaks it is taken up again after the highest ``seq`` delivered, so the client sees each
event once; a room update goes out only when the room changed (its seq and deadline aside). A
refusal that will not change on retry (the token was given up, the room is gone...) is sent to the
client and ends the stream.

A play of this connection's that the session applies is answered on the room stream: the move's
last event carries the answer (``RoomEvent.play_answer``), and the follower sends the mover's
``played`` before the move's events, as a direct answer would have come, and hands the answer to the
waiting play (:meth:`RoomFollower.expect_answer`). When the stream can no longer bring an answer (a
snapshot replaced events it skipped, or the stream ended), the waiting plays are told so
(:class:`~ninetynine.common.sharedcalls.AnswerLost`) and get their answers on their own calls.
"""

from __future__ import annotations

import asyncio
import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING

import grpc

from ninetynine.common.logging import get_logger
from ninetynine.common.sharedcalls import AnswerLost
from ninetynine.engine.errors import from_rpc_error
from ninetynine.gateway.binding import Binding
from ninetynine.gateway.convert import JsonId, view_push, view_text
from ninetynine.gateway.outbox import Outgoing
from ninetynine.gateway.tasks import reap
from ninetynine.gateway.v1 import gateway_service_pb2 as gw
from ninetynine.session.v1 import session_service_pb2 as spb

if TYPE_CHECKING:
    from ninetynine.gateway.connection import Connection

__all__ = ["RoomFollower"]

log = get_logger("gateway.messages")

# Refusals after which a subscription is not retried.
_FINAL_SUBSCRIBE_CODES = frozenset(
    {
        grpc.StatusCode.UNAUTHENTICATED,
        grpc.StatusCode.NOT_FOUND,
        grpc.StatusCode.PERMISSION_DENIED,
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.FAILED_PRECONDITION,
    }
)


@dataclass(slots=True)
class ExpectedAnswer:
    """A play of this connection's waiting for its answer on the room stream."""

    # The answer once the follower sent the client `played`; AnswerLost when it never will.
    future: asyncio.Future[spb.PlayManyResponse]
    reply_id: JsonId | None
    received: float

    @property
    def sent(self) -> bool:
        """Whether the follower sent `played` for this play."""
        future = self.future
        return future.done() and not future.cancelled() and future.exception() is None


class RoomFollower:
    """One connection's room stream and what it remembers of it."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.pump: asyncio.Task[None] | None = None
        # The room stream's state: highest seq delivered, last room sent.
        self.last_seq = 0
        self._last_room: spb.Room | None = None
        self._finished = False
        self._expected: dict[int, ExpectedAnswer] = {}  # by client_seq

    def expect_answer(
        self, client_seq: int, reply_id: JsonId | None, received: float
    ) -> ExpectedAnswer | None:
        """Watch the room stream for the answer to this connection's play ``client_seq``.

        None when a play of that client_seq already waits (the repeat then gets its own answer).
        The caller calls :meth:`forget_answer` once the play is answered, one way or the other.
        """
        if client_seq in self._expected:
            return None
        future: asyncio.Future[spb.PlayManyResponse] = asyncio.get_running_loop().create_future()
        expected = self._expected[client_seq] = ExpectedAnswer(future, reply_id, received)
        return expected

    def forget_answer(self, client_seq: int) -> None:
        self._expected.pop(client_seq, None)

    def _lose_answers(self) -> None:
        """Tell every waiting play that this stream will not bring its answer."""
        for expected in self._expected.values():
            if not expected.future.done():
                expected.future.set_exception(AnswerLost())

    def follow(self, binding: Binding) -> None:
        """Follow ``binding``'s room from :attr:`last_seq` on."""
        self.pump = asyncio.create_task(self._pump_room(binding))

    async def stop(self) -> None:
        """End the stream (the connection left its room)."""
        if self.pump is not None:
            self.pump.cancel()
            await reap(self.pump)

    def forget(self) -> None:
        """The connection is in no room any more: the next binding starts afresh."""
        self.pump = None
        self._last_room = None
        self.last_seq = 0
        self._finished = False  # a next room's stream is followed again

    def send_room(self, room: spb.Room, reply_id: JsonId | None, *, force: bool = False) -> None:
        comparable = spb.Room()
        comparable.CopyFrom(room)
        comparable.last_seq = 0
        comparable.deadline_ms = 0
        if room.phase == spb.ROOM_PHASE_FINISHED:
            self._finished = True
        if not force and comparable == self._last_room:
            return
        self._last_room = comparable
        self.conn.deliver(Outgoing(gw.ServerMessage(room=gw.RoomUpdate(room=room)), reply_id))

    async def _pump_room(self, binding: Binding) -> None:
        """Follow the room over the shared calls, resubscribing after ``last_seq`` when the stream breaks."""
        try:
            await self._follow(binding)
        finally:
            self._lose_answers()

    async def _follow(self, binding: Binding) -> None:
        conn = self.conn
        backoff = 0.2
        while not conn.closing and conn.binding is binding:
            request = spb.SubscribeRequest(
                token=binding.token,
                after_seq=self.last_seq,
                batched=True,
                view_json=conn.transport.json_text,
            )
            subscription = conn.relay.subscribe(
                request, conn.lang, functools.partial(self._on_stream_item, binding)
            )
            try:
                await subscription.ended
                if self._finished:
                    return
            except grpc.RpcError as exc:
                code = exc.code() if hasattr(exc, "code") else grpc.StatusCode.UNKNOWN
                if code in _FINAL_SUBSCRIBE_CODES:
                    if binding.leaving:
                        return  # this connection's own leaveRoom: `left` answers it
                    err = from_rpc_error(exc, default_domain="gateway.ninetynine")
                    conn.send_service_error(err, None)
                    if err.reason == "INVALID_TOKEN" and conn.binding is binding:
                        # The seat was given up (on another connection): this one is no longer in
                        # the room and may bind again.
                        conn.unbind()
                    return
                log.info(
                    "subscribe broken; retrying",
                    room_id=binding.room_id,
                    code=code.name,
                    after_seq=self.last_seq,
                )
            finally:
                # Closed when this task ends, not when the garbage collector gets to it: the session
                # marks the seat disconnected once its subscription is gone.
                subscription.close()
            if subscription.responses:
                backoff = 0.2
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, 5.0)

    def _on_stream_item(self, binding: Binding, item: spb.SubscribeResponse) -> None:
        """One response of the room stream: what it brings goes to the client in one outbox turn."""
        which = item.WhichOneof("item")
        if which == "batch":
            if self._expected and item.batch.events:
                self._answer(binding, item.batch.events[-1])
            for ev in item.batch.events:
                self._on_event(ev)
            if item.batch.HasField("view"):
                self._on_view(item.batch.view)
        elif which == "event":
            self._on_event(item.event)
        elif which == "view":
            self._on_view(item.view)
        elif which == "snapshot":
            self.last_seq = max(self.last_seq, item.snapshot.seq)
            self._lose_answers()  # the answer of a play applied in the skipped events is not coming
            self.conn.deliver(Outgoing(gw.ServerMessage(snapshot=item.snapshot)))

    def _answer(self, binding: Binding, last: spb.RoomEvent) -> None:
        """Answer this connection's play when ``last`` (a move's last event) carries its answer."""
        if not last.HasField("play_answer") or last.play_answer.player_id != binding.player_id:
            return
        response = last.play_answer.response
        expected = self._expected.get(response.client_seq)
        if expected is None or expected.future.done():
            return
        played = gw.Played(client_seq=response.client_seq, seq=response.seq)
        self.conn.deliver(
            Outgoing(gw.ServerMessage(played=played), expected.reply_id, play_received=expected.received)
        )
        expected.future.set_result(spb.PlayManyResponse(played=response))

    def _on_event(self, ev: spb.RoomEvent) -> None:
        if ev.seq <= self.last_seq:
            return  # already delivered before a resubscribe
        self.last_seq = ev.seq
        kind = ev.WhichOneof("kind")
        if kind == "game":
            if ev.game.HasField("game_finished") or ev.game.HasField("trick_game_finished"):
                self._finished = True
            # The session stamps how each move was made on its card_played event.
            self.conn.deliver(
                Outgoing(gw.ServerMessage(event=gw.EventPush(seq=ev.seq, event=ev.game, source=ev.source)))
            )

    def _on_view(self, update: spb.ViewUpdate) -> None:
        conn = self.conn
        if update.HasField("room"):  # the session's always do; sent when it changed
            self.send_room(update.room, None)
        text = update.view_json or update.trick_json
        if text:
            # The session wrote the view as the client's JSON: it goes out as it came.
            field = "view" if update.view_json else "trick"
            without_view = gw.ServerMessage(view=gw.ViewPush(seq=update.seq))
            conn.deliver(Outgoing(without_view, text=view_text(without_view, field, text)))
            return
        push = view_push(update)
        if push is not None:
            conn.deliver(Outgoing(gw.ServerMessage(view=push)))
