"""Two session replicas on one Redis behind one gateway; one is SIGTERMed (not killed) mid-game.

A rolling update or a node drain stops a replica with SIGTERM and a grace period. The gateway's
shared PlayMany and SubscribeMany calls on that replica are drained at once: the plays it is
running are answered, the plays it had not taken up are sent again by the gateway on a new call
(to the other replica), and the room streams resubscribe there from their last seq. So the
replica is gone long before its grace period (30 s here) and no player notices anything.

What a user (and an operator) would notice is asserted: the stopped replica exits 0 within
``EXITS_WITHIN_S``; no player is sent any error; every game finishes; nothing acknowledged is
lost; each player's stream has no event missing or repeated. Before the drain, the replica held
its calls for the whole grace period and then cut them off: the plays in flight then failed
UNAVAILABLE and the players had to resend them.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from pathlib import Path

import aiohttp
import grpc

from ninetynine.session.playmany import PLAY_METHOD
from ninetynine.session.v1 import session_service_pb2_grpc as pb_grpc
from tests.faults.checks import assert_player_saw_the_game, assert_room_intact
from tests.faults.stack import (
    Service,
    grpc_channel,
    metrics_lines,
    replica_stack,
    wait_until,
)
from tests.faults.tables import open_table
from tests.ops.stack import delete_redis_keys, redis_store_url

ROOMS = 4
GRACE_S = 30.0
# Far below the grace period: the replica drained its calls instead of waiting for them to end.
EXITS_WITHIN_S = 10.0
# 15 s turns: humans here play at once, so no turn times out and any error a player sees is one
# that the stopping replica caused.
SCALE = 1.0
BOT_MS = 5
LONG_GAME: dict[str, object] = {"lives": 3}


async def test_a_replica_stopped_with_sigterm_drains_and_no_player_notices(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    store, prefix = redis_store_url()
    engine, replicas, gateway = replica_stack(tmp_path, store, scale=SCALE, bot_ms=BOT_MS, grace=GRACE_S)
    services: list[Service] = [engine, *replicas, gateway]
    playing: list[asyncio.Task[None]] = []
    channel: grpc.aio.Channel | None = None
    try:
        for service in services:
            service.start()
        tables = [
            await open_table(http, lambda: gateway.http_port, humans=2, bots=1, options=LONG_GAME)
            for _ in range(ROOMS)
        ]
        everyone = [p for _, players in tables for p in players]
        playing = [asyncio.create_task(p.play_to_the_end()) for p in everyone]
        await wait_until(lambda: all(len(p.acked) >= 2 for p in everyone), timeout=60)

        # Stop the replica that carries more of the gateway's plays, while they go on.
        carried = [await _plays_carried(http, replica) for replica in replicas]
        victim = replicas[max(range(2), key=lambda i: carried[i])]
        survivor = replicas[1 - replicas.index(victim)]
        assert max(carried) > 0, f"no PlayMany play on either replica: {carried}"
        acked_before = sum(len(p.acked) for p in everyone)
        stopped_at = time.monotonic()
        victim.terminate()
        assert victim.proc is not None
        try:
            code = await asyncio.to_thread(victim.proc.wait, EXITS_WITHIN_S)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"the SIGTERMed replica still runs after {EXITS_WITHIN_S} s (grace {GRACE_S} s): "
                "its shared calls were not drained; its log ends:\n"
                + "\n".join(victim.log_path.read_text(errors="replace").splitlines()[-40:])
            ) from None
        took = time.monotonic() - stopped_at
        assert code == 0, f"the replica exited {code}"
        await asyncio.wait_for(asyncio.gather(*playing), timeout=60)
        acked_after = sum(len(p.acked) for p in everyone) - acked_before
        assert acked_after > 0, "the games went on after the SIGTERM"

        channel = grpc_channel(survivor.port)
        stub = pb_grpc.SessionServiceStub(channel)
        for room_id, players in tables:
            replay = await assert_room_intact(stub, room_id)
            for player in players:
                assert not player.errors, f"{player.player_id} was sent errors: {player.errors}"
                await assert_player_saw_the_game(stub, replay, player)
        retried = gateway.log_path.read_text().count("request resent on a new shared stream")
        print(f"replica gone {took:.2f} s after SIGTERM; {acked_after} plays acked since; {retried} retried")
    finally:
        for task in playing:
            task.cancel()
        if channel is not None:
            await channel.close(None)
        for service in reversed(services):
            service.stop()
        delete_redis_keys(prefix)


async def _plays_carried(http: aiohttp.ClientSession, replica: Service) -> float:
    """Plays the replica took up from PlayMany calls (its RPC histogram's PlayMany/Play counts)."""
    lines = await metrics_lines(http, replica)
    prefix = "ninetynine_session_rpc_duration_seconds_count{"
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in lines
        if line.startswith(prefix) and f'method="{PLAY_METHOD}"' in line
    )
