"""Two session replicas on one Redis behind one gateway; one is SIGKILLed mid-game (issue 7).

The gateway reaches the replicas round robin and carries the clients' room streams over a few
shared SubscribeMany calls. The replica that carries room streams is killed and stays dead: each
broken subscription resubscribes from its last seq on the survivor, which also takes over the
dead replica's deadlines (bot moves and turn timeouts).

What a user would notice is asserted: every game finishes, nothing acknowledged is lost, each
player's stream has no event missing or repeated, and the deadlines that fired after the kill
were at most ``LATE_MS`` past due.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import aiohttp
import grpc

from ninetynine.session.deadlines import (
    DEFAULT_LEASE_MS,
    DEFAULT_TURN_SECONDS,
    SHORT_TURN_SECONDS,
    TIMEOUTS_BEFORE_SHORT,
)
from ninetynine.session.v1 import session_service_pb2 as pb
from ninetynine.session.v1 import session_service_pb2_grpc as pb_grpc
from tests.faults.checks import assert_player_saw_the_game, assert_room_intact
from tests.faults.players import WsPlayer
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
# In these rooms a third human takes a seat and walks away: its turns time out, before and after
# the kill, so the survivor has turn timeouts to fire, not only bot moves.
ROOMS_WITH_ABSENT_PLAYER = 2
SCALE = 0.05  # 15 s turns last 750 ms, 3 s ones 150 ms
BOT_MS = 5
LONG_GAME: dict[str, object] = {"lives": 3}
# Issue 7: after a replica dies, the other fires its deadlines within 2 s of due.
LATE_MS = 2000
# A deadline the killed replica had claimed (it was firing it) waits for that claim's lease to run
# out: the default lease (1000 ms) keeps that within 2 s; the old 3000 ms one did not.
assert DEFAULT_LEASE_MS < LATE_MS


async def test_survivor_takes_over_rooms_streams_and_deadlines_of_a_killed_replica(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    store, prefix = redis_store_url()
    engine, replicas, gateway = replica_stack(tmp_path, store, scale=SCALE, bot_ms=BOT_MS)
    services: list[Service] = [engine, *replicas, gateway]
    playing: list[asyncio.Task[None]] = []
    channel: grpc.aio.Channel | None = None
    try:
        for service in services:
            service.start()
        tables: list[tuple[str, list[WsPlayer]]] = []
        for i in range(ROOMS):
            absent = i < ROOMS_WITH_ABSENT_PLAYER
            room_id, players = await open_table(
                http, lambda: gateway.http_port, humans=3 if absent else 2, bots=1, options=LONG_GAME
            )
            if absent:
                gone = players.pop()
                assert gone.client is not None
                await gone.client.ws.close()
            tables.append((room_id, players))
        everyone = [p for _, players in tables for p in players]
        for player in everyone:
            player.retry_delay_s = 0.3
        playing = [asyncio.create_task(p.play_to_the_end()) for p in everyone]
        await wait_until(lambda: all(len(p.acked) >= 2 for p in everyone), timeout=60)

        # Kill the replica that carries the room streams (the one with more), so that the shared
        # calls on it break and their subscriptions must move to the survivor.
        streams = [await _subscribers(http, replica) for replica in replicas]
        victim = max(range(2), key=lambda i: streams[i])
        assert streams[victim] > 0, f"no room stream on either replica: {streams}"
        survivor = replicas[1 - victim]
        killed_at_ms = time.time() * 1000
        replicas[victim].kill()
        await asyncio.wait_for(asyncio.gather(*playing), timeout=120)
        timeouts_fired, timeouts_in_time = await _lateness_buckets(http, survivor)

        channel = grpc_channel(survivor.port)
        stub = pb_grpc.SessionServiceStub(channel)
        late: list[tuple[int, str, str]] = []  # (ms past due, source, room) of each deadline after the kill
        for room_id, players in tables:
            replay = await assert_room_intact(stub, room_id)
            for player in players:
                await assert_player_saw_the_game(stub, replay, player)
            late += [(ms, source, room_id) for ms, source in _deadline_lateness(replay, killed_at_ms)]
    finally:
        for task in playing:
            task.cancel()
        if channel is not None:
            await channel.close(None)
        for service in reversed(services):
            service.stop()
        delete_redis_keys(prefix)

    assert {source for _, source, _ in late} == {"bot", "timeout"}, "the survivor fired both kinds"
    # A fire starts after its due time: a negative value would mean the due times are derived wrong.
    assert min(late)[0] >= 0, f"a deadline fired before it was due: {min(late)}"
    worst = max(late)
    print(f"{len(late)} deadlines fired after the kill; the latest {worst[0]} ms past due ({worst[1]})")
    assert worst[0] <= LATE_MS, f"a deadline fired {worst[0]} ms past due ({worst[1]}, room {worst[2]})"
    # The survivor's own measure of its timeouts (due -> durable); its buckets jump from 1 to 2.5 s.
    late_timeouts = timeouts_fired - timeouts_in_time
    assert timeouts_fired > 0, "the survivor fired turn timeouts"
    assert not late_timeouts, f"{late_timeouts} of {timeouts_fired} timeouts were > 2.5 s late"


async def _subscribers(http: aiohttp.ClientSession, replica: Service) -> float:
    """Open room streams on the replica (each subscription of a SubscribeMany call counts)."""
    for line in await metrics_lines(http, replica):
        if line.startswith("ninetynine_session_subscribers "):
            return float(line.split()[1])
    raise AssertionError("no ninetynine_session_subscribers gauge")


async def _lateness_buckets(http: aiohttp.ClientSession, replica: Service) -> tuple[float, float]:
    """(all, at most 2.5 s late) turn timeouts the replica fired, from its lateness histogram."""
    name = "ninetynine_session_deadline_lateness_seconds"
    values = {}
    for line in await metrics_lines(http, replica):
        if line.startswith((f"{name}_count ", f'{name}_bucket{{le="2.5"}} ')):
            key, value = line.rsplit(" ", 1)
            values[key] = float(value)
    return values[f"{name}_count"], values[f'{name}_bucket{{le="2.5"}}']


def _deadline_lateness(replay: pb.GetReplayResponse, after_ms: float) -> list[tuple[int, str]]:
    """How late (ms) each bot move and turn timeout that fired after ``after_ms`` was.

    The session sets a turn's deadline when the move before commits, at that move's ``at_ms``: a
    bot's is ``BOT_MS`` later, a human's ``turn_seconds`` later on the scaled clock (3 s after
    ``TIMEOUTS_BEFORE_SHORT`` timeouts in a row, which ``TimeoutApplied.consecutive`` counts).
    """
    timeouts = iter(e.timeout_applied for e in replay.events if e.WhichOneof("kind") == "timeout_applied")
    out: list[tuple[int, str]] = []
    for i, move in enumerate(replay.moves):
        if move.source == "bot":
            turn_ms = BOT_MS
        elif move.source == "timeout":
            in_a_row = next(timeouts).consecutive - 1  # before this one
            seconds = SHORT_TURN_SECONDS if in_a_row >= TIMEOUTS_BEFORE_SHORT else DEFAULT_TURN_SECONDS
            turn_ms = round(seconds * 1000 * SCALE)
        else:
            continue
        if i > 0 and move.at_ms > after_ms:
            out.append((move.at_ms - (replay.moves[i - 1].at_ms + turn_ms), move.source))
    return out
