"""The gRPC ``GatewayService.Connect`` stream against real engine, session and gateway servers."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import Any, cast

import grpc
import grpc.aio
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from ninetynine.engine.v1 import state_pb2
from ninetynine.gateway.connection import Connection
from ninetynine.gateway.convert import server_json
from ninetynine.gateway.limits import Limits
from ninetynine.gateway.metrics import GatewayMetrics
from ninetynine.gateway.outbox import Outgoing
from ninetynine.gateway.protocol import server_validator
from ninetynine.gateway.server import GATEWAY_SERVICE_NAME, RunningGateway
from ninetynine.gateway.v1 import gateway_service_pb2 as gw
from ninetynine.gateway.v1 import gateway_service_pb2_grpc as gw_grpc
from ninetynine.session.v1 import session_service_pb2 as spb

TIMEOUT_S = 20.0


class Stream:
    """One Connect call; every message read is also checked as JSON against the protocol schema.

    ``passed`` holds what :meth:`request` read on its way to the reply (the room stream may bring a
    view before the reply of the request that caused it); :meth:`next` hands those out first.
    """

    def __init__(self, call: grpc.aio.StreamStreamCall[gw.ConnectRequest, gw.ConnectResponse]) -> None:
        self.call = call
        self.seen: list[gw.ServerMessage] = []
        self.passed: deque[gw.ServerMessage] = deque()

    async def send(self, message: gw.ClientMessage) -> None:
        await self.call.write(gw.ConnectRequest(message=message))

    async def recv(self) -> gw.ServerMessage:
        response = await asyncio.wait_for(self.call.read(), TIMEOUT_S)
        assert isinstance(response, gw.ConnectResponse), "the stream ended"
        message: gw.ServerMessage = response.message
        as_json = server_json(message, message.id or None)
        errors = list(server_validator().iter_errors(cast(Any, as_json)))
        assert not errors, f"{as_json!r}: {errors[0].message}"
        self.seen.append(message)
        return message

    async def request(self, message: gw.ClientMessage) -> gw.ServerMessage:
        await self.send(message)
        while True:
            reply = await self.recv()
            if reply.id == message.id:
                return reply
            self.passed.append(reply)

    async def next(self) -> gw.ServerMessage:
        """The next message not yet handed out: one :meth:`request` passed over, else a new one."""
        return self.passed.popleft() if self.passed else await self.recv()

    async def until(self, predicate: Callable[[gw.ServerMessage], bool]) -> gw.ServerMessage:
        while True:
            message = await self.next()
            if predicate(message):
                return message

    async def until_finished_view(self) -> None:
        await self.until(
            lambda m: m.WhichOneof("kind") == "view" and m.view.view.phase == state_pb2.PHASE_FINISHED
        )


@pytest.fixture
async def channel(gateway: RunningGateway) -> AsyncIterator[grpc.aio.Channel]:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{gateway.grpc_port}") as ch:
        yield ch


def _open(channel: grpc.aio.Channel) -> Stream:
    # Without a request iterator grpc.aio returns a call to write to (the stubs only know the other form).
    return Stream(gw_grpc.GatewayServiceStub(channel).Connect())  # type: ignore[call-arg]


async def test_a_whole_game_over_grpc(channel: grpc.aio.Channel) -> None:
    stream = _open(channel)
    welcome = await stream.request(gw.ClientMessage(id="h", hello=gw.Hello(lang="en")))
    assert welcome.welcome.protocol_version == 1 and welcome.welcome.lang == "en"
    joined = await stream.request(gw.ClientMessage(id="c", create_room=gw.CreateRoom(name="Sam", seats=3)))
    me = joined.joined.player_id
    assert joined.joined.role == "player" and joined.joined.host and joined.joined.token
    for i in range(2):
        room = await stream.request(gw.ClientMessage(id=f"b{i}", add_bot=gw.AddBot()))
        assert len(room.room.room.seats) == i + 2
    started = await stream.request(gw.ClientMessage(id="s", start_game=gw.StartGame()))
    assert started.room.room.phase == spb.ROOM_PHASE_PLAYING

    client_seq = 0
    plays: list[gw.Played] = []
    while True:
        message = await stream.next()
        kind = message.WhichOneof("kind")
        if kind == "view" and message.view.view.my_turn and message.view.view.legal_plays:
            client_seq += 1
            action = message.view.view.legal_plays[0].action
            await stream.send(
                gw.ClientMessage(id=f"p{client_seq}", play=gw.Play(client_seq=client_seq, action=action))
            )
        elif kind == "played":
            plays.append(message.played)
        elif kind == "error":
            assert message.error.reason in ("NOT_YOUR_TURN", "CARD_NOT_IN_HAND"), message.error
        elif kind == "view" and message.view.view.phase == state_pb2.PHASE_FINISHED:
            break

    events = [m.event for m in stream.seen if m.WhichOneof("kind") == "event"]
    seqs = [e.seq for e in events]
    assert seqs == sorted(set(seqs))
    assert events[-1].event.WhichOneof("payload") == "game_finished"
    assert all(
        e.event.hand_dealt.player_id == me for e in events if e.event.WhichOneof("payload") == "hand_dealt"
    )
    assert {e.source for e in events if e.event.WhichOneof("payload") == "card_played"} >= {"bot"}
    assert len({p.client_seq for p in plays}) == len(plays)
    await stream.call.done_writing()


async def test_a_grpc_spectator_sees_no_hand_and_resume_rebinds(channel: grpc.aio.Channel) -> None:
    host = _open(channel)
    joined = await host.request(gw.ClientMessage(id="c", create_room=gw.CreateRoom(name="Sam", seats=2)))
    await host.request(gw.ClientMessage(id="b", add_bot=gw.AddBot()))
    watcher = _open(channel)
    spectating = await watcher.request(
        gw.ClientMessage(id="w", spectate=gw.Spectate(room_id=joined.joined.room_id))
    )
    assert spectating.joined.role == "spectator" and not spectating.joined.player_id
    await host.request(gw.ClientMessage(id="s", start_game=gw.StartGame()))
    await watcher.until_finished_view()
    for message in watcher.seen:
        if message.WhichOneof("kind") == "view":
            assert not message.view.view.viewer_id and not message.view.view.hand
        if message.WhichOneof("kind") == "event":
            assert message.event.event.WhichOneof("payload") != "hand_dealt"
            assert not message.event.event.card_drawn.HasField("card")

    back = _open(channel)
    resumed = await back.request(
        gw.ClientMessage(id="r", resume=gw.Resume(token=joined.joined.token, after_seq=0))
    )
    assert resumed.joined.player_id == joined.joined.player_id and resumed.joined.host
    await back.until_finished_view()
    replayed = [m.event for m in back.seen if m.WhichOneof("kind") == "event"]
    seqs = [e.seq for e in replayed]
    assert seqs == sorted(set(seqs)), "resume from 0 replays the log once"
    assert replayed[0].event.WhichOneof("payload") == "game_started"
    host_seqs = {m.event.seq for m in host.seen if m.WhichOneof("kind") == "event"}
    assert host_seqs <= set(seqs), "everything the live player stream saw is in the replayed log"


async def test_grpc_refusals_keep_the_stream(channel: grpc.aio.Channel) -> None:
    stream = _open(channel)
    empty = await stream.request(gw.ClientMessage(id="e"))
    assert empty.error.reason == "MALFORMED_MESSAGE" and not empty.error.fatal
    unbound = await stream.request(gw.ClientMessage(id="p", play=gw.Play(client_seq=1)))
    assert unbound.error.reason == "NOT_IN_ROOM"
    missing = await stream.request(
        gw.ClientMessage(id="j", join_room=gw.JoinRoom(room_id="NOPE42", name="Kim"))
    )
    assert missing.error.reason == "ROOM_NOT_FOUND" and missing.error.message == "방을 찾을 수 없어요"
    pong = await stream.request(gw.ClientMessage(id="ping", ping=gw.Ping()))
    assert pong.WhichOneof("kind") == "pong"


async def test_bytes_that_are_no_connect_request_are_refused_and_the_stream_goes_on(
    channel: grpc.aio.Channel,
) -> None:
    # A client whose encoder is broken: grpc itself would end the call INTERNAL before the
    # gateway saw it. It is a malformed frame like a WebSocket text that is not JSON.
    call = channel.stream_stream(
        f"/{GATEWAY_SERVICE_NAME}/Connect",
        request_serializer=lambda data: data,
        response_deserializer=gw.ConnectResponse.FromString,
    )()  # type: ignore[call-arg]  # without a request iterator: a call to write to, as in _open
    stream = Stream(call)
    await call.write(b"\xff\xff\xff")  # a truncated varint tag: no protobuf message
    refused = await stream.next()
    assert refused.error.reason == "MALFORMED_MESSAGE" and not refused.error.fatal
    assert refused.error.message == "메시지 형식이 올바르지 않아요"
    assert refused.error.metadata["detail"].startswith("not a ConnectRequest")
    await call.write(
        gw.ConnectRequest(message=gw.ClientMessage(id="ping", ping=gw.Ping())).SerializeToString()
    )
    pong = await stream.until(lambda m: m.id == "ping")
    assert pong.WhichOneof("kind") == "pong"


async def test_health_reports_the_gateway_service(channel: grpc.aio.Channel) -> None:
    health = health_pb2_grpc.HealthStub(channel)
    answer = await health.Check(health_pb2.HealthCheckRequest(service=GATEWAY_SERVICE_NAME))
    assert answer.status == health_pb2.HealthCheckResponse.SERVING


class StalledTransport:
    """A peer that stops reading: every send waits forever (a full TCP window)."""

    protocol = "ws"
    json_text = True

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.closed_with: int | None = None
        self._never = asyncio.Event()

    async def send(self, out: Outgoing) -> None:
        self.sent.append(out.msg.WhichOneof("kind") or "")
        await self._never.wait()

    async def send_many(self, outs: list[Outgoing]) -> None:
        self.sent.extend(out.msg.WhichOneof("kind") or "" for out in outs)
        await self._never.wait()

    def write_now(self, outs: list[Outgoing]) -> bool:
        return False  # the socket never takes anything without waiting

    async def close(self, code: int) -> None:
        self.closed_with = code


async def test_a_slow_client_is_disconnected_without_blocking(gateway: RunningGateway) -> None:
    from prometheus_client import CollectorRegistry

    metrics = GatewayMetrics.create(CollectorRegistry())
    transport = StalledTransport()
    connection = Connection(
        transport,
        gateway.gateway.session,
        Limits(send_queue=3),
        metrics,
        relay=gateway.gateway.relay,
        plays=gateway.gateway.plays,
    )
    connection.start()
    ping = gw.ClientMessage(ping=gw.Ping())
    for _ in range(6):  # the first is stuck in the socket, three wait in the queue, then it overflows
        await connection.on_frame(2, lambda: (ping, None))
    await asyncio.wait_for(connection.closed.wait(), TIMEOUT_S)
    assert transport.closed_with == 4001
    assert transport.sent[-1] == "goodbye"
    assert metrics.slow_client_disconnects.labels("ws")._value.get() == 1
