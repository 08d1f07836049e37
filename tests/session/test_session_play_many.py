"""PlayMany: plays carried on one stream answer exactly what unary Play calls would.

The same outcomes (a duplicate gets the first outcome back, whichever way either was sent), the
same refusals (code, Korean or English message, the one ErrorInfo), answers of concurrent plays
from several rooms tagged with the right call_id, and each play logged and observed as its own
request under the request id its message carried.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import grpc
import grpc.aio
import pytest
from google.rpc import error_details_pb2, status_pb2

from ninetynine.common.logging import configure_logging
from ninetynine.engine.v1 import events_pb2, game_pb2, view_pb2
from ninetynine.session.playmany import PLAY_METHOD
from ninetynine.session.store import StoredEvent
from ninetynine.session.v1 import session_service_pb2 as pb
from ninetynine.session.views import Views
from tests.common.conftest import LogCapture
from tests.session.conftest import Stack
from tests.session.helpers import ENGLISH, is_english, is_korean, sample

MakeStack = Callable[..., Awaitable[Stack]]
Failure = tuple[int, str, status_pb2.Status]


class Plays:
    """One PlayMany call: send plays under call ids, await each answer by its id."""

    def __init__(self, stub: object, metadata: tuple[tuple[str, str], ...] = ()) -> None:
        self.requests: asyncio.Queue[pb.PlayManyRequest | None] = asyncio.Queue()
        self.answers: dict[int, asyncio.Future[pb.PlayManyResponse]] = {}
        self.order: list[int] = []  # call ids in the order their answers arrived
        self.call = stub.PlayMany(self._requests(), metadata=metadata)  # type: ignore[attr-defined]
        self.reader = asyncio.create_task(self._read())

    async def _requests(self) -> AsyncIterator[pb.PlayManyRequest]:
        while (request := await self.requests.get()) is not None:
            yield request

    async def _read(self) -> None:
        async for answer in self.call:
            self.order.append(answer.call_id)
            self._future(answer.call_id).set_result(answer)

    def _future(self, call_id: int) -> asyncio.Future[pb.PlayManyResponse]:
        if call_id not in self.answers:
            self.answers[call_id] = asyncio.get_running_loop().create_future()
        return self.answers[call_id]

    def send(self, request: pb.PlayManyRequest) -> asyncio.Future[pb.PlayManyResponse]:
        future = self._future(request.call_id)
        self.requests.put_nowait(request)
        return future

    async def play(
        self, call_id: int, play: pb.PlayRequest, lang: str = "", request_id: str = ""
    ) -> pb.PlayManyResponse:
        request = pb.PlayManyRequest(call_id=call_id, play=play, accept_language=lang, request_id=request_id)
        async with asyncio.timeout(10):
            return await self.send(request)

    async def end(self) -> grpc.StatusCode:
        """Half-close; the call's final status once every answer is in."""
        self.requests.put_nowait(None)
        async with asyncio.timeout(10):
            await self.reader
            code: grpc.StatusCode = await self.call.code()
        return code

    def cancel(self) -> None:
        self.call.cancel()
        self.reader.cancel()


@pytest.fixture
async def plays() -> AsyncIterator[Callable[..., Plays]]:
    opened: list[Plays] = []

    def open_call(stack: Stack, metadata: tuple[tuple[str, str], ...] = ()) -> Plays:
        call = Plays(stack.stub, metadata)
        opened.append(call)
        return call

    yield open_call
    for call in opened:
        call.cancel()


@pytest.fixture
def logs() -> Iterator[LogCapture]:
    capture = LogCapture()
    configure_logging("session", json_logs=True, stream=capture)  # type: ignore[arg-type]
    yield capture
    configure_logging("session", json_logs=True)


async def _room(stack: Stack, seats: int = 2) -> tuple[str, list[str], str]:
    """A started room with human seats only: its id, the seat tokens and a spectator token."""
    a = await stack.stub.CreateRoom(pb.CreateRoomRequest(name="A", max_seats=seats))
    tokens = [a.seat_token]
    for i in range(seats - 1):
        joined = await stack.stub.JoinRoom(pb.JoinRoomRequest(room_id=a.room.room_id, name=f"P{i}"))
        tokens.append(joined.seat_token)
    spectator = await stack.stub.Spectate(pb.SpectateRequest(room_id=a.room.room_id))
    await stack.stub.StartGame(pb.StartGameRequest(token=a.seat_token))
    return a.room.room_id, tokens, spectator.spectator_token


async def _turn(stack: Stack, tokens: list[str]) -> tuple[str, view_pb2.GameView, str]:
    """Whose turn it is (token and view) and a seat that is not to move."""
    views = {t: (await stack.stub.GetView(pb.GetViewRequest(token=t))).view for t in tokens}
    mover = next(t for t, v in views.items() if v.my_turn)
    return mover, views[mover], next(t for t in tokens if t != mover)


async def _unary_failure(stack: Stack, request: pb.PlayRequest, english: bool) -> Failure:
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await stack.stub.Play(request, metadata=ENGLISH if english else ())
    err = refused.value
    trailers: Any = err.trailing_metadata() or ()
    details = [v for k, v in trailers if k == "grpc-status-details-bin"]
    assert len(details) == 1
    return err.code().value[0], err.details() or "", status_pb2.Status.FromString(details[0])


def _failure(answer: pb.PlayManyResponse) -> Failure:
    assert answer.WhichOneof("result") == "failure", answer
    failure = answer.failure
    return failure.code, failure.message, status_pb2.Status.FromString(failure.status_details)


def _info(status: status_pb2.Status) -> error_details_pb2.ErrorInfo:
    assert len(status.details) == 1, "exactly one detail"
    info = error_details_pb2.ErrorInfo()
    assert status.details[0].Unpack(info), "the detail is an ErrorInfo"
    return info


async def test_answers_and_refusals_equal_unary_plays(
    make_stack: MakeStack, plays: Callable[..., Plays]
) -> None:
    stack = await make_stack(time_scale=1.0)  # 15 s turns: no timeout moves the game meanwhile
    room_id, tokens, spectator = await _room(stack)
    call = plays(stack)

    # A play over the stream, then resent over the stream and as a unary call: the same outcome.
    mover, view, _ = await _turn(stack, tokens)
    action = view.legal_plays[0].action
    first = await call.play(1, pb.PlayRequest(token=mover, client_seq=5, action=action))
    assert first.call_id == 1 and first.WhichOneof("result") == "played"
    assert not first.played.duplicate and first.played.client_seq == 5
    again = await call.play(2, pb.PlayRequest(token=mover, client_seq=5, action=action))
    unary_again = await stack.stub.Play(pb.PlayRequest(token=mover, client_seq=5, action=action))
    assert again.played.duplicate and again.played == unary_again
    assert (again.played.seq, again.played.total) == (first.played.seq, first.played.total)

    # The other way round: a unary play resent over the stream.
    mover, view, _ = await _turn(stack, tokens)
    action = view.legal_plays[0].action
    played = await stack.stub.Play(pb.PlayRequest(token=mover, client_seq=5, action=action))
    resent = await call.play(3, pb.PlayRequest(token=mover, client_seq=5, action=action))
    assert resent.played == pb.PlayResponse(client_seq=5, seq=played.seq, total=played.total, duplicate=True)

    # Refusals of every kind (both seats are at client_seq 5), in both languages: what the unary
    # call would have failed with, to the byte of its status.
    mover, view, other = await _turn(stack, tokens)
    action = view.legal_plays[0].action
    refusals = {
        "NOT_YOUR_TURN": pb.PlayRequest(token=other, client_seq=6, action=action),
        "STALE": pb.PlayRequest(token=mover, client_seq=3, action=action),
        "INVALID_CLIENT_SEQ": pb.PlayRequest(token=mover, client_seq=0, action=action),
        "INVALID_TOKEN": pb.PlayRequest(token=f"{room_id}.forged", client_seq=9, action=action),
        "SPECTATOR_CANNOT_ACT": pb.PlayRequest(token=spectator, client_seq=1, action=action),
        "VIEW_OUTDATED": pb.PlayRequest(
            token=mover, client_seq=6, action=action, expected_move_seq=view.seq - 1
        ),
        "INVALID_ACTION": pb.PlayRequest(token=mover, client_seq=6, action=game_pb2.Action()),
    }
    call_id = 10
    for reason, request in refusals.items():
        for english in (False, True):
            call_id += 1
            unary = await _unary_failure(stack, request, english)
            answer = await call.play(call_id, request, lang="en" if english else "")
            assert answer.call_id == call_id
            streamed = _failure(answer)
            assert streamed == unary, (reason, english)
            _, message, status = streamed
            info = _info(status)
            assert info.reason == reason and info.metadata == _info(unary[2]).metadata
            assert is_english(message) if english else is_korean(message)
    assert await call.end() == grpc.StatusCode.OK


async def test_concurrent_plays_of_several_rooms_come_back_under_their_own_call_ids(
    make_stack: MakeStack, plays: Callable[..., Plays]
) -> None:
    stack = await make_stack(time_scale=1.0)
    rooms = [await _room(stack, seats=3) for _ in range(4)]
    call = plays(stack, metadata=ENGLISH)  # the stream's language, for plays that name none
    sent: dict[int, tuple[str, pb.PlayRequest]] = {}
    for index, (room_id, tokens, _) in enumerate(rooms):
        mover, view, _ = await _turn(stack, tokens)
        base = 100 * (index + 1)
        sent[base + 1] = (
            "played",
            pb.PlayRequest(token=mover, client_seq=1, action=view.legal_plays[0].action),
        )
        sent[base + 2] = (
            "INVALID_TOKEN",
            pb.PlayRequest(token=f"{room_id}.forged", client_seq=1, action=view.legal_plays[0].action),
        )
    # All at once, without waiting: the plays of the four rooms run side by side.
    futures = {
        call_id: call.send(pb.PlayManyRequest(call_id=call_id, play=request))
        for call_id, (_, request) in sent.items()
    }
    async with asyncio.timeout(10):
        answers = {call_id: await future for call_id, future in futures.items()}
    assert sorted(call.order) == sorted(sent), "one answer per play, none twice"
    for call_id, (expected, request) in sent.items():
        answer = answers[call_id]
        assert answer.call_id == call_id
        if expected == "played":
            assert answer.WhichOneof("result") == "played", answer
            # The outcome stored for this seat is the one this call_id got.
            unary = await stack.stub.Play(request)
            assert unary.duplicate and (unary.client_seq, unary.seq, unary.total) == (
                answer.played.client_seq,
                answer.played.seq,
                answer.played.total,
            )
        else:
            _, message, status = _failure(answer)
            assert _info(status).reason == expected
            assert is_english(message), "the stream's accept-language applies"
    assert await call.end() == grpc.StatusCode.OK


async def test_each_play_is_logged_and_observed_as_its_own_request(
    make_stack: MakeStack, plays: Callable[..., Plays], logs: LogCapture
) -> None:
    stack = await make_stack(time_scale=1.0)
    room_id, tokens, _ = await _room(stack)
    histogram = "ninetynine_session_rpc_duration_seconds_count"
    ok_before = sample(stack.registry, histogram, {"method": PLAY_METHOD, "code": "OK"})
    refused_before = sample(stack.registry, histogram, {"method": PLAY_METHOD, "code": "FAILED_PRECONDITION"})
    refusals_before = sample(stack.registry, "ninetynine_session_refusals_total", {"reason": "NOT_YOUR_TURN"})
    call = plays(stack)
    mover, view, other = await _turn(stack, tokens)
    action = view.legal_plays[0].action
    # The refusal first: once the mover has played, the other seat is to move.
    refused = await call.play(
        2, pb.PlayRequest(token=other, client_seq=1, action=action), request_id="gw-play-2"
    )
    played = await call.play(
        1, pb.PlayRequest(token=mover, client_seq=1, action=action), request_id="gw-play-1"
    )
    assert played.WhichOneof("result") == "played" and refused.WhichOneof("result") == "failure"

    # Requests the stream cannot take are refused under a reason of their own; the stream goes on.
    no_id = await call.play(0, pb.PlayRequest(token=mover, client_seq=2, action=action))
    no_play = call.send(pb.PlayManyRequest(call_id=3))
    async with asyncio.timeout(10):
        missing = await no_play
    assert _info(_failure(no_id)[2]).reason == "INVALID_CALL_ID"
    assert _info(_failure(missing)[2]).reason == "MISSING_PLAY" and missing.call_id == 3
    mover, view, _ = await _turn(stack, tokens)
    # The seat refused under client_seq 1 is to move now: a new client_seq (1 stays refused).
    after = await call.play(4, pb.PlayRequest(token=mover, client_seq=2, action=view.legal_plays[0].action))
    assert after.WhichOneof("result") == "played"
    assert await call.end() == grpc.StatusCode.OK

    await logs.wait_for(lambda _: len(logs.rpc_lines(PLAY_METHOD)) >= 5)
    lines = {line["request_id"]: line for line in logs.rpc_lines(PLAY_METHOD)}
    assert len(logs.rpc_lines(PLAY_METHOD)) == 5, "one canonical line per play"
    ok, no = lines["gw-play-1"], lines["gw-play-2"]
    assert (ok["code"], ok["room_id"], ok["client_seq"], ok["seq"]) == ("OK", room_id, 1, played.played.seq)
    assert ok["duplicate"] is False and ok["player_id"]
    assert (no["code"], no["reason"], no["room_id"]) == ("FAILED_PRECONDITION", "NOT_YOUR_TURN", room_id)
    # The call itself has its own line, which counts the plays it carried.
    stream_line = await logs.rpc_line("/ninetynine.session.v1.SessionService/PlayMany")
    assert (stream_line["code"], stream_line["plays"]) == ("OK", 5)

    ok_after = sample(stack.registry, histogram, {"method": PLAY_METHOD, "code": "OK"})
    refused_after = sample(stack.registry, histogram, {"method": PLAY_METHOD, "code": "FAILED_PRECONDITION"})
    assert (ok_after - ok_before, refused_after - refused_before) == (2, 1)
    refusals = sample(stack.registry, "ninetynine_session_refusals_total", {"reason": "NOT_YOUR_TURN"})
    assert refusals - refusals_before == 1
    assert sample(stack.registry, "ninetynine_session_refusals_total", {"reason": "MISSING_PLAY"}) == 1


async def test_half_close_answers_the_plays_still_running(
    make_stack: MakeStack, plays: Callable[..., Plays]
) -> None:
    stack = await make_stack(time_scale=1.0)
    rooms = [await _room(stack) for _ in range(3)]
    call = plays(stack)
    futures = []
    for call_id, (_, tokens, _) in enumerate(rooms, start=1):
        mover, view, _ = await _turn(stack, tokens)
        request = pb.PlayRequest(token=mover, client_seq=1, action=view.legal_plays[0].action)
        futures.append(call.send(pb.PlayManyRequest(call_id=call_id, play=request)))
    assert await call.end() == grpc.StatusCode.OK  # sent right after the plays, before any answer
    assert all(f.done() and f.result().WhichOneof("result") == "played" for f in futures)


async def test_an_unexpected_failure_is_answered_internal_and_logged_with_its_traceback(
    make_stack: MakeStack, plays: Callable[..., Plays], logs: LogCapture, monkeypatch: pytest.MonkeyPatch
) -> None:
    stack = await make_stack(time_scale=1.0)
    _, tokens, _ = await _room(stack)
    mover, view, _ = await _turn(stack, tokens)
    request = pb.PlayRequest(token=mover, client_seq=1, action=view.legal_plays[0].action)

    async def broken(*_args: object) -> pb.PlayResponse:
        raise RuntimeError("a bug in the session")

    # A bug, not a refusal: the play is answered INTERNAL (never a silent UNKNOWN), logged at error
    # level with the traceback, and the stream carries on.
    call = plays(stack)
    with monkeypatch.context() as patch:
        patch.setattr(stack.rooms.plays, "play", broken)
        failed = await call.play(1, request, request_id="gw-bug")
    code, message, _ = _failure(failed)
    assert code == grpc.StatusCode.INTERNAL.value[0] and is_korean(message)
    assert failed.failure.status_details == b"", "no ErrorInfo: nothing was refused"
    assert (await call.play(2, request)).WhichOneof("result") == "played"
    line = await logs.rpc_line(PLAY_METHOD)
    assert (line["request_id"], line["code"], line["level"]) == ("gw-bug", "INTERNAL", "error")
    (raised,) = line["exception"]
    assert (raised["exc_type"], raised["exc_value"]) == ("RuntimeError", "a bug in the session")
    assert raised["frames"], "with its traceback"
    internal = {"method": PLAY_METHOD, "code": "INTERNAL"}
    assert sample(stack.registry, "ninetynine_session_rpc_duration_seconds_count", internal) == 1


async def _move_events(stream: Any) -> list[pb.RoomEvent]:
    """The events of the next batch on a batched Subscribe stream."""
    async with asyncio.timeout(10):
        while True:
            item = await stream.read()
            if item.WhichOneof("item") == "batch" and item.batch.events:
                return list(item.batch.events)


async def test_an_applied_play_asked_to_answer_on_the_room_stream_is_answered_by_its_move(
    make_stack: MakeStack, plays: Callable[..., Plays]
) -> None:
    """``answer_on_room_stream``: an applied play gets no PlayManyResponse; its move's last event
    carries the answer, to every subscriber and when replayed. A refusal and a repeated
    client_seq are answered on the call as usual."""
    stack = await make_stack(time_scale=1.0)
    _, tokens, spectator = await _room(stack)
    mover, view, other = await _turn(stack, tokens)
    mover_id = (await stack.stub.GetView(pb.GetViewRequest(token=mover))).player_id
    last = (await stack.stub.GetView(pb.GetViewRequest(token=spectator))).seq
    watched = stack.stub.Subscribe(pb.SubscribeRequest(token=spectator, after_seq=last, batched=True))
    call = plays(stack)
    action = view.legal_plays[0].action

    def on_room_stream(call_id: int, request: pb.PlayRequest) -> asyncio.Future[pb.PlayManyResponse]:
        return call.send(pb.PlayManyRequest(call_id=call_id, play=request, answer_on_room_stream=True))

    applied = on_room_stream(1, pb.PlayRequest(token=mover, client_seq=5, action=action))
    events = await _move_events(watched)
    assert [e.HasField("play_answer") for e in events] == [False] * (len(events) - 1) + [True]
    answer = events[-1].play_answer
    assert answer.player_id == mover_id
    assert answer.response == pb.PlayResponse(client_seq=5, seq=events[-1].seq, total=answer.response.total)

    refused = await asyncio.wait_for(
        on_room_stream(2, pb.PlayRequest(token=other, client_seq=5, action=action)), 10
    )
    repeated = await asyncio.wait_for(
        on_room_stream(3, pb.PlayRequest(token=mover, client_seq=5, action=action)), 10
    )
    assert _info(_failure(refused)[2]).reason == "CARD_NOT_IN_HAND"  # the mover's card, the other's turn
    assert repeated.played == pb.PlayResponse(
        client_seq=5, seq=answer.response.seq, total=answer.response.total, duplicate=True
    )
    assert await call.end() == grpc.StatusCode.OK
    assert not applied.done() and call.order == [2, 3], "the applied play got no answer on the call"
    watched.cancel()

    # Replayed from the store, the move carries the same answer.
    replay = stack.stub.Subscribe(pb.SubscribeRequest(token=other, after_seq=last, batched=True))
    assert (await _move_events(replay))[-1].play_answer == answer
    replay.cancel()


def test_a_hidden_stand_in_keeps_the_movers_answer() -> None:
    """The move's last event may be for another seat's eyes only: the mover still gets its answer."""
    event = pb.RoomEvent(seq=9, at_ms=1, batch_end=True, game=events_pb2.Event())
    event.play_answer.player_id = "p1"
    event.play_answer.response.client_seq = 3
    stored = StoredEvent(9, "only", "p2", event.SerializeToString())
    hidden = Views.filtered(None, stored, "p1")  # type: ignore[arg-type]  # uses no instance state
    assert hidden.WhichOneof("kind") == "hidden"
    assert hidden.play_answer == event.play_answer and hidden.seq == 9 and hidden.batch_end
