"""The gateway's room streams over shared SubscribeMany calls (``ninetynine/gateway/relay.py``).

Clients must not notice the sharing: the same events however many calls share them, the same
refusals (status and ErrorInfo) as Subscribe, and a session restart is survived by resubscribing from the last
seq. Real engine and session servers throughout.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import pytest
from prometheus_client import CollectorRegistry

from ninetynine.common.config import env_var
from ninetynine.common.errors import to_service_error
from ninetynine.engine.server import EngineMetrics, create_engine_server
from ninetynine.gateway.relay import SessionRelay
from ninetynine.gateway.server import add_parser as add_gateway_parser
from ninetynine.gateway.server import start_gateway
from ninetynine.session.server import close_room_service, create_session_server
from ninetynine.session.service import RoomService
from ninetynine.session.v1 import session_service_pb2 as spb
from ninetynine.session.v1 import session_service_pb2_grpc as spb_grpc
from tests.common.roomstream import room_stream
from tests.gateway.conftest import Backend, GatewayFactory, WsFactory


def _game_events(seen: list[dict[str, Any]]) -> list[tuple[int, str]]:
    return [(m["seq"], m["event"]["type"]) for m in seen if m["type"] == "event"]


async def test_a_seat_gets_the_same_events_however_many_calls_share_its_stream(
    make_gateway: GatewayFactory, ws_client: WsFactory
) -> None:
    shared = await make_gateway(session_streams=2)
    single = await make_gateway(session_streams=1)  # every room of that gateway on one call
    host = await ws_client(shared)
    joined = await host.request({"type": "createRoom", "id": "c", "name": "A", "seats": 3})
    await host.request({"type": "addBot", "id": "b1"})
    await host.request({"type": "addBot", "id": "b2"})
    # The same seat followed through the other gateway, from the start.
    twin = await ws_client(single)
    resumed = await twin.request({"type": "resume", "id": "r", "token": joined["token"], "afterSeq": 0})
    assert resumed["type"] == "joined"
    await host.request({"type": "startGame", "id": "s"})  # turns time out fast: the game ends itself

    def finished(m: dict[str, Any]) -> bool:
        return bool(m["type"] == "event" and m["event"]["type"] == "gameFinished")

    end = await host.until(finished)
    await twin.until(lambda m: m["type"] == "event" and m["seq"] >= end["seq"])
    mine, theirs = _game_events(host.seen), _game_events(twin.seen)
    seqs = [seq for seq, _ in mine]
    assert seqs == sorted(set(seqs)), "in order, none twice (room events and others' private ones skip seqs)"
    common = [e for e in mine if e[0] >= theirs[0][0]]
    assert common == [e for e in theirs if e[0] <= end["seq"]]
    assert any(kind == "cardPlayed" for _, kind in common)


@dataclass
class LocalSession:
    """A session server on a SQLite file, restartable on the same port."""

    engine_target: str
    db: Path
    port: int = 0
    server: grpc.aio.Server | None = None
    rooms: RoomService | None = None

    async def start(self) -> None:
        self.server, self.port, _, self.rooms = create_session_server(
            f"127.0.0.1:{self.port}",
            engine_target=self.engine_target,
            store_url=f"sqlite:///{self.db}",
            bot_think_ms=10,
            registry=CollectorRegistry(),
        )
        await self.server.start()
        self.rooms.start()

    async def stop(self) -> None:
        if self.server is not None and self.rooms is not None:
            await self.server.stop(None)
            await close_room_service(self.rooms)
            self.server = self.rooms = None


@pytest.fixture
async def local() -> AsyncIterator[Callable[..., Awaitable[tuple[LocalSession, Any, SessionRelay]]]]:
    """Start engine + session; yields a factory of (session, stub, relay with ``streams`` calls)."""
    engine, engine_port, _ = create_engine_server(
        "127.0.0.1:0", metrics=EngineMetrics.create(CollectorRegistry())
    )
    await engine.start()
    opened: list[tuple[LocalSession, grpc.aio.Channel, SessionRelay]] = []

    async def start(db: Path, streams: int) -> tuple[LocalSession, Any, SessionRelay]:
        session = LocalSession(f"127.0.0.1:{engine_port}", db)
        await session.start()
        channel = grpc.aio.insecure_channel(f"127.0.0.1:{session.port}")
        stub = spb_grpc.SessionServiceStub(channel)
        relay = SessionRelay(stub.SubscribeMany, streams=streams)
        opened.append((session, channel, relay))
        return session, stub, relay

    yield start
    for session, channel, relay in opened:
        await relay.close()
        await channel.close(None)
        await session.stop()
    await engine.stop(None)


async def _next_batch(stream: AsyncIterator[spb.SubscribeResponse]) -> spb.SubscribeResponse:
    async with asyncio.timeout(10):
        async for item in stream:
            if item.WhichOneof("item") == "batch":
                return item
    raise AssertionError("the stream ended")


async def test_refusals_keep_their_status_and_a_session_restart_is_resubscribed(
    local: Any, tmp_path: Path
) -> None:
    session, stub, relay = await local(tmp_path / "rooms.db", streams=2)
    host = await stub.CreateRoom(spb.CreateRoomRequest(name="A", max_seats=2))
    room_id = host.room.room_id

    # A made-up token: refused like Subscribe refuses it (UNAUTHENTICATED, one ErrorInfo).
    bogus = room_stream(relay, spb.SubscribeRequest(token=f"{room_id}.forged", batched=True), "en")
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await _next_batch(bogus)
    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
    error = to_service_error(refused.value)
    assert (error.reason, error.domain) == ("INVALID_TOKEN", "session.ninetynine")
    assert error.message_en == "Invalid or unknown token"

    stream = room_stream(relay, spb.SubscribeRequest(token=host.seat_token, batched=True), "ko")
    first = await _next_batch(stream)
    last_seq = first.batch.events[-1].seq

    # The session goes away: the subscription fails as a broken Subscribe would.
    await session.stop()
    with pytest.raises(grpc.aio.AioRpcError) as broken:
        while True:  # what arrived before the stop, then the failure
            last_seq = (await _next_batch(stream)).batch.events[-1].seq
    assert broken.value.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED)

    # Back on the same port and store: a resubscription from the last seq gets what came after.
    await session.start()
    await stub.JoinRoom(spb.JoinRoomRequest(room_id=room_id, name="B"), wait_for_ready=True)
    resume = spb.SubscribeRequest(token=host.seat_token, after_seq=last_seq, batched=True)
    again = room_stream(relay, resume, "ko")
    kinds = []
    while "player_joined" not in kinds:
        batch = await _next_batch(again)
        assert batch.batch.events[0].seq > last_seq, "only what came after the last seq"
        kinds += [event.WhichOneof("kind") for event in batch.batch.events]
    await again.aclose()


async def test_a_subscriber_that_fails_ends_its_own_stream_not_the_shared_call(
    local: Any, tmp_path: Path
) -> None:
    _, stub, relay = await local(tmp_path / "rooms.db", streams=1)
    host = await stub.CreateRoom(spb.CreateRoomRequest(name="A", max_seats=6))
    request = spb.SubscribeRequest(token=host.seat_token, batched=True)

    def broken(_response: spb.SubscribeResponse) -> None:
        raise ValueError("a bug in the subscriber")

    failing = relay.subscribe(request, "ko", broken)
    with pytest.raises(grpc.aio.AioRpcError) as ended:
        async with asyncio.timeout(10):
            await failing.ended
    assert ended.value.code() == grpc.StatusCode.UNKNOWN
    # The shared call goes on for everyone else: a subscription on it gets the room's later moves.
    stream = room_stream(relay, request, "ko")
    await _next_batch(stream)
    await stub.JoinRoom(spb.JoinRoomRequest(room_id=host.room.room_id, name="B"))
    kinds: list[str | None] = []
    while "player_joined" not in kinds[1:]:
        kinds += [event.WhichOneof("kind") for event in (await _next_batch(stream)).batch.events]
    await stream.aclose()


def _gateway_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="ninety-nine")
    add_gateway_parser(parser.add_subparsers())
    return parser.parse_args(["gateway", *argv])


@pytest.mark.parametrize("flag", ["--session-streams", "--session-play-streams"])
def test_the_gateway_refuses_fewer_than_one_shared_call(
    flag: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert getattr(_gateway_args([flag, "1"]), flag[2:].replace("-", "_")) == 1
    with pytest.raises(SystemExit):
        _gateway_args([flag, "0"])
    assert "must be at least 1" in capsys.readouterr().err
    monkeypatch.setenv(env_var(flag), "0")
    with pytest.raises(SystemExit):
        _gateway_args([])
    assert "must be at least 1" in capsys.readouterr().err


async def test_a_gateway_cannot_be_started_without_shared_calls(backend: Backend) -> None:
    target = backend.session_target
    with pytest.raises(ValueError, match="at least one shared call"):
        await start_gateway(session_target=target, registry=CollectorRegistry(), session_streams=0)
    with pytest.raises(ValueError, match="at least one shared call"):
        await start_gateway(session_target=target, registry=CollectorRegistry(), session_play_streams=0)
