"""The lobby's room list through a real gateway: waiting rooms and running games, newest first."""

from __future__ import annotations

import pytest

from ninetynine.gateway.server import RunningGateway
from tests.gateway.conftest import WsFactory


@pytest.mark.turn_time_scale(1.0)  # the game must still run when the list is read
async def test_the_lobby_lists_a_new_room_first_and_a_running_game_to_watch(
    gateway: RunningGateway, ws_client: WsFactory
) -> None:
    players = await ws_client(gateway)
    game = await players.request(
        {"type": "createRoom", "id": 1, "name": "지호", "seats": 2, "options": {"mode": "kr-product"}}
    )
    await players.request({"type": "addBot", "id": 2})
    started = await players.request({"type": "startGame", "id": 3})
    assert started["room"]["phase"] == "playing"
    host = await ws_client(gateway)
    waiting = await host.request({"type": "createRoom", "id": 1, "name": "민서", "seats": 4})

    visitor = await ws_client(gateway)
    listed = await visitor.request({"type": "listRooms", "id": "list"})
    summaries = [(r["roomId"], r["phase"]) for r in listed["rooms"]]
    assert summaries == [(waiting["roomId"], "waiting"), (game["roomId"], "playing")]
    watching = await visitor.request({"type": "spectate", "id": "watch", "roomId": game["roomId"]})
    assert watching["type"] == "joined" and watching["role"] == "spectator"
