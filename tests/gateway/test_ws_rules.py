"""Presets over the WebSocket JSON protocol: listRules, and createRoom with rules and overrides.

Every frame read is checked against the protocol's JSON Schema by ``ws_client``; a frame the schema
refuses is answered MALFORMED_MESSAGE before the session ever sees it.
"""

from __future__ import annotations

from typing import Any

from ninetynine.engine.rules.presets import preset_names
from ninetynine.gateway.server import RunningGateway
from tests.gateway.conftest import WsClient, WsFactory
from tests.gateway.test_ws_contract import _play_to_the_end


async def _hello(client: WsClient, lang: str = "en") -> None:
    assert (await client.request({"type": "hello", "id": 0, "lang": lang}))["type"] == "welcome"


async def test_list_rules_names_every_preset_with_both_summaries(
    gateway: RunningGateway, ws_client: WsFactory
) -> None:
    client = await ws_client(gateway)
    await _hello(client)
    listed = await client.request({"type": "listRules", "id": "r"})
    assert listed["type"] == "rulesList" and listed["id"] == "r"
    presets = {p["name"]: p for p in listed["presets"]}
    assert list(presets) == list(preset_names())
    online = presets["na-online"]
    assert online["thresholds"] == [33, 66, 99]
    assert online["summary"].startswith("온라인") and online["summaryEn"].startswith("Online")
    assert (presets["ru-99"]["minPlayers"], presets["ru-99"]["maxPlayers"]) == (2, 5)
    assert presets["na-standard"]["thresholds"] == [] and presets["na-standard"]["source"]
    assert all(p["overrides"] == {} for p in presets.values())


async def test_a_room_with_a_preset_and_a_house_rule_plays_to_the_end(
    gateway: RunningGateway, ws_client: WsFactory
) -> None:
    client = await ws_client(gateway)
    await _hello(client)
    joined = await client.request(
        {
            "type": "createRoom",
            "id": 1,
            "name": "Sam",
            "seats": 3,
            "rules": "na-online",
            "overrides": {"tokens": "3"},
        }
    )
    assert joined["type"] == "joined", joined
    room = await client.until(lambda m: m["type"] == "room")
    rules: dict[str, Any] = room["room"]["rules"]
    assert rules["name"] == "na-online" and rules["overrides"] == {"tokens": "3"}
    assert rules["thresholds"] == [33, 66, 99]
    for i in range(2):
        await client.request({"type": "addBot", "id": f"b{i}"})
    listed = await client.request({"type": "listRooms", "id": "l"})
    mine = next(r for r in listed["rooms"] if r["roomId"] == joined["roomId"])
    assert mine["rules"] == "na-online"
    await client.request({"type": "startGame", "id": "s"})
    finished = await _play_to_the_end(client, joined["playerId"])
    assert len(finished["ranking"]) == 3

    events = [m["event"] for m in client.seen if m["type"] == "event"]
    started = next(e for e in events if e["type"] == "gameStarted")
    assert started["rules"] == "na-online" and started["lives"] == 3
    first_view = next(m["view"] for m in client.seen if m["type"] == "view")
    assert first_view["rules"] == "na-online"
    assert all(p["lives"] <= 3 for p in first_view["players"])


async def test_create_room_refuses_bad_rules_in_the_client_language(
    gateway: RunningGateway, ws_client: WsFactory
) -> None:
    client = await ws_client(gateway)
    await _hello(client)
    base = {"type": "createRoom", "name": "Sam", "seats": 3}

    unknown = await client.request({**base, "id": 1, "rules": "no-such-game"})
    assert unknown["type"] == "error" and unknown["reason"] == "UNKNOWN_RULES", unknown
    assert "no-such-game" in unknown["message"]
    bad_key = await client.request({**base, "id": 2, "rules": "na-standard", "overrides": {"teleport": "1"}})
    assert bad_key["reason"] == "INVALID_OVERRIDE", bad_key
    seats = await client.request({**base, "id": 3, "seats": 6, "rules": "ru-99"})
    assert seats["reason"] == "SEATS_OUTSIDE_RULES", seats
    assert seats["message"] == "ru-99 is for 2 to 5 players, not 6 seats"

    # What the schema bounds never reaches the session.
    for n, frame in enumerate(
        (
            {**base, "rules": "Not A Name"},
            {**base, "rules": "na-standard", "overrides": {f"k{i}": "1" for i in range(17)}},
            {**base, "rules": "na-standard", "overrides": {"tokens": "9" * 33}},
            {**base, "rules": "na-standard", "overrides": {"tokens": 5}},
        )
    ):
        refused = await client.request({**frame, "id": f"m{n}"})
        assert refused["reason"] == "MALFORMED_MESSAGE", refused
    # Still unbound: a good room can be made on the same connection.
    assert (await client.request({**base, "id": 9, "rules": "ru-99"}))["type"] == "joined"

    korean = await ws_client(gateway)
    await _hello(korean, "ko")
    refused = await korean.request({**base, "id": 1, "seats": 6, "rules": "ru-99"})
    assert refused["message"] == "ru-99 규칙은 2~5명이 해요 (자리 6개)"
