"""Soak: games back to back through the gateway with random disconnects; 0 stuck games, flat memory.

Runs ``SOAK_SECONDS`` (default 1800 = 30 min; e.g. ``SOAK_SECONDS=60 make test-slow`` for a short
run) with ``SOAK_TABLES`` tables at once. RSS of the engine, session and gateway is sampled every
``SOAK_SAMPLE_SECONDS``; the last samples may not grow past the warmed-up level by more than 10 %
plus 10 MiB (allocator noise). A 30-minute run grew the session 5 % after warm-up; with every
finished room kept in the session's cache it had grown 30 % (159.0 -> 206.4 MiB), which this fails.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import aiohttp
import pytest

from ninetynine.session.v1 import session_service_pb2_grpc as pb_grpc
from tests.faults.checks import assert_room_intact
from tests.faults.stack import Service, engine_service, gateway_service, grpc_channel, session_service
from tests.faults.tables import open_table

SOAK_SECONDS = float(os.environ.get("SOAK_SECONDS", "1800"))
SOAK_TABLES = int(os.environ.get("SOAK_TABLES", "8"))
SAMPLE_SECONDS = float(os.environ.get("SOAK_SAMPLE_SECONDS", "5"))
GAME_TIMEOUT_S = 180.0


async def _table_loop(
    http: aiohttp.ClientSession, gateway: Service, stop_at: float, finished: list[str], stuck: list[str]
) -> None:
    while time.monotonic() < stop_at:
        room_id, players = await open_table(http, lambda: gateway.http_port, humans=2, bots=2)
        for player in players:
            player.drop_probability = 0.01
        try:
            await asyncio.wait_for(asyncio.gather(*(p.play_to_the_end() for p in players)), GAME_TIMEOUT_S)
        except TimeoutError:
            stuck.append(room_id)
        else:
            finished.append(room_id)
        for player in players:
            if player.client is not None:
                await player.client.ws.close()


@pytest.mark.slow
@pytest.mark.timeout(int(SOAK_SECONDS) + 600)  # the suite's 300 s cap is for ordinary tests
async def test_soak_random_disconnects_no_stuck_game_flat_memory(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    engine = engine_service(tmp_path)
    engine.start()
    session = session_service(tmp_path, engine.port, f"sqlite:///{tmp_path}/rooms.db", scale=0.05)
    session.start()
    gateway = gateway_service(tmp_path, session.port)
    gateway.start()
    services = (engine, session, gateway)
    finished: list[str] = []
    stuck: list[str] = []
    samples: list[tuple[int, ...]] = []
    stop_at = time.monotonic() + SOAK_SECONDS
    try:
        tables = [
            asyncio.create_task(_table_loop(http, gateway, stop_at, finished, stuck))
            for _ in range(SOAK_TABLES)
        ]
        while time.monotonic() < stop_at:
            samples.append(tuple(s.rss_kib() for s in services))
            await asyncio.sleep(SAMPLE_SECONDS)
        await asyncio.wait_for(asyncio.gather(*tables), GAME_TIMEOUT_S + 30)
        samples.append(tuple(s.rss_kib() for s in services))

        channel = grpc_channel(session.port)
        stub = pb_grpc.SessionServiceStub(channel)
        for room_id in finished:
            await assert_room_intact(stub, room_id)
        await channel.close(None)
    finally:
        for service in reversed(services):
            service.stop()

    print(f"soak: {len(finished)} games in {SOAK_SECONDS:.0f} s; RSS KiB samples (engine, session, gateway):")
    print(f"  first {samples[0]}  warmed {samples[len(samples) // 3]}  last {samples[-1]}")
    # The curve at about ten points, MB per service, for docs/performance.md.
    step = max(1, len(samples) // 10)
    for at in [*range(0, len(samples), step), len(samples) - 1]:
        mb = ", ".join(f"{kib / 1024:.1f}" for kib in samples[at])
        print(f"  t={at * SAMPLE_SECONDS:>6.0f} s  RSS MB ({mb})")
    assert not stuck, f"stuck games: {stuck}"
    assert finished, "the soak played games"
    warm = samples[len(samples) // 3 :]
    for index, service in enumerate(services):
        baseline = max(s[index] for s in warm[: max(1, len(warm) // 3)])
        last = warm[-1][index]
        assert last <= baseline * 1.10 + 10 * 1024, f"{service.name} RSS grew {baseline} -> {last} KiB"
