"""Set up rooms through the gateway: a host, more humans, bots, a start; returns the players."""

from __future__ import annotations

from collections.abc import Callable

import aiohttp

from tests.faults.players import WsPlayer


async def open_table(
    http: aiohttp.ClientSession,
    gateway_port: Callable[[], int],
    *,
    humans: int = 2,
    bots: int = 1,
    options: dict[str, object] | None = None,
) -> tuple[str, list[WsPlayer]]:
    """A started room with ``humans`` WebSocket players (the first is the host) and ``bots``."""
    players = [WsPlayer(http, gateway_port) for _ in range(humans)]
    host = await players[0].connect()
    await host.request({"type": "hello", "id": "h", "lang": "en"})
    create = {"type": "createRoom", "id": "c", "name": "Host", "seats": humans + bots}
    if options:
        create["options"] = options
    joined = await host.request(create)
    assert joined["type"] == "joined", joined
    room_id: str = joined["roomId"]
    players[0].token, players[0].player_id = joined["token"], joined["playerId"]
    for i, player in enumerate(players[1:], start=1):
        client = await player.connect()
        seated = await client.request({"type": "joinRoom", "id": "j", "roomId": room_id, "name": f"P{i}"})
        assert seated["type"] == "joined", seated
        player.token, player.player_id = seated["token"], seated["playerId"]
    for _ in range(bots):
        added = await host.request({"type": "addBot", "id": "b"})
        assert added["type"] == "room", added
    started = await host.request({"type": "startGame", "id": "s"})
    assert started["type"] == "room" and started["room"]["phase"] == "playing", started
    for player in players:
        # Game messages that arrived while the setup requests waited for their replies count too.
        assert player.client is not None
        for message in player.client.seen:
            player.take(message)
        player.client.seen.clear()
    return room_id, players
