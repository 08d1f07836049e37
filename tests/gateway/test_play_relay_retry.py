"""Which plays the gateway's ``PlayRelay`` sends a second time, and which it does not.

A play whose shared call breaks before it is answered is sent once more on a new call (see
tests/faults/test_replica_drain.py for a replica that drains under play). A play the session
*answered* with a refusal goes back to the caller as it is, even an UNAVAILABLE one such as
ENGINE_UNAVAILABLE: that answer is the session's word on this play, and the client decides when to
resend. Real engine and session servers.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import grpc.aio
import pytest
from ninetynine.session.v1 import session_service_pb2 as spb
from ninetynine.session.v1 import session_service_pb2_grpc as spb_grpc
from prometheus_client import CollectorRegistry

from services.common.errors import error_info
from services.engine.server import EngineMetrics, create_engine_server
from services.gateway.metrics import GatewayMetrics
from services.gateway.relay import PlayRelay
from services.session.playmany import PLAY_METHOD
from services.session.server import close_room_service, create_session_server
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
    relay = PlayRelay(stub, streams=1, retries=GatewayMetrics.create(gateway_registry).play_retries)
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
