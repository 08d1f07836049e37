"""What an outside attack found in the session, through the real engine, session and gateway.

* A spectator slot follows presence: spectators who went away without leaving stop holding the
  room's slots (after a short grace), so the 200 slots cannot be used up for good.
* A refused play is its outcome (docs/client-protocol.md §3): the same ``clientSeq`` sent again
  gets the same refusal, on any replica, even once the play would be legal, and is never applied.
* Giving up a seat (or a spectator place) ends every stream bound to its token, on every replica
  and through the gateway, before any more of that seat's private data goes out.
* Fields a gRPC client appends to a request (``CreateRoom.options``, ``Play.action``) are dropped
  at the edge: the stored room and what other clients are sent carry no trace of them.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
import pytest
from google.protobuf.message import Message
from google.rpc import error_details_pb2, status_pb2

from ninetynine.common.errors import ServiceError
from ninetynine.common.wire import length_delimited
from ninetynine.engine.v1 import game_pb2
from ninetynine.gateway.server import RunningGateway
from ninetynine.session import rooms
from ninetynine.session.rooms import MAX_SPECTATORS
from ninetynine.session.v1 import room_document_pb2 as doc_pb
from ninetynine.session.v1 import session_service_pb2 as pb
from tests.gateway.conftest import WsClient, WsFactory
from tests.session.conftest import Stack, engine_port, make_stack, store_url
from tests.session.helpers import ENGINE_DOMAIN, eventually, only_error_info, refused, room_of
from tests.session.test_session_subscribe_many import Many

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


# -- a refused play is remembered ------------------------------------------------------------------


async def _two_humans(stack: Stack) -> tuple[str, str, str]:
    """A running game of two humans: (room id, the token to move, the other token)."""
    a = await stack.stub.CreateRoom(pb.CreateRoomRequest(name="A", max_seats=2))
    b = await stack.stub.JoinRoom(pb.JoinRoomRequest(room_id=a.room.room_id, name="B"))
    await stack.stub.StartGame(pb.StartGameRequest(token=a.seat_token))
    view = await stack.stub.GetView(pb.GetViewRequest(token=a.seat_token))
    if view.view.my_turn:
        return a.room.room_id, a.seat_token, b.seat_token
    return a.room.room_id, b.seat_token, a.seat_token


async def _view(stack: Stack, token: str) -> pb.GetViewResponse:
    view: pb.GetViewResponse = await stack.stub.GetView(pb.GetViewRequest(token=token))
    return view


async def test_a_refused_client_seq_stays_refused_when_the_play_becomes_legal(make_stack: MakeStack) -> None:
    stack = await make_stack(time_scale=1.0)  # 15 s turns: only the test's plays move the game
    # The same room through another replica when the store is shared (Redis): the refusal is in
    # the room, not in one replica's memory.
    other = await make_stack(time_scale=1.0) if stack.rooms.store_kind == "redis" else stack
    room_id, mover, waiting = await _two_humans(stack)

    # Not this seat's turn: refused by the rules.
    early = (await _view(stack, waiting)).view.hand[0].choices[0].action
    first = await refused(
        stack.stub.Play(pb.PlayRequest(token=waiting, client_seq=1, action=early)),
        grpc.StatusCode.FAILED_PRECONDITION,
        "NOT_YOUR_TURN",
        ENGINE_DOMAIN,
    )
    opening = (await _view(stack, mover)).view
    await stack.stub.Play(pb.PlayRequest(token=mover, client_seq=1, action=opening.legal_plays[0].action))

    # Now it is this seat's turn and this play is legal; sent again under the refused client_seq it
    # gets the first refusal back, word for word, and nothing is applied.
    before = await _view(stack, waiting)
    assert before.view.my_turn and before.view.legal_plays
    legal = before.view.legal_plays[0].action
    for replica in (stack, other):
        again = await refused(
            replica.stub.Play(pb.PlayRequest(token=waiting, client_seq=1, action=legal)),
            grpc.StatusCode.FAILED_PRECONDITION,
            "NOT_YOUR_TURN",
            ENGINE_DOMAIN,
        )
        assert dict(only_error_info(again).metadata) == dict(only_error_info(first).metadata)
        assert again.details() == first.details()
    after = await _view(stack, waiting)
    assert after.seq == before.seq and after.view == before.view
    assert (await room_of(stack.stub, room_id)).last_seq == before.seq

    # A new client_seq is judged afresh: the play lands.
    applied = await other.stub.Play(pb.PlayRequest(token=waiting, client_seq=2, action=legal))
    assert not applied.duplicate and applied.seq > before.seq
    await refused(
        stack.stub.Play(pb.PlayRequest(token=waiting, client_seq=1, action=legal)),
        grpc.StatusCode.ABORTED,
        "STALE",
    )


async def test_a_view_outdated_client_seq_stays_refused_with_the_current_move_seq(
    make_stack: MakeStack,
) -> None:
    stack = await make_stack(time_scale=1.0)
    _, mover, waiting = await _two_humans(stack)
    opening = (await _view(stack, mover)).view
    await stack.stub.Play(
        pb.PlayRequest(
            token=mover, client_seq=1, action=opening.legal_plays[0].action, expected_move_seq=opening.seq
        )
    )
    now = (await _view(stack, waiting)).view
    legal = now.legal_plays[0].action
    stale = pb.PlayRequest(token=waiting, client_seq=5, action=legal, expected_move_seq=opening.seq)
    first = await refused(stack.stub.Play(stale), grpc.StatusCode.ABORTED, "VIEW_OUTDATED")
    # Resent with the counter of the current view, which would apply under a new client_seq.
    stale.expected_move_seq = now.seq
    again = await refused(stack.stub.Play(stale), grpc.StatusCode.ABORTED, "VIEW_OUTDATED")
    assert dict(only_error_info(again).metadata) == dict(only_error_info(first).metadata)
    assert (await _view(stack, waiting)).view == now
    applied = await stack.stub.Play(
        pb.PlayRequest(token=waiting, client_seq=6, action=legal, expected_move_seq=now.seq)
    )
    assert not applied.duplicate


async def _bound(client: WsClient, kind: str, **fields: Any) -> dict[str, Any]:
    reply = await client.request({"type": kind, "id": kind, **fields})
    assert reply["type"] == "joined", reply
    return reply


def _my_view(predicate: Callable[[dict[str, Any]], bool]) -> Callable[[dict[str, Any]], bool]:
    return lambda m: m["type"] == "view" and predicate(m["view"])


@pytest.mark.turn_time_scale(1.0)
async def test_a_refused_client_seq_stays_refused_through_the_gateway(
    gateway: RunningGateway, ws_client: WsFactory
) -> None:
    host, guest = await ws_client(gateway), await ws_client(gateway)
    created = await _bound(host, "createRoom", name="지호", seats=2)
    await _bound(guest, "joinRoom", roomId=created["roomId"], name="민서")
    started = await host.request({"type": "startGame", "id": "s"})
    assert started["type"] == "room"
    host_view, guest_view = [
        (await c.until(_my_view(lambda v: "myTurn" in v)))["view"] for c in (host, guest)
    ]
    mover, waiting = (host, guest) if host_view["myTurn"] else (guest, host)
    opening, waiting_view = (host_view, guest_view) if host_view["myTurn"] else (guest_view, host_view)

    early = waiting_view["hand"][0]["choices"][0]["action"]
    first = await waiting.request({"type": "play", "id": "w1", "clientSeq": 7, "action": early})
    assert first["type"] == "error" and first["reason"] == "NOT_YOUR_TURN", first
    played = await mover.request(
        {
            "type": "play",
            "id": "m1",
            "clientSeq": 1,
            "moveSeq": opening["seq"],
            "action": opening["legalPlays"][0]["action"],
        }
    )
    assert played["type"] == "played"
    now = (await waiting.until(_my_view(lambda v: v.get("myTurn") is True)))["view"]
    legal = now["legalPlays"][0]["action"]
    again = await waiting.request(
        {"type": "play", "id": "w2", "clientSeq": 7, "moveSeq": now["seq"], "action": legal}
    )
    assert again["type"] == "error" and again["reason"] == "NOT_YOUR_TURN", again
    assert again["metadata"] == first["metadata"] and again["message"] == first["message"]
    # Nothing was applied: under a new clientSeq the same play lands, as the seat's first move.
    applied = await waiting.request(
        {"type": "play", "id": "w3", "clientSeq": 8, "moveSeq": now["seq"], "action": legal}
    )
    assert applied["type"] == "played", applied
    await waiting.until(lambda m: m["type"] in ("event", "view") and m["seq"] >= applied["seq"])
    me = waiting_view["viewer"]
    mine = [
        m
        for m in waiting.seen
        if m["type"] == "event" and m["event"]["type"] == "cardPlayed" and m["event"]["player"] == me
    ]
    assert len(mine) == 1, mine


# -- a revoked seat's streams end ------------------------------------------------------------------


def _seqs_with_hand(items: list[pb.SubscribeResponse]) -> list[int]:
    """The room seqs of the items that carry the viewer's hand."""
    out: list[int] = []
    for item in items:
        views = [item.view] if item.HasField("view") else [item.batch.view] if item.HasField("batch") else []
        out.extend(v.seq for v in views if v.HasField("view") and len(v.view.hand))
    return out


def _seqs(items: list[pb.SubscribeResponse]) -> list[int]:
    out: list[int] = []
    for item in items:
        if item.HasField("event"):
            out.append(item.event.seq)
        elif item.HasField("view"):
            out.append(item.view.seq)
        elif item.HasField("batch"):
            out.extend(e.seq for e in item.batch.events)
    return out


async def _follow(stub: Any, token: str, batched: bool, into: list[pb.SubscribeResponse]) -> grpc.StatusCode:
    """Read a Subscribe stream to its end; the status it ended with."""
    stream = stub.Subscribe(pb.SubscribeRequest(token=token, batched=batched))
    try:
        async for item in stream:
            if item.WhichOneof("item") != "heartbeat":
                into.append(item)
    except grpc.aio.AioRpcError as err:
        assert only_error_info(err).reason == "INVALID_TOKEN", err
        code: grpc.StatusCode = err.code()
        return code
    return grpc.StatusCode.OK


async def test_leaving_ends_every_stream_of_the_seat_before_more_of_its_hand(make_stack: MakeStack) -> None:
    stack = await make_stack()  # compressed turns: the left seat is auto-played at once
    # The streams on another replica when the store is shared: it learns from the room's log.
    watcher = await make_stack() if stack.rooms.store_kind == "redis" else stack
    a = await stack.stub.CreateRoom(pb.CreateRoomRequest(name="A", max_seats=3))
    b = await stack.stub.JoinRoom(pb.JoinRoomRequest(room_id=a.room.room_id, name="B"))
    await stack.stub.AddBot(pb.AddBotRequest(token=a.seat_token))
    await stack.stub.StartGame(pb.StartGameRequest(token=a.seat_token))

    plain: list[pb.SubscribeResponse] = []
    batched: list[pb.SubscribeResponse] = []
    tasks = [
        asyncio.create_task(_follow(watcher.stub, b.seat_token, False, plain)),
        asyncio.create_task(_follow(watcher.stub, b.seat_token, True, batched)),
    ]
    many = Many(watcher.stub)
    many.open(1, b.seat_token)
    streams = (plain, batched, many.items[1])
    await eventually(lambda: _true(all(_seqs_with_hand(items) for items in streams)))

    left = await stack.stub.LeaveRoom(pb.LeaveRoomRequest(token=b.seat_token))
    revoked_at = left.room.last_seq  # the seq of the leave's own event
    async with asyncio.timeout(10):
        codes = await asyncio.gather(*tasks)
        await eventually(lambda: _true(1 in many.ends))
    assert codes == [grpc.StatusCode.UNAUTHENTICATED] * 2
    end = many.ends[1]
    assert end.code == grpc.StatusCode.UNAUTHENTICATED.value[0]
    info = error_details_pb2.ErrorInfo()
    assert status_pb2.Status.FromString(end.status_details).details[0].Unpack(info)
    assert info.reason == "INVALID_TOKEN"
    for items in streams:
        assert max(_seqs(items)) < revoked_at, "nothing from the leave on reached the left seat's streams"
    # The game went on without the seat (it is auto-played), and none of it reached those streams.
    await eventually(lambda: _later(stack, a.room.room_id, revoked_at))
    many.cancel()


async def _true(value: bool) -> bool:
    return value


async def _later(stack: Stack, room_id: str, seq: int) -> bool:
    return (await room_of(stack.stub, room_id)).last_seq > seq + 2


def _has_hand(message: dict[str, Any]) -> bool:
    return message["type"] == "view" and bool(message["view"].get("hand"))


async def test_leaving_on_one_connection_ends_the_seat_on_the_others(
    make_gateway: Callable[..., Awaitable[RunningGateway]], ws_client: WsFactory
) -> None:
    gateway = await make_gateway()
    host, seat, twin = await ws_client(gateway), await ws_client(gateway), await ws_client(gateway)
    created = await _bound(host, "createRoom", name="지호", seats=3)
    joined = await _bound(seat, "joinRoom", roomId=created["roomId"], name="민서")
    await host.request({"type": "addBot", "id": "b"})
    # The same seat on a second connection, as a second tab or device would hold it.
    await _bound(twin, "resume", token=joined["token"], afterSeq=0)
    await host.request({"type": "startGame", "id": "s"})
    await twin.until(_has_hand)

    left = await seat.request({"type": "leaveRoom", "id": "l"})
    assert left["type"] == "left"
    assert not [m for m in seat.seen if m["type"] == "error"], "the leaver gets `left`, no error"
    ended = await twin.until(lambda m: m["type"] == "error")
    assert ended["reason"] == "INVALID_TOKEN" and ended["fatal"] is False and "id" not in ended
    # The game goes on (the seat is auto-played): none of it reaches the twin, which is out of the
    # room and may bind again.
    await host.until(
        lambda m: (
            m["type"] == "event"
            and m["event"]["type"] == "cardPlayed"
            and m["event"]["player"] == joined["playerId"]
        )
    )
    refused_play = await twin.request(
        {"type": "play", "id": "p", "clientSeq": 1, "action": {"cardId": "Z-1"}}
    )
    assert refused_play["type"] == "error" and refused_play["reason"] == "NOT_IN_ROOM"
    after = twin.seen[twin.seen.index(ended) + 1 :]
    assert not [m for m in after if m["type"] in ("event", "view", "room", "snapshot")], after
    again = await twin.request({"type": "spectate", "id": "w", "roomId": created["roomId"]})
    assert again["type"] == "joined" and again["role"] == "spectator"


# -- spectator slots follow presence ---------------------------------------------------------------


async def _watch_once(stub: Any, token: str) -> grpc.aio.UnaryStreamCall[Any, Any]:
    """A Subscribe stream that has delivered its first item (so the session counts it present)."""
    stream: grpc.aio.UnaryStreamCall[Any, Any] = stub.Subscribe(pb.SubscribeRequest(token=token))
    async for _ in stream:
        break
    return stream


async def _doc(stack: Stack, room_id: str) -> doc_pb.RoomDocument:
    record = await stack.rooms.store.load_room(room_id)
    assert record is not None
    return doc_pb.RoomDocument.FromString(record.data)


async def test_spectators_who_vanish_without_leaving_free_their_slots(make_stack: MakeStack) -> None:
    stack = await make_stack()  # compressed time: the slots' grace is short
    # The spectators watch through another replica when the store is shared: presence is in the room.
    watcher = await make_stack() if stack.rooms.store_kind == "redis" else stack
    room = await stack.stub.CreateRoom(pb.CreateRoomRequest(name="A", max_seats=2))
    room_id = room.room.room_id
    tokens = [
        (await stack.stub.Spectate(pb.SpectateRequest(room_id=room_id))).spectator_token
        for _ in range(MAX_SPECTATORS)
    ]
    streams = [await _watch_once(watcher.stub, token) for token in tokens]
    # Every slot is held by somebody watching: no more spectators, whatever time passes.
    await refused(
        stack.stub.Spectate(pb.SpectateRequest(room_id=room_id)),
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        "TOO_MANY_SPECTATORS",
    )
    assert (await room_of(stack.stub, room_id)).spectator_count == MAX_SPECTATORS

    for stream in streams:  # they all go away without leaveRoom
        stream.cancel()

    async def all_away() -> bool:
        return not any(s.present for s in (await _doc(stack, room_id)).spectators)

    await eventually(all_away)

    async def spectate() -> pb.SpectateResponse | None:
        try:
            answer: pb.SpectateResponse = await stack.stub.Spectate(pb.SpectateRequest(room_id=room_id))
        except grpc.aio.AioRpcError as err:
            assert only_error_info(err).reason == "TOO_MANY_SPECTATORS", err
            return None
        return answer

    newcomer = await eventually(spectate)  # once the grace has passed
    watching = await _watch_once(watcher.stub, newcomer.spectator_token)
    watching.cancel()
    view = await watcher.stub.GetView(pb.GetViewRequest(token=newcomer.spectator_token))
    assert view.room.room_id == room_id and not view.player_id
    doc = await _doc(stack, room_id)
    assert len(doc.spectators) <= MAX_SPECTATORS
    # The places given up to the newcomer no longer act. Which ones went depends on when each
    # departure was recorded (the 200 are written one after another), so ask the room.
    held = {s.token_hash for s in doc.spectators}
    freed = [token for token in tokens if rooms.token_digest(token) not in held]
    assert freed
    await refused(
        stack.stub.GetView(pb.GetViewRequest(token=freed[0])),
        grpc.StatusCode.UNAUTHENTICATED,
        "INVALID_TOKEN",
    )


def test_a_place_away_for_less_than_the_grace_is_kept_and_a_present_one_always() -> None:
    doc, _ = rooms.new_room("ROOM01", "A", game_pb2.Options(), 2, 0)
    grace = rooms.SPECTATOR_GRACE_MS
    tokens = [rooms.add_spectator(doc, 0, grace) for _ in range(MAX_SPECTATORS)]
    digests = [rooms.token_digest(t) for t in tokens]
    for digest in digests:
        assert rooms.set_spectator_presence(doc, digest, True, 10)
    # One watcher drops at t=1000 (a reconnect would come back within the grace).
    assert rooms.set_spectator_presence(doc, digests[7], False, 1000)
    with pytest.raises(ServiceError) as full:
        rooms.add_spectator(doc, 1000 + grace - 1, grace)
    assert full.value.reason == "TOO_MANY_SPECTATORS"
    assert rooms.identify(doc, tokens[7]).spectator  # still its place
    # Past the grace its place goes to a newcomer; those watching keep theirs, whatever their age.
    newcomer = rooms.add_spectator(doc, 1000 + grace, grace)
    assert rooms.identify(doc, newcomer).spectator
    with pytest.raises(ServiceError):
        rooms.identify(doc, tokens[7])
    assert all(rooms.identify(doc, t).spectator for i, t in enumerate(tokens) if i != 7)
    assert rooms.public_room(doc).spectator_count == MAX_SPECTATORS
    # The newcomer never subscribed: past the grace its place is free again too.
    assert rooms.identify(doc, rooms.add_spectator(doc, 1000 + 2 * grace, grace)).spectator
    with pytest.raises(ServiceError):
        rooms.identify(doc, newcomer)


def test_spectator_places_of_older_documents_keep_working_and_count_as_away() -> None:
    doc, _ = rooms.new_room("ROOM01", "A", game_pb2.Options(), 2, 0)
    old = "ROOM01." + "s" * 43
    doc.spectator_token_hashes.append(rooms.token_digest(old))
    assert rooms.identify(doc, old).spectator
    assert rooms.set_spectator_presence(doc, rooms.token_digest(old), True, 5)
    assert not doc.spectator_token_hashes and rooms.identify(doc, old).spectator
    rooms.remove_spectator(doc, old)
    with pytest.raises(ServiceError):
        rooms.identify(doc, old)


async def test_a_spectator_place_given_up_ends_its_other_streams(make_stack: MakeStack) -> None:
    stack = await make_stack()
    watcher = await make_stack() if stack.rooms.store_kind == "redis" else stack
    room = await stack.stub.CreateRoom(pb.CreateRoomRequest(name="A", max_seats=3))
    token = (await stack.stub.Spectate(pb.SpectateRequest(room_id=room.room.room_id))).spectator_token
    items: list[pb.SubscribeResponse] = []
    following = asyncio.create_task(_follow(watcher.stub, token, True, items))
    await eventually(lambda: _true(bool(items)))
    left = await stack.stub.LeaveRoom(pb.LeaveRoomRequest(token=token))
    # The next thing the room does reaches the place's stream as its end, not as news.
    await stack.stub.JoinRoom(pb.JoinRoomRequest(room_id=room.room.room_id, name="B"))
    async with asyncio.timeout(10):
        assert await following == grpc.StatusCode.UNAUTHENTICATED
    assert max(_seqs(items)) <= left.room.last_seq
