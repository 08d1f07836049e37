"""How each move was made (``source`` of ``cardPlayed``) reaches WebSocket clients as the session stamped it.

The host never plays, so its turns end in the session's timeout move; the bot plays its own. A
client following the game live, and clients resuming from the start and from right before a
timeout's ``cardPlayed`` (where the session's own ``timeout_applied`` event is not replayed),
all read the same source on every move.
"""

from __future__ import annotations

from typing import Any

from ninetynine.gateway.server import RunningGateway
from tests.gateway.conftest import WsClient, WsFactory


def _played(client: WsClient) -> dict[int, dict[str, Any]]:
    return {
        m["seq"]: m["event"]
        for m in client.seen
        if m["type"] == "event" and m["event"]["type"] == "cardPlayed"
    }


async def _resume(
    ws_client: WsFactory, gateway: RunningGateway, token: str, after: int, last: int
) -> WsClient:
    client = await ws_client(gateway)
    await client.request({"type": "hello", "id": 1})
    resumed = await client.request({"type": "resume", "id": 2, "token": token, "afterSeq": after})
    assert resumed["type"] == "joined"
    await client.until(lambda m: m["type"] == "event" and m["seq"] >= last)
    return client


async def test_bot_and_timeout_moves_carry_their_source_live_and_replayed(
    gateway: RunningGateway, ws_client: WsFactory
) -> None:
    host = await ws_client(gateway)
    await host.request({"type": "hello", "id": 1})
    joined = await host.request({"type": "createRoom", "id": 2, "name": "지호", "seats": 2})
    room = await host.request({"type": "addBot", "id": 3})
    bot = next(seat["playerId"] for seat in room["room"]["seats"] if seat["bot"])
    await host.request({"type": "startGame", "id": 4})

    def expected(event: dict[str, Any]) -> str:
        return "bot" if event["player"] == bot else "timeout"

    while True:  # until both kinds of move were seen, or the game ended
        message = await host.recv()
        sources = {e.get("source") for e in _played(host).values()}
        if {"bot", "timeout"} <= sources or (
            message["type"] == "event" and message["event"]["type"] == "gameFinished"
        ):
            break
    live = _played(host)
    assert {"bot", "timeout"} <= {e.get("source") for e in live.values()}, live
    assert all(e.get("source") == expected(e) for e in live.values()), live

    last = max(live)
    timeout_seq = min(seq for seq, e in live.items() if e["source"] == "timeout")
    for after in (0, timeout_seq - 1):
        again = _played(await _resume(ws_client, gateway, joined["token"], after, last))
        assert timeout_seq in again, f"resumed after {after}: the timeout's move is replayed"
        for seq, event in again.items():
            if seq <= last:
                assert event.get("source") == live[seq]["source"], (after, seq, event)
