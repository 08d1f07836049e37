"""Two session replicas on one Redis behind one gateway; A is SIGKILLed, restarted, then B (issue 13).

This is the failover a player must not see: when A dies the gateway's calls move to B; A comes back
on its address, and B dies soon after, while the gateway may not have reconnected to A yet (its
reconnect backoff from A's death still runs). The gateway then has no ready replica for a moment
although one is up, and without waiting for one its calls failed UNAVAILABLE at once (about 0.75 s
of errors in the outside report).

What a user would notice is asserted: no player and no lobby client (which keeps asking for the
room list meanwhile) is sent any error frame; every game finishes; nothing
acknowledged is lost; each player's stream has no event missing or repeated.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import aiohttp
import grpc

from ninetynine.session.v1 import session_service_pb2_grpc as pb_grpc
from tests.faults.checks import assert_player_saw_the_game, assert_room_intact
from tests.faults.stack import Service, grpc_channel, replica_stack, wait_until, ws_connect
from tests.faults.tables import open_table
from tests.ops.stack import delete_redis_keys, redis_store_url

ROOMS = 3
# 15 s turns: humans here play at once, so no turn times out and any error a player sees is one
# that a killed replica caused.
SCALE = 1.0
BOT_MS = 5
LONG_GAME: dict[str, object] = {"lives": 3}
# A pause before each play, so that the games outlast two kills and a restart on a loaded box.
THINK_S = 0.05


async def test_no_player_notices_two_replicas_killed_in_turn(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    store, prefix = redis_store_url()
    engine, replicas, gateway = replica_stack(tmp_path, store, scale=SCALE, bot_ms=BOT_MS)
    services: list[Service] = [engine, *replicas, gateway]
    playing: list[asyncio.Task[None]] = []
    lobby: asyncio.Task[list[dict[str, Any]]] | None = None
    channel: grpc.aio.Channel | None = None
    try:
        for service in services:
            service.start()
        tables = [
            await open_table(http, lambda: gateway.http_port, humans=2, bots=1, options=LONG_GAME)
            for _ in range(ROOMS)
        ]
        everyone = [p for _, players in tables for p in players]
        for player in everyone:
            player.think_s = THINK_S
        playing = [asyncio.create_task(p.play_to_the_end()) for p in everyone]
        lobby = asyncio.create_task(_lobby_client(http, gateway.http_port))
        await wait_until(lambda: all(len(p.acked) >= 2 for p in everyone), timeout=60)

        def acked() -> int:
            return sum(len(p.acked) for p in everyone)

        first, second = replicas
        started = time.monotonic()
        first.kill()
        before = acked()
        await wait_until(lambda: acked() >= before + len(everyone), timeout=60)
        await asyncio.to_thread(first.start)  # back on its port, serving
        back = time.monotonic() - started
        second.kill()  # at once: the gateway may still be waiting to reconnect to the first
        assert not all(p.finished for p in everyone), "the games ended before the second kill"
        before = acked()
        await wait_until(lambda: acked() >= before + len(everyone), timeout=60)
        await asyncio.to_thread(second.start)
        await asyncio.wait_for(asyncio.gather(*playing), timeout=180)
        ended = time.monotonic() - started
        lobby.cancel()
        lobby_errors = await lobby

        channel = grpc_channel(first.port)
        stub = pb_grpc.SessionServiceStub(channel)
        for room_id, players in tables:
            replay = await assert_room_intact(stub, room_id)
            for player in players:
                assert not player.errors, f"{player.player_id} was sent errors: {player.errors}"
                await assert_player_saw_the_game(stub, replay, player)
        assert not lobby_errors, f"the lobby client was sent errors: {lobby_errors}"
        retried = gateway.log_path.read_text().count("request resent on a new shared stream")
        wait = max(p.longest_wait_s for p in everyone)
        print(
            f"first replica back {back:.1f} s after its kill, games over {ended:.1f} s; {retried} plays "
            f"resent; the longest a play waited for its answer: {wait:.2f} s"
        )
    finally:
        for task in playing:
            task.cancel()
        if lobby is not None:
            lobby.cancel()
        if channel is not None:
            await channel.close(None)
        for service in reversed(services):
            service.stop()
        delete_redis_keys(prefix)


async def _lobby_client(http: aiohttp.ClientSession, port: int) -> list[dict[str, Any]]:
    """Ask for the room list over and over; the error frames it was sent."""
    errors: list[dict[str, Any]] = []
    client = await ws_connect(http, port)
    try:
        for n in range(1_000_000):
            reply = await client.request({"type": "listRooms", "id": f"q{n}"})
            if reply["type"] == "error":
                errors.append(reply)
            await asyncio.sleep(0.1)  # within the rate limit (20 a second)
    except asyncio.CancelledError:
        pass
    finally:
        await client.ws.close()
    return errors
