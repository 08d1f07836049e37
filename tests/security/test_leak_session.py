"""Leak test through the real engine, session and gateway processes.

Two humans, a bot and a spectator per game; every WebSocket message each of them receives is
kept. After the game the replay (everything revealed) says when each card became known to whom:
dealt or drawn to a player, or played face up. A message at seq ``s`` may only name a card its
viewer knew by ``s``, a ``cardDrawn`` shows its card only to the drawer, and the seed appears only
from ``gameFinished`` on. ``LEAK_SESSION_GAMES`` (default 12) and ``LEAK_SESSION_SLOW_GAMES``
(default 300, ``make test-slow``) set the number of games.
"""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.faults.players import WsPlayer
from tests.faults.stack import engine_service, gateway_service, session_service, ws_connect
from tests.faults.tables import open_table

CI_GAMES = int(os.environ.get("LEAK_SESSION_GAMES", "12"))
SLOW_GAMES = int(os.environ.get("LEAK_SESSION_SLOW_GAMES", "300"))
AT_ONCE = 6
CARD_ID = re.compile(r'"((?:N(?:[1-8]|10)|PM(?:9|10)|Z|J)-[0-9]{1,2}|(?:A|[2-9]|10|J|Q|K)[SHDC]-[12])"')


def _knowledge(replay: dict[str, Any]) -> tuple[dict[str, int], dict[str, dict[str, int]], int]:
    """(card -> seq first played face up, player -> card -> seq first held, seq of gameFinished)."""
    public: dict[str, int] = {}
    held: dict[str, dict[str, int]] = {}
    finished_at = 0
    for item in replay["events"]:
        seq, event = item["seq"], item["event"]
        if event["type"] == "cardPlayed":
            public.setdefault(event["cardId"], seq)
        elif event["type"] == "handDealt":
            for card in event["cards"]:
                held.setdefault(event["player"], {}).setdefault(card["id"], seq)
        elif event["type"] == "cardDrawn" and "card" in event:
            held.setdefault(event["player"], {}).setdefault(event["card"]["id"], seq)
        elif event["type"] == "gameFinished":
            finished_at = seq
    return public, held, finished_at


def _assert_no_leak(
    messages: list[dict[str, Any]], viewer: str | None, replay: dict[str, Any], seed: str
) -> int:
    public, held, finished_at = _knowledge(replay)
    mine = held.get(viewer or "", {})
    checked = 0
    for message in messages:
        if message["type"] not in ("event", "view", "snapshot"):
            continue
        seq = message["seq"]
        text = str(message)
        for card in CARD_ID.findall(text.replace("'", '"')):
            known = min(public.get(card, 1 << 60), mine.get(card, 1 << 60))
            assert known <= seq, f"{viewer or 'spectator'} sees {card} at seq {seq}: {text[:300]}"
        if message["type"] == "event" and message["event"]["type"] == "cardDrawn":
            assert "card" not in message["event"] or message["event"]["player"] == viewer, message
        if seq < finished_at:
            assert seed not in text, f"the seed before the end, seq {seq}"
        checked += 1
    return checked


async def _one_game(http: aiohttp.ClientSession, port: int) -> int:
    room_id, players = await open_table(http, lambda: port, humans=2, bots=1)
    spectator = WsPlayer(http, lambda: port)
    spectator.client = await ws_connect(http, port)
    await spectator.client.request({"type": "spectate", "id": "s", "roomId": room_id})

    async def watch() -> None:
        assert spectator.client is not None
        while not spectator.finished:
            spectator.take(await spectator.client.recv())

    await asyncio.wait_for(asyncio.gather(watch(), *(p.play_to_the_end() for p in players)), 120)
    assert players[0].client is not None
    replay = await players[0].client.request({"type": "getReplay", "id": "r", "roomId": room_id})
    assert replay["type"] == "replay", replay
    with pytest.raises(AssertionError):  # the check bites: a player's own stream is no spectator's
        _assert_no_leak(players[0].messages, None, replay, replay["seed"])
    checked = 0
    for viewer in (*players, spectator):
        checked += _assert_no_leak(viewer.messages, viewer.player_id, replay, replay["seed"])
        assert viewer.client is not None
        await viewer.client.ws.close()
    return checked


@pytest.mark.parametrize("games", [CI_GAMES, pytest.param(SLOW_GAMES, marks=pytest.mark.slow, id="hundreds")])
async def test_no_message_to_a_player_or_spectator_leaks(games: int, tmp_path: Path) -> None:
    engine = engine_service(tmp_path)
    engine.start()
    session = session_service(tmp_path, engine.port, f"sqlite:///{tmp_path}/rooms.db", scale=0.05)
    session.start()
    gateway = gateway_service(tmp_path, session.port)
    gateway.start()
    checked = 0
    try:
        async with aiohttp.ClientSession() as http:
            for start in range(0, games, AT_ONCE):
                batch = [_one_game(http, gateway.http_port) for _ in range(min(AT_ONCE, games - start))]
                checked += sum(await asyncio.gather(*batch))
    finally:
        for service in (gateway, session, engine):
            service.stop()
    assert checked > games * 20, "every game's messages were checked"
