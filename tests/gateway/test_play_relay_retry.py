"""Which plays the gateway's ``PlayRelay`` sends a second time, and which it does not.

A play whose shared call ends before it is answered (the session replica carrying the call shuts
down and drains it) is sent once more on a new call, which lands on the other replica: the caller
gets its answer and never sees the break (tests/faults/test_replica_drain.py does the same with
processes and SIGTERM, under play). A play the session *answered* with a refusal goes back to the
caller as it is, even an UNAVAILABLE one such as ENGINE_UNAVAILABLE: that answer is the session's
word on this play, and the client decides when to resend. Real engine, session servers and Redis.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import grpc.aio
import pytest
import redis
from prometheus_client import CollectorRegistry

from ninetynine.common.errors import error_info
from ninetynine.common.grpcclient import create_channel
from ninetynine.engine.server import EngineMetrics, create_engine_server
from ninetynine.gateway.metrics import GatewayMetrics
from ninetynine.gateway.relay import PlayRelay
from ninetynine.session.draining import OpenStreams
from ninetynine.session.playmany import PLAY_METHOD
from ninetynine.session.server import close_room_service, create_session_server, run_session
from ninetynine.session.v1 import session_service_pb2 as spb
from ninetynine.session.v1 import session_service_pb2_grpc as spb_grpc
from tests.faults.stack import RedisServer
from tests.session.helpers import sample


@dataclass
class Setup:
    engine: grpc.aio.Server
    stub: spb_grpc.SessionServiceAsyncStub
    relay: PlayRelay
    session_registry: CollectorRegistry
    gateway_registry: CollectorRegistry
    tokens: list[str]


@pytest.fixture
async def setup(tmp_path: Path) -> AsyncIterator[Setup]:
    """Engine, session (SQLite, 15 s turns), a PlayRelay with one shared call, a started room of two."""
    engine, engine_port, _ = create_engine_server(
        "127.0.0.1:0", metrics=EngineMetrics.create(CollectorRegistry())
    )
    await engine.start()
    session_registry, gateway_registry = CollectorRegistry(), CollectorRegistry()
    server, port, _, rooms = create_session_server(
        "127.0.0.1:0",
        engine_target=f"127.0.0.1:{engine_port}",
        store_url=f"sqlite:///{tmp_path / 'rooms.db'}",
        registry=session_registry,
    )
    await server.start()
    rooms.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    stub = spb_grpc.SessionServiceStub(channel)
    relay = PlayRelay(stub.PlayMany, streams=1, retries=GatewayMetrics.create(gateway_registry).play_retries)
    host = await stub.CreateRoom(spb.CreateRoomRequest(name="A", max_seats=2))
    guest = await stub.JoinRoom(spb.JoinRoomRequest(room_id=host.room.room_id, name="B"))
    await stub.StartGame(spb.StartGameRequest(token=host.seat_token))
    yield Setup(engine, stub, relay, session_registry, gateway_registry, [host.seat_token, guest.seat_token])
    await relay.close()
    await channel.close(None)
    await server.stop(None)
    await close_room_service(rooms)
    await engine.stop(None)


def _plays_received(registry: CollectorRegistry) -> float:
    """Plays the session took up from PlayMany calls, whatever their outcome."""
    name = "ninetynine_session_rpc_duration_seconds_count"
    return sum(
        s.value
        for metric in registry.collect()
        for s in metric.samples
        if s.name == name and s.labels["method"] == PLAY_METHOD
    )


async def test_an_unavailable_answer_from_the_session_is_returned_as_is_and_not_resent(
    setup: Setup,
) -> None:
    views = [(await setup.stub.GetView(spb.GetViewRequest(token=t))).view for t in setup.tokens]
    mover, view = next((t, v) for t, v in zip(setup.tokens, views, strict=True) if v.my_turn)
    warm_up = await setup.relay.play(
        spb.PlayRequest(token=mover, client_seq=1, action=view.legal_plays[0].action), "en", timeout=10
    )
    call = setup.relay.calls[0]
    assert call is not None and _plays_received(setup.session_registry) == 1

    # The engine goes away: the session refuses the next play with UNAVAILABLE / ENGINE_UNAVAILABLE.
    await setup.engine.stop(None)
    other = next(t for t in setup.tokens if t != mover)
    view = (await setup.stub.GetView(spb.GetViewRequest(token=other))).view
    assert view.my_turn and view.seq > 0 and warm_up.seq > 0
    request = spb.PlayRequest(token=other, client_seq=1, action=view.legal_plays[0].action)
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await setup.relay.play(request, "en", timeout=10)

    # The session's answer, as it gave it: code, English message, the one ErrorInfo.
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
    info = error_info(refused.value)
    assert info is not None and info.reason == "ENGINE_UNAVAILABLE", refused.value
    # Sent once: one more play taken up by the session, no retry counted, the call goes on.
    assert _plays_received(setup.session_registry) == 2
    refusals = {"reason": "ENGINE_UNAVAILABLE"}
    assert sample(setup.session_registry, "ninetynine_session_refusals_total", refusals) == 1
    assert sample(setup.gateway_registry, "ninetynine_gateway_play_retries_total", {}) == 0
    assert setup.relay.calls[0] is call and not call.broken


@dataclass
class Replica:
    """A session server run as ``ninety-nine session`` runs it; ``stop`` is what SIGTERM sets."""

    port: int
    registry: CollectorRegistry
    streams: OpenStreams
    stop: asyncio.Event
    serving: asyncio.Task[None]


async def _replica(engine_port: int, store_url: str) -> Replica:
    registry, streams, stop = CollectorRegistry(), OpenStreams(), asyncio.Event()
    server, port, health, rooms = create_session_server(
        "127.0.0.1:0",
        engine_target=f"127.0.0.1:{engine_port}",
        store_url=store_url,
        registry=registry,
        streams=streams,
    )
    rooms.start()
    serving = asyncio.create_task(run_session(server, health, rooms, streams, grace=30.0, stop=stop))
    return Replica(port, registry, streams, stop, serving)


async def _turn(
    stub: spb_grpc.SessionServiceAsyncStub, tokens: list[str], client_seq: int
) -> spb.PlayRequest:
    for token in tokens:
        view = (await stub.GetView(spb.GetViewRequest(token=token))).view
        if view.my_turn:
            return spb.PlayRequest(token=token, client_seq=client_seq, action=view.legal_plays[0].action)
    raise AssertionError("nobody is to move")


async def test_a_play_the_draining_replica_did_not_take_up_is_sent_once_more_and_lands_on_the_other(
    tmp_path: Path,
) -> None:
    engine, engine_port, _ = create_engine_server(
        "127.0.0.1:0", metrics=EngineMetrics.create(CollectorRegistry())
    )
    await engine.start()
    # A Redis of this test's own: it pauses its writes, which holds a play in the session.
    store = RedisServer(tmp_path)
    store.start()
    admin = redis.Redis(port=store.port)
    replicas = [await _replica(engine_port, store.url) for _ in range(2)]
    # As the gateway reaches several replicas: round robin over their addresses.
    target = "ipv4:" + ",".join(f"127.0.0.1:{r.port}" for r in replicas)
    channel = create_channel(target, options=[("grpc.lb_policy_name", "round_robin")])
    stub = spb_grpc.SessionServiceStub(channel)
    gateway_registry = CollectorRegistry()
    relay = PlayRelay(stub.PlayMany, streams=1, retries=GatewayMetrics.create(gateway_registry).play_retries)
    try:
        tables = []
        for _ in range(3):
            host = await stub.CreateRoom(spb.CreateRoomRequest(name="A", max_seats=2), wait_for_ready=True)
            guest = await stub.JoinRoom(spb.JoinRoomRequest(room_id=host.room.room_id, name="B"))
            await stub.StartGame(spb.StartGameRequest(token=host.seat_token))
            tables.append([host.seat_token, guest.seat_token])
        first, running, late = [await _turn(stub, tokens, client_seq=1) for tokens in tables]
        assert not (await relay.play(first, "en", timeout=10)).duplicate
        carrier = next(r for r in replicas if _plays_received(r.registry) == 1)
        other = next(r for r in replicas if r is not carrier)

        admin.client_pause(5000, all=False)  # writes wait: the next play runs on until unpaused
        try:
            running_play = asyncio.create_task(relay.play(running, "en", timeout=10))
            await asyncio.sleep(0.3)
            assert not running_play.done() and _plays_received(carrier.registry) == 1
            carrier.stop.set()  # the shutdown begins: the carrier drains its PlayMany call
            async with asyncio.timeout(5):
                while not carrier.streams.draining:
                    await asyncio.sleep(0.01)
            # Queued on the same call (still open: the running play is not answered yet), but the
            # draining replica no longer takes plays up.
            late_play = asyncio.create_task(relay.play(late, "en", timeout=10))
            await asyncio.sleep(0.3)
            assert not late_play.done()
        finally:
            admin.client_unpause()

        # The running play is answered on its call; the late one, left unanswered when the call
        # ended, is sent once more on a new call, to the other replica, and is played there once.
        async with asyncio.timeout(10):
            assert not (await running_play).duplicate
            played = await late_play
        assert played.client_seq == 1 and not played.duplicate
        assert sample(gateway_registry, "ninetynine_gateway_play_retries_total", {}) == 1
        assert _plays_received(carrier.registry) == 2
        assert _plays_received(other.registry) == 1
        async with asyncio.timeout(10):
            await carrier.serving  # drained long before its 30 s grace
    finally:
        await relay.close()
        await channel.close(None)
        for replica in replicas:
            replica.stop.set()
        await asyncio.gather(*(r.serving for r in replicas), return_exceptions=True)
        admin.close()
        store.stop()
        await engine.stop(None)
