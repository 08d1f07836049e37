"""PlayMany: many Play calls carried by one gRPC stream.

A unary ``Play`` call per move would cost a gateway playing for thousands of clients more; on this
stack the unary-call machinery costs more CPU on both ends than a message on a stream that is
already open. Here each request of a PlayMany call runs :func:`play` (what the unary Play runs) in
its own task, so the plays of different rooms go on concurrently, and each answer is written as
soon as it is ready, tagged with the request's ``call_id``: answers may overtake each other. A
play sent with ``answer_on_room_stream`` that is applied as a new move gets no answer here: the
move's last event carries it (``RoomEvent.play_answer``) to a caller that follows the room anyway,
one message less per move.

Every play is still its own request: it runs in its own request scope (the request id and
language its message carries, the stream's ``accept-language`` when it carries none) and gets
one canonical ``rpc`` line and one sample in the RPC histogram, under the method name
:data:`PLAY_METHOD` (``PlayMany/Play``; ``method=~"(.*/)?Play"`` matches it and the unary
``/ninetynine.session.v1.SessionService/Play`` alike). A refusal is answered with the status and
the one ``ErrorInfo`` the unary Play would have failed with, in the play's language, and counted
in the refusals by reason; an unexpected exception is logged with its traceback and answered
INTERNAL. A request the stream cannot take (no ``call_id``, no play) is refused the same way and
the stream goes on; bytes that do not parse end the call (MALFORMED_REQUEST), as on SubscribeMany.

When the caller half-closes, the plays still running are answered, then the call ends. When the
call itself goes away (the caller cancelled, the connection broke) the plays still running finish
anyway and their answers are dropped: a move is either durable or not, and the caller's resend of
the same ``client_seq`` gets the first outcome back. When the server shuts down, the call is
drained (:mod:`ninetynine.session.draining`): it stops reading plays, answers those still running,
then ends as if the caller had half-closed, so the caller sends its next plays to another replica
at once instead of at the end of the grace period. The call sends no heartbeats: it holds no
state worth reclaiming, and the channels' keepalive notices a vanished peer.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterable, AsyncIterator, Callable

import grpc
from google.rpc import status_pb2

from ninetynine.common.context import (
    ACCEPT_LANGUAGE_HEADER,
    bind_rpc_fields,
    close_scope,
    open_scope,
    sanitize_request_id,
)
from ninetynine.common.errors import Lang, ServiceError, lang_from_metadata
from ninetynine.common.reasons import service_text
from ninetynine.session.draining import DrainableCall
from ninetynine.session.errors import session_error
from ninetynine.session.play import PlayOutcome
from ninetynine.session.service import RoomService
from ninetynine.session.v1 import session_service_pb2 as pb

# The method name of a play's canonical line and RPC histogram sample.
PLAY_METHOD = "PlayMany/Play"
# Plays one call may have running or answered-but-unsent; past it the call stops reading requests
# until answers go out (gRPC flow control then holds the caller back): memory stays bounded.
MAX_IN_FLIGHT = 4096


# CanonicalLogInterceptor.record: (method, code, seconds, fields, failure).
Recorder = Callable[[str, grpc.StatusCode, float, dict[str, object], BaseException | None], None]

# Plays whose call ended before they did: held here until they finish (the event loop keeps only
# weak references to tasks).
_ORPHANS: set[asyncio.Task[None]] = set()


async def play(rooms: RoomService, request: pb.PlayRequest) -> PlayOutcome:
    """One play, as the unary Play and PlayMany both run it; binds its canonical-line fields."""
    bind_rpc_fields(room_id=request.token.partition(".")[0][:16], client_seq=request.client_seq)
    expected = request.expected_move_seq if request.HasField("expected_move_seq") else None
    outcome = await rooms.plays.play(request.token, request.client_seq, request.action, expected)
    bind_rpc_fields(seq=outcome.response.seq, duplicate=outcome.response.duplicate)
    return outcome


def _failure(status: status_pb2.Status, details: bool = True) -> pb.PlayFailure:
    return pb.PlayFailure(
        code=status.code,
        message=status.message,
        status_details=status.SerializeToString() if details else b"",
    )


class _Stop:
    """Queued by the request reader once every play is answered: the writer ends the call."""

    def __init__(self, error: ServiceError | None) -> None:
        self.error = error

    def finish(self) -> None:
        if self.error is not None:
            raise self.error


class PlayMany(DrainableCall):
    """One PlayMany stream: its plays' tasks and the answers waiting to be written."""

    def __init__(self, rooms: RoomService, stream_lang: str, record: Recorder | None = None) -> None:
        super().__init__()
        self.rooms = rooms
        self.stream_lang = stream_lang
        self.record = record
        self.outbox: asyncio.Queue[pb.PlayManyResponse | _Stop] = asyncio.Queue()
        self.slots = asyncio.Semaphore(MAX_IN_FLIGHT)
        self.tasks: set[asyncio.Task[None]] = set()
        self.received = 0

    async def run(self, requests: AsyncIterable[pb.PlayManyRequest]) -> AsyncIterator[pb.PlayManyResponse]:
        """Yield the answers until the caller has half-closed (or the call was drained) and every
        play is answered.

        A request that does not parse ends the call with its error (after the plays before it).
        """
        reader = self._start_reader(self._read(requests))
        try:
            while True:
                item = await self.outbox.get()
                if isinstance(item, _Stop):
                    item.finish()
                    return
                yield item
                self.slots.release()
        finally:
            self._ended()
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)
            for task in self.tasks:  # the call is gone; the plays are not
                _ORPHANS.add(task)
                task.add_done_callback(_ORPHANS.discard)

    async def _read(self, requests: AsyncIterable[pb.PlayManyRequest]) -> None:
        error: ServiceError | None = None
        try:
            with self._reading_requests():
                if not self.draining:
                    async for request in requests:
                        await self.slots.acquire()
                        self.received += 1
                        task = asyncio.create_task(self._play(request))
                        self.tasks.add(task)
                        task.add_done_callback(self.tasks.discard)
        except ServiceError as err:  # a request that does not parse, already counted where it was parsed
            error = err
        except asyncio.CancelledError:
            if not self._drained():
                raise
        # Nothing more to read (half-closed, or drained): answer the plays still running, then end the call.
        while self.tasks:
            await asyncio.wait(set(self.tasks))
        await self.outbox.put(_Stop(error))

    async def _play(self, request: pb.PlayManyRequest) -> None:
        call_id = request.call_id
        lang_header = request.accept_language or self.stream_lang
        lang: Lang = lang_from_metadata(((ACCEPT_LANGUAGE_HEADER, lang_header),))
        scope, token = open_scope(
            sanitize_request_id(request.request_id or None), lang_header, {"method": PLAY_METHOD}
        )
        started = time.perf_counter()
        code = grpc.StatusCode.OK
        failure: BaseException | None = None
        try:
            try:
                if call_id == 0:
                    raise session_error("INVALID_CALL_ID")
                if not request.HasField("play"):
                    raise session_error("MISSING_PLAY", callId=call_id)
                outcome = await play(self.rooms, request.play)
                if request.answer_on_room_stream and outcome.on_room_stream:
                    bind_rpc_fields(answered="room_stream")
                    self.slots.release()  # no answer to write
                    return
                answer = pb.PlayManyResponse(call_id=call_id, played=outcome.response)
            except ServiceError as err:
                code = err.code
                self.rooms.metrics.refusals.labels(err.reason).inc()
                bind_rpc_fields(reason=err.reason)
                answer = pb.PlayManyResponse(call_id=call_id, failure=_failure(err.to_status(lang)))
            except asyncio.CancelledError:  # the server is stopping
                code = grpc.StatusCode.CANCELLED
                raise
            except Exception as exc:  # noqa: BLE001 - not a refusal: logged with its traceback, answered INTERNAL
                code, failure = grpc.StatusCode.INTERNAL, exc
                internal = status_pb2.Status(code=code.value[0], message=service_text("INTERNAL", lang))
                answer = pb.PlayManyResponse(call_id=call_id, failure=_failure(internal, details=False))
            self.outbox.put_nowait(answer)
        finally:
            if self.record is not None:
                # After the writer's turn (call_soon, as the interceptor does), in this play's scope.
                seconds = time.perf_counter() - started
                loop = asyncio.get_running_loop()
                loop.call_soon(self.record, PLAY_METHOD, code, seconds, scope.fields, failure)
            close_scope(token)
