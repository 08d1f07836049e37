"""What an outside attack found in the session, through the real engine, session and gateway.

* Fields a gRPC client appends to a request (``CreateRoom.options``, ``Play.action``) are dropped
  at the edge: the stored room and what other clients are sent carry no trace of them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

from google.protobuf.message import Message
from ninetynine.engine.v1 import game_pb2
from ninetynine.session.v1 import room_document_pb2 as doc_pb
from ninetynine.session.v1 import session_service_pb2 as pb

from services.common.wire import length_delimited
from tests.session.conftest import Stack, engine_port, make_stack, store_url

__all__ = ["engine_port", "make_stack", "store_url"]

MakeStack = Callable[..., Awaitable[Stack]]
SERVICE = "/ninetynine.session.v1.SessionService"
# An unknown field of about 4 KB, as the attack appended it.
MARKER = b"appended-by-a-client:" * 200
UNKNOWN_FIELD = 9999


def _unknown(payload: bytes = MARKER) -> bytes:
    return length_delimited(UNKNOWN_FIELD, payload)


def _field(message: type[Message], name: str, payload: bytes) -> bytes:
    """Field ``name`` of ``message`` holding ``payload`` as already-serialized bytes."""
    return length_delimited(message.DESCRIPTOR.fields_by_name[name].number, payload)


async def _raw(stack: Stack, method: str, request: bytes) -> bytes:
    path = f"{SERVICE}/{method}"
    call = stack.channel.unary_unary(path, request_serializer=None, response_deserializer=None)
    answer: bytes = await call(request, timeout=10)
    return answer


async def _stream_until_seq(stack: Stack, token: str, seq: int) -> list[bytes]:
    """Every raw item of a Subscribe stream from the start up to the view at room seq ``seq``."""
    call = stack.channel.unary_stream(
        f"{SERVICE}/Subscribe", request_serializer=None, response_deserializer=None
    )
    stream = call(pb.SubscribeRequest(token=token, after_seq=0).SerializeToString(), timeout=10)
    items: list[bytes] = []
    async for raw in stream:
        items.append(raw)
        item = pb.SubscribeResponse.FromString(raw)
        if item.HasField("view") and item.view.seq >= seq:
            break
    stream.cancel()
    return items


async def test_unknown_fields_of_options_and_actions_are_neither_stored_nor_echoed(
    make_stack: MakeStack,
) -> None:
    stack = await make_stack(time_scale=1.0)  # no timeout move meanwhile
    options = game_pb2.Options(turn_seconds=30).SerializeToString() + _unknown()
    create = pb.CreateRoomRequest(name="A", max_seats=2).SerializeToString()
    create += _field(pb.CreateRoomRequest, "options", options)
    answer = await _raw(stack, "CreateRoom", create)
    assert MARKER not in answer
    a = pb.CreateRoomResponse.FromString(answer)
    room_id = a.room.room_id
    b = await stack.stub.JoinRoom(pb.JoinRoomRequest(room_id=room_id, name="B"))
    await stack.stub.StartGame(pb.StartGameRequest(token=a.seat_token))
    views = {t: await stack.stub.GetView(pb.GetViewRequest(token=t)) for t in (a.seat_token, b.seat_token)}
    mover, view = next((t, v) for t, v in views.items() if v.view.my_turn)
    action = view.view.legal_plays[0].action.SerializeToString() + _unknown()
    play = pb.PlayRequest(token=mover, client_seq=1, expected_move_seq=view.view.seq).SerializeToString()
    play += _field(pb.PlayRequest, "action", action)
    played = pb.PlayResponse.FromString(await _raw(stack, "Play", play))
    assert played.seq > view.seq

    record = await stack.rooms.store.load_room(room_id)
    assert record is not None
    assert MARKER[:40] not in record.data
    stored = doc_pb.RoomDocument.FromString(record.data)
    assert stored.options.SerializeToString() == game_pb2.Options(turn_seconds=30).SerializeToString()
    assert stored.moves[-1].action == view.view.legal_plays[0].action
    assert stored.moves[-1].action.ByteSize() == view.view.legal_plays[0].action.ByteSize()
    assert len(record.data) < len(MARKER), f"the stored room is {len(record.data)} bytes"
    # What the other clients are sent: the events, the views, the room in them.
    for token in (a.seat_token, b.seat_token):
        for item in await _stream_until_seq(stack, token, played.seq):
            assert MARKER[:40] not in item
    room = await _raw(stack, "GetRoom", pb.GetRoomRequest(room_id=room_id).SerializeToString())
    assert MARKER[:40] not in room


async def test_unknown_fields_in_a_play_many_play_are_dropped(make_stack: MakeStack) -> None:
    stack = await make_stack(time_scale=1.0)
    a = await stack.stub.CreateRoom(pb.CreateRoomRequest(name="A", max_seats=2))
    b = await stack.stub.JoinRoom(pb.JoinRoomRequest(room_id=a.room.room_id, name="B"))
    await stack.stub.StartGame(pb.StartGameRequest(token=a.seat_token))
    views = {t: await stack.stub.GetView(pb.GetViewRequest(token=t)) for t in (a.seat_token, b.seat_token)}
    mover, view = next((t, v) for t, v in views.items() if v.view.my_turn)
    action = view.view.legal_plays[0].action.SerializeToString() + _unknown()
    play = pb.PlayRequest(token=mover, client_seq=1).SerializeToString()
    play += _field(pb.PlayRequest, "action", action)
    request = pb.PlayManyRequest(call_id=1).SerializeToString() + _field(pb.PlayManyRequest, "play", play)
    path = f"{SERVICE}/PlayMany"
    call = stack.channel.stream_stream(path, request_serializer=None, response_deserializer=None)

    async def requests() -> AsyncIterator[bytes]:
        yield request

    answers = [pb.PlayManyResponse.FromString(raw) async for raw in call(requests(), timeout=10)]
    assert [x.WhichOneof("result") for x in answers] == ["played"], answers
    record = await stack.rooms.store.load_room(a.room.room_id)
    assert record is not None and MARKER[:40] not in record.data
