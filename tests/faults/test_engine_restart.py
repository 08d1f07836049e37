"""The engine is SIGKILLed and restarted on its port while games run through the gateway.

Meanwhile players get ``ENGINE_UNAVAILABLE`` (the session's UNAVAILABLE) and retry with the same
clientSeq; views keep working (the session renders them itself); afterwards every game finishes
with an intact log and every acknowledged move in it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
import pytest

from ninetynine.session.v1 import session_service_pb2 as pb
from ninetynine.session.v1 import session_service_pb2_grpc as pb_grpc
from tests.faults.checks import assert_acked_moves_in_replay, assert_room_intact
from tests.faults.players import WsPlayer
from tests.faults.stack import (
    Service,
    engine_service,
    gateway_service,
    grpc_channel,
    session_service,
    wait_until,
)
from tests.faults.tables import open_table

ROOMS = 3

# Three lives: every player gets its first moves in before anyone can be knocked out, whatever the deal.
LONG_GAME: dict[str, object] = {"lives": 3}


@pytest.fixture
def services(tmp_path: Path):
    engine = engine_service(tmp_path)
    engine.start()
    # 15 s turns last 3 s: long enough that humans (not timeouts) play through the outage.
    session = session_service(tmp_path, engine.port, f"sqlite:///{tmp_path}/rooms.db", scale=0.2)
    session.start()
    gateway = gateway_service(tmp_path, session.port)
    gateway.start()
    yield engine, session, gateway
    for service in (gateway, session, engine):
        service.stop()


async def test_engine_crash_gives_engine_unavailable_then_play_resumes(
    services: tuple[Service, Service, Service], http: aiohttp.ClientSession
) -> None:
    engine, session, gateway = services
    tables = [
        await open_table(http, lambda: gateway.http_port, humans=2, bots=1, options=LONG_GAME)
        for _ in range(ROOMS)
    ]
    everyone: list[WsPlayer] = [p for _, players in tables for p in players]
    for player in everyone:
        player.retry_delay_s = 0.3
    playing = [asyncio.create_task(p.play_to_the_end(reconnect=False)) for p in everyone]
    channel = grpc_channel(session.port)
    stub = pb_grpc.SessionServiceStub(channel)
    try:
        await wait_until(lambda: all(len(p.acked) >= 2 for p in everyone), timeout=30)
        engine.kill()
        await wait_until(
            lambda: any(e["reason"] == "ENGINE_UNAVAILABLE" for p in everyone for e in p.errors), timeout=15
        )
        # Views need no engine: GetView keeps answering for every seat while it is gone.
        for player in everyone:
            view = await stub.GetView(pb.GetViewRequest(token=player.token), timeout=5)
            assert view.player_id == player.player_id
        engine.start()  # same port
        await asyncio.wait_for(asyncio.gather(*playing), timeout=120)
    finally:
        for task in playing:
            task.cancel()

    unavailable = [e for p in everyone for e in p.errors if e["reason"] == "ENGINE_UNAVAILABLE"]
    assert unavailable and all(not e["fatal"] for e in unavailable)
    assert all(e["message"] for e in unavailable), "a readable message comes with the reason"
    for room_id, players in tables:
        replay = await assert_room_intact(stub, room_id)
        for player in players:
            assert not player.repeated, "no event delivered twice"
            assert player.player_id is not None
            assert_acked_moves_in_replay(replay, player.player_id, player.acked)
    await channel.close(None)
