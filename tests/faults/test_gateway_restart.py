"""The gateway is SIGKILLed mid-game; clients reconnect to a NEW gateway process and resume.

A reference connection of the same seat on a second gateway (that never dies) sees the full
stream; the reconnecting client's events, before and after each crash, must equal it exactly:
nothing lost, nothing repeated.
"""

from __future__ import annotations

import asyncio
import functools
from pathlib import Path

import aiohttp

from tests.faults.players import WsPlayer
from tests.faults.stack import engine_service, gateway_service, session_service, wait_until
from tests.faults.tables import open_table

CRASHES = 2


async def test_clients_resume_on_a_new_gateway_without_losing_or_repeating_events(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    engine = engine_service(tmp_path)
    engine.start()
    session = session_service(tmp_path, engine.port, f"sqlite:///{tmp_path}/rooms.db", scale=0.2)
    session.start()
    gateways = [gateway_service(tmp_path, session.port, label="gateway-0")]
    gateways[0].start()
    witness_gateway = gateway_service(tmp_path, session.port, label="witness")
    witness_gateway.start()
    tasks: list[asyncio.Task[None]] = []
    try:
        room_id, players = await open_table(
            http, lambda: gateways[-1].http_port, humans=2, bots=2, options={"lives": 3}
        )
        witnesses = []
        for player in players:
            witness = WsPlayer(http, lambda: witness_gateway.http_port, token=player.token)
            await witness.resume()  # from seq 0: the whole stream of that seat
            witness.reconnects = 0
            witnesses.append(witness)
        tasks = [asyncio.create_task(p.play_to_the_end()) for p in players]
        tasks += [asyncio.create_task(_watch(w)) for w in witnesses]
        for crash in range(CRASHES):
            await wait_until(functools.partial(_each_acked, players, 2 * (crash + 1)), timeout=60)
            gateways[-1].kill()
            await asyncio.sleep(0.3)
            fresh = gateway_service(tmp_path, session.port, label=f"gateway-{crash + 1}")
            fresh.start()  # new process, new ports: the players' port lookup now answers this one
            gateways.append(fresh)
        await asyncio.wait_for(asyncio.gather(*tasks), timeout=120)
    finally:
        for task in tasks:
            task.cancel()
        for service in (*gateways, witness_gateway, session, engine):
            service.stop()

    for player, witness in zip(players, witnesses, strict=True):
        # A crash after the player's gameFinished is not one it had to live through.
        assert player.reconnects >= 1, "the player did live through a crash"
        assert not player.repeated, "a resumed stream repeats nothing"
        assert player.event_seqs == witness.event_seqs, "a resumed stream loses nothing"
        assert witness.reconnects == 0 and witness.finished
    assert room_id


def _each_acked(players: list[WsPlayer], count: int) -> bool:
    return all(len(p.acked) >= count for p in players)


async def _watch(witness: WsPlayer) -> None:
    """Read the reference stream to the end; it never plays (its seat's player does)."""
    assert witness.client is not None
    while not witness.finished:
        witness.take(await witness.client.recv())
