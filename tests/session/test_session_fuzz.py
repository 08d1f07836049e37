"""Hypothesis-generated requests never make the session fail as UNKNOWN or INTERNAL.

A real engine and session (SQLite store) run on an event loop in a background thread; the
examples call them through plain synchronous channels: random bytes through a generic call
for every method, and random values in every field with real and made-up tokens and actions.
Every refusal carries exactly one ErrorInfo, and a refused call leaves an existing room as it was.
A play refused inside a PlayMany stream (an answer, not a failed call) is held to the same rules.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from google.rpc import error_details_pb2, status_pb2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from ninetynine.engine.server import create_engine_server
from ninetynine.engine.v1 import game_pb2
from ninetynine.session.server import close_room_service, create_session_server
from ninetynine.session.v1 import session_service_pb2 as pb
from ninetynine.session.v1 import session_service_pb2_grpc as pb_grpc
from tests.session.helpers import ENGINE_DOMAIN, SESSION_DOMAIN, only_error_info

SERVICE = pb.DESCRIPTOR.services_by_name["SessionService"]
FORBIDDEN = {grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL, grpc.StatusCode.DEADLINE_EXCEEDED}
FUZZ = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@dataclass
class Running:
    port: int
    registry: CollectorRegistry
    channel: grpc.Channel
    stub: pb_grpc.SessionServiceStub
    room_id: str
    tokens: list[str]  # the watched room's host, guest and spectator tokens
    card_ids: list[str]


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    db: Path = tmp_path_factory.mktemp("fuzz") / "rooms.db"
    registry = CollectorRegistry()

    async def start() -> tuple[Any, ...]:
        engine, engine_port, _ = create_engine_server("127.0.0.1:0")
        await engine.start()
        # Turns of 30 s x 100: no deadline fires while the examples run.
        session, port, _, rooms = create_session_server(
            "127.0.0.1:0",
            engine_target=f"127.0.0.1:{engine_port}",
            store_url=f"sqlite:///{db}",
            time_scale=100,
            # A caught-up Subscribe is accepted and quiet: its heartbeat shows that within a call's 5 s.
            stream_heartbeat_s=1.0,
            registry=registry,
        )
        await session.start()
        rooms.start()
        return engine, session, rooms, port

    engine, session, rooms, port = asyncio.run_coroutine_threadsafe(start(), loop).result(30)
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    stub = pb_grpc.SessionServiceStub(channel)
    host = stub.CreateRoom(
        pb.CreateRoomRequest(name="A", max_seats=3, options=game_pb2.Options(turn_seconds=30))
    )
    guest = stub.JoinRoom(pb.JoinRoomRequest(room_id=host.room.room_id, name="B"))
    spectator = stub.Spectate(pb.SpectateRequest(room_id=host.room.room_id))
    stub.StartGame(pb.StartGameRequest(token=host.seat_token))
    cards = [
        c.card.id
        for t in (host.seat_token, guest.seat_token)
        for c in stub.GetView(pb.GetViewRequest(token=t)).view.hand
    ]
    yield Running(
        port,
        registry,
        channel,
        stub,
        host.room.room_id,
        [host.seat_token, guest.seat_token, spectator.spectator_token],
        cards,
    )
    channel.close()

    async def stop() -> None:
        await session.stop(None)
        await close_room_service(rooms)
        await engine.stop(None)

    asyncio.run_coroutine_threadsafe(stop(), loop).result(30)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)


def snapshot(run: Running) -> tuple[bytes, ...]:
    """Everything a refused call must not change: the room and both seats' views."""
    room = run.stub.GetRoom(pb.GetRoomRequest(room_id=run.room_id)).room
    views = []
    for token in run.tokens[:2]:
        try:
            views.append(
                run.stub.GetView(pb.GetViewRequest(token=token)).SerializeToString(deterministic=True)
            )
        except grpc.RpcError as err:  # a fuzzed LeaveRoom may have ended this seat
            views.append(str(err.code()).encode())  # type: ignore[attr-defined]
    return (room.SerializeToString(deterministic=True), *views)


def check_outcome(err: grpc.RpcError | pb.PlayFailure | None) -> None:
    if err is None:
        return
    if isinstance(err, pb.PlayFailure):
        assert err.code not in {code.value[0] for code in FORBIDDEN}, f"{err.code}: {err.message}"
        status = status_pb2.Status.FromString(err.status_details)
        assert status.code == err.code and len(status.details) == 1, "exactly one detail"
        info = error_details_pb2.ErrorInfo()
        assert status.details[0].Unpack(info), "the detail is an ErrorInfo"
        assert info.domain in (SESSION_DOMAIN, ENGINE_DOMAIN), info.domain
        return
    code = err.code()  # type: ignore[attr-defined]
    assert code not in FORBIDDEN, f"{code}: {err.details()}"  # type: ignore[attr-defined]
    only_error_info(err)


def call(run: Running, method: str, request: Message | bytes) -> grpc.RpcError | pb.PlayFailure | None:
    """Call ``method``; raw bytes go through a generic call without client-side serialization.

    A stream gets that one request, then the caller half-closes. A PlayMany play refused in its
    answer comes back as that answer's ``PlayFailure``.
    """
    desc = SERVICE.methods_by_name[method]
    path = f"/{SERVICE.full_name}/{method}"
    raw = isinstance(request, bytes)
    serializer = None if raw else (lambda m: m.SerializeToString())
    try:
        if desc.server_streaming:
            stream = run.channel.unary_stream(path, request_serializer=serializer, response_deserializer=None)
            responses = stream(request, timeout=5)
            first = next(iter(responses), None)  # one item shows the stream was accepted
            responses.cancel()  # type: ignore[no-untyped-call]
            if method == "PlayMany" and first is not None:
                answer = pb.PlayManyResponse.FromString(first)
                if answer.WhichOneof("result") == "failure":
                    return answer.failure
        else:
            run.channel.unary_unary(path, request_serializer=serializer, response_deserializer=None)(
                request, timeout=5
            )
    except grpc.RpcError as err:
        if err.code() == grpc.StatusCode.CANCELLED:  # type: ignore[attr-defined]
            return None  # our own cancel of an accepted stream
        return err
    return None


def refused_changes_nothing(run: Running, method: str, request: Message | bytes) -> None:
    before = snapshot(run)
    err = call(run, method, request)
    check_outcome(err)
    if err is not None:
        assert snapshot(run) == before, f"refused {method} changed the room"


def test_a_caught_up_subscription_is_accepted_not_timed_out(running: Running) -> None:
    """``after_seq`` equal to the room's last seq: nothing to replay, and the call stays open."""
    last = running.stub.GetRoom(pb.GetRoomRequest(room_id=running.room_id)).room.last_seq
    request = pb.SubscribeRequest(token=running.tokens[2], after_seq=last)
    assert call(running, "Subscribe", request) is None


# -- random bytes ---------------------------------------------------------------------------------


@FUZZ
@given(method=st.sampled_from(sorted(SERVICE.methods_by_name)), data=st.binary(max_size=200))
def test_random_bytes_are_refused_cleanly(running: Running, method: str, data: bytes) -> None:
    refused_changes_nothing(running, method, data)


def test_undecodable_bytes_are_malformed_request(running: Running) -> None:
    before = running.registry.get_sample_value(
        "ninetynine_session_refusals_total", {"reason": "MALFORMED_REQUEST"}
    )
    for method in SERVICE.methods_by_name:
        err = call(running, method, b"\xff\xff\xff")  # a truncated varint: never a valid message
        assert isinstance(err, grpc.RpcError), "bytes that do not parse end the call, streams too"
        assert err.code() == grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
        info = only_error_info(err)
        assert (info.reason, info.domain) == ("MALFORMED_REQUEST", "session.ninetynine")
    after = running.registry.get_sample_value(
        "ninetynine_session_refusals_total", {"reason": "MALFORMED_REQUEST"}
    )
    assert (after or 0) - (before or 0) == len(SERVICE.methods_by_name)


# -- random field values ----------------------------------------------------------------------------

_texts = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=40)
_INT_RANGES = {
    FieldDescriptor.TYPE_INT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_INT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_UINT32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_UINT64: (0, 2**64 - 1),
}


def _token(run: Running, data: st.DataObject, streaming: bool) -> str:
    # Seat tokens on a stream would flip presence (a real change); spectators and fakes do not.
    real = run.tokens[2:] if streaming else run.tokens
    made_up = st.builds(lambda secret: f"{run.room_id}.{secret}", _texts)
    return data.draw(st.sampled_from(real) | made_up | _texts | st.just(f"{run.room_id}." + "A" * 43))


def _fill(message: Message, run: Running, data: st.DataObject, streaming: bool, depth: int = 0) -> None:
    descriptor: Any = message.DESCRIPTOR
    for field in descriptor.fields:
        if not data.draw(st.booleans()):
            continue
        if field.message_type is not None:
            if depth < 2 and not field.is_repeated:
                _fill(getattr(message, field.name), run, data, streaming, depth + 1)
                getattr(message, field.name).SetInParent()
            continue
        if field.type == FieldDescriptor.TYPE_STRING:
            if field.name == "token":
                value: Any = _token(run, data, streaming)
            elif field.name == "room_id":
                value = data.draw(st.sampled_from([run.room_id, "ZZZZZZ"]) | _texts)
            elif field.name == "card_id":
                value = data.draw(st.sampled_from(run.card_ids) | _texts)
            else:
                value = data.draw(_texts)
        elif field.type == FieldDescriptor.TYPE_BOOL:
            value = data.draw(st.booleans())
        elif field.type == FieldDescriptor.TYPE_ENUM:
            value = data.draw(st.integers(-3, 12))
        elif field.type in _INT_RANGES:
            lo, hi = _INT_RANGES[field.type]
            value = data.draw(st.integers(max(lo, -3), min(hi, 120)) | st.integers(lo, hi))
        else:
            continue
        if field.is_repeated:
            getattr(message, field.name).append(value)
        else:
            setattr(message, field.name, value)


@FUZZ
@given(method=st.sampled_from(sorted(SERVICE.methods_by_name)), data=st.data())
def test_random_requests_are_answered_or_refused_cleanly(
    running: Running, method: str, data: st.DataObject
) -> None:
    desc = SERVICE.methods_by_name[method]
    request = pb.DESCRIPTOR.message_types_by_name[desc.input_type.name]
    message: Message = getattr(pb, request.name)()
    _fill(message, running, data, desc.server_streaming)
    refused_changes_nothing(running, method, message)


@FUZZ
@given(
    token=st.integers(0, 2),
    client_seq=st.integers(0, 2**64 - 1) | st.integers(0, 5),
    card=st.integers(0, 100),
    joker=st.none() | st.integers(0, 200) | st.integers(0, 2**32 - 1),
    ace=st.none() | st.integers(0, 15),
    sign=st.none() | st.integers(-3, 5),
    direction=st.none() | st.integers(-3, 5),
)
def test_random_plays_by_real_seats(
    running: Running,
    token: int,
    client_seq: int,
    card: int,
    joker: int | None,
    ace: int | None,
    sign: int | None,
    direction: int | None,
) -> None:
    action = game_pb2.Action(card_id=running.card_ids[card % len(running.card_ids)])
    for field, value in (("joker_value", joker), ("ace_value", ace), ("sign", sign), ("dir", direction)):
        if value is not None and field in game_pb2.Action.DESCRIPTOR.fields_by_name:
            setattr(action, field, value)
    request = pb.PlayRequest(token=running.tokens[token], client_seq=client_seq, action=action)
    refused_changes_nothing(running, "Play", request)
