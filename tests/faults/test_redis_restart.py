"""A test-owned Redis (AOF, fsync always) is SIGKILLed and restarted under play.

Nothing the session acknowledged may be lost: every ``played`` a client received is in the
replay afterwards, and every game finishes. Once the session stays up (it must reconnect by
itself), once it is SIGKILLed with Redis and restarted.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
import pytest

from ninetynine.session.v1 import session_service_pb2_grpc as pb_grpc
from tests.faults.checks import assert_acked_moves_in_replay, assert_room_intact
from tests.faults.players import WsPlayer
from tests.faults.stack import (
    RedisServer,
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


@pytest.mark.parametrize("session_fate", ["kept", "killed"])
async def test_redis_restart_loses_no_acknowledged_move(
    session_fate: str, tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    redis_server = RedisServer(tmp_path)
    redis_server.start()
    engine = engine_service(tmp_path)
    engine.start()
    session = session_service(tmp_path, engine.port, redis_server.url, scale=0.2)
    session.start()
    gateway = gateway_service(tmp_path, session.port)
    gateway.start()
    playing: list[asyncio.Task[None]] = []
    try:
        tables = [
            await open_table(http, lambda: gateway.http_port, humans=2, bots=1, options=LONG_GAME)
            for _ in range(ROOMS)
        ]
        everyone: list[WsPlayer] = [p for _, players in tables for p in players]
        for player in everyone:
            player.retry_delay_s = 0.3
        playing = [asyncio.create_task(p.play_to_the_end()) for p in everyone]
        await wait_until(lambda: all(len(p.acked) >= 2 for p in everyone), timeout=30)
        acked_before = sum(len(p.acked) for p in everyone)

        redis_server.kill()
        if session_fate == "killed":
            session.kill()
        await asyncio.sleep(1.0)
        redis_server.start()  # same port, same directory: the AOF is replayed
        if session_fate == "killed":
            session.start()
        await asyncio.wait_for(asyncio.gather(*playing), timeout=120)
    finally:
        for task in playing:
            task.cancel()
        for service in (gateway, session, engine):
            service.stop()

    channel = grpc_channel(session.port)
    session.start()  # the checks read the record through a fresh session on the same Redis
    try:
        stub = pb_grpc.SessionServiceStub(channel)
        assert sum(len(p.acked) for p in everyone) > acked_before, "play went on after the restart"
        for room_id, players in tables:
            replay = await assert_room_intact(stub, room_id)
            for player in players:
                assert not player.repeated, "no event delivered twice"
                assert player.player_id is not None
                assert_acked_moves_in_replay(replay, player.player_id, player.acked)
    finally:
        await channel.close(None)
        session.stop()
        redis_server.stop()
