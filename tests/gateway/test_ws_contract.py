"""WebSocket contract tests against real engine, session and gateway servers.

Every frame a client reads here is validated against the protocol's JSON Schema by the
``ws_client`` fixture, so each test also proves the gateway only speaks valid messages.
"""

from __future__ import annotations

from typing import Any

from ninetynine.gateway.server import RunningGateway
from tests.gateway.conftest import WsClient, WsFactory


async def _create_table(client: WsClient, *, bots: int = 2, lang: str = "ko") -> dict[str, Any]:
    welcome = await client.request({"type": "hello", "id": 1, "lang": lang})
    assert welcome["type"] == "welcome" and welcome["lang"] == lang
    joined = await client.request(
        {"type": "createRoom", "id": 2, "name": "지호", "seats": bots + 1, "options": {"mode": "kr-product"}}
    )
    assert joined["type"] == "joined" and joined["role"] == "player" and joined["host"] is True
    for i in range(bots):
        room = await client.request({"type": "addBot", "id": f"bot{i}"})
        assert room["type"] == "room" and len(room["room"]["seats"]) == i + 2
    started = await client.request({"type": "startGame", "id": 3})
    assert started["type"] == "room" and started["room"]["phase"] == "playing"
    return joined


async def _play_to_the_end(client: WsClient, me: str) -> dict[str, Any]:
    """Play the first legal choice whenever the view says it is my turn; returns gameFinished."""
    client_seq = 0
    played_seqs: list[int] = []
    while True:
        message = await client.recv()
        if message["type"] == "event" and message["event"]["type"] == "gameFinished":
            # The batch's view follows its last event.
            await client.until(lambda m: m["type"] == "view" and m["view"]["phase"] == "finished")
            finished: dict[str, Any] = message["event"]
            return finished
        if message["type"] == "view" and message["view"].get("myTurn") and message["view"]["legalPlays"]:
            assert message["view"]["viewer"] == me
            client_seq += 1
            action = message["view"]["legalPlays"][0]["action"]
            await client.send(
                {"type": "play", "id": f"p{client_seq}", "clientSeq": client_seq, "action": action}
            )
        if message["type"] == "played":
            played_seqs.append(message["seq"])
        if message["type"] == "error":
            # The turn may time out between the view and the play: only that refusal is expected.
            assert message["reason"] in ("NOT_YOUR_TURN", "CARD_NOT_IN_HAND"), message


async def test_a_whole_game_against_two_bots(gateway: RunningGateway, ws_client: WsFactory) -> None:
    client = await ws_client(gateway)
    joined = await _create_table(client)
    finished = await _play_to_the_end(client, joined["playerId"])

    assert joined["playerId"] in [r["player"] for r in finished["ranking"]]
    events = [m for m in client.seen if m["type"] == "event"]
    seqs = [m["seq"] for m in events]
    assert seqs == sorted(set(seqs)), "event seqs strictly increase: nothing repeated"
    # The player sees its own hand but never a card drawn by somebody else.
    dealt = [e["event"] for e in events if e["event"]["type"] == "handDealt"]
    assert dealt and all(d["player"] == joined["playerId"] for d in dealt)
    for e in events:
        if e["event"]["type"] == "cardDrawn" and e["event"]["player"] != joined["playerId"]:
            assert "card" not in e["event"]
    sources = {e["event"].get("source") for e in events if e["event"]["type"] == "cardPlayed"}
    assert "bot" in sources
    # Every batch of events is followed by a view of the same seq.
    views = [m for m in client.seen if m["type"] == "view"]
    assert views and views[-1]["view"]["phase"] == "finished"
    assert "seed" in views[-1]["view"] and "result" in views[-1]["view"]
    plays = [m for m in client.seen if m["type"] == "played"]
    mine = [
        e["seq"]
        for e in events
        if e["event"]["type"] == "cardPlayed" and e["event"]["player"] == joined["playerId"]
    ]
    # The session answers the room's seq after the move (its cardPlayed and what it set off).
    assert all(any(seq <= p["seq"] for seq in mine) for p in plays), (
        "every played follows a cardPlayed of mine"
    )

    replay = await client.request({"type": "getReplay", "id": "r", "roomId": joined["roomId"]})
    assert replay["type"] == "replay" and replay["seed"] == finished["seed"]
    assert [e["event"]["type"] for e in replay["events"]][-1] == "gameFinished"


async def test_a_spectator_sees_the_game_but_no_hand(gateway: RunningGateway, ws_client: WsFactory) -> None:
    host = await ws_client(gateway)
    joined = await _create_table(host)
    watcher = await ws_client(gateway)
    spectating = await watcher.request({"type": "spectate", "id": "s", "roomId": joined["roomId"]})
    assert spectating == {**spectating, "role": "spectator", "playerId": None, "host": False}
    await watcher.until(lambda m: m["type"] == "event" and m["event"]["type"] == "gameFinished")

    views = [m["view"] for m in watcher.seen if m["type"] == "view"]
    assert views, "the spectator gets views"
    for view in views:
        assert view["viewer"] is None
        assert "hand" not in view and "legalPlays" not in view and "myTurn" not in view
    for message in watcher.seen:
        if message["type"] == "event":
            assert message["event"]["type"] != "handDealt"
            assert "card" not in message["event"]
    refused = await watcher.request({"type": "play", "id": "x", "clientSeq": 1, "action": {"cardId": "N3-1"}})
    assert refused["type"] == "error" and refused["reason"] == "SPECTATOR_CANNOT_ACT"


async def test_resume_after_a_drop_loses_and_repeats_nothing(
    gateway: RunningGateway, ws_client: WsFactory
) -> None:
    host = await ws_client(gateway)
    joined = await _create_table(host)
    # A second connection of the same seat stays up the whole game: the reference stream.
    reference = await ws_client(gateway)
    again = await reference.request({"type": "resume", "id": "ref", "token": joined["token"], "afterSeq": 0})
    assert again["playerId"] == joined["playerId"]

    # The host reads a few events, then its connection drops without a goodbye.
    for _ in range(6):
        await host.until(lambda m: m["type"] == "event")
    before = [m["seq"] for m in host.seen if m["type"] == "event"]
    await host.ws.close()

    back = await ws_client(gateway)
    resumed = await back.request(
        {"type": "resume", "id": 9, "token": joined["token"], "afterSeq": before[-1]}
    )
    assert (
        resumed["type"] == "joined" and resumed["playerId"] == joined["playerId"] and resumed["host"] is True
    )
    await back.until(lambda m: m["type"] == "event" and m["event"]["type"] == "gameFinished")
    await reference.until(lambda m: m["type"] == "event" and m["event"]["type"] == "gameFinished")

    after = [m["seq"] for m in back.seen if m["type"] == "event"]
    expected = [m["seq"] for m in reference.seen if m["type"] == "event"]
    assert before + after == expected, "nothing lost, nothing repeated"


async def test_bad_frames_get_errors_and_the_connection_survives(
    gateway: RunningGateway, ws_client: WsFactory
) -> None:
    client = await ws_client(gateway)
    await client.request({"type": "hello", "id": 0, "lang": "en"})

    await client.ws.send_str("{not json")
    assert (await client.recv())["reason"] == "MALFORMED_MESSAGE"
    await client.ws.send_str("[1, 2]")
    assert (await client.recv())["reason"] == "MALFORMED_MESSAGE"
    unknown = await client.request({"type": "teleport", "id": "t"})
    assert unknown["reason"] == "UNKNOWN_TYPE" and unknown["metadata"]["type"] == "teleport"
    invalid = await client.request({"type": "play", "id": "z", "clientSeq": 0, "action": {"cardId": "N3-1"}})
    assert invalid["reason"] == "MALFORMED_MESSAGE" and "clientSeq" in invalid["metadata"]["detail"]
    extra = await client.request({"type": "ping", "id": "e", "extra": True})
    assert extra["reason"] == "MALFORMED_MESSAGE"
    # A lone surrogate is valid JSON but not text: refused, and the connection keeps answering.
    await client.ws.send_str('{"type": "ping", "id": "\\ud800"}')
    surrogate = await client.recv()
    assert surrogate["reason"] == "MALFORMED_MESSAGE" and "surrogate" in surrogate["metadata"]["detail"]
    await client.ws.send_str('{"type": "ping", "id": "\\ud83d\\ude00"}')  # an escaped pair is fine
    assert await client.until(lambda m: m.get("id") == "😀") == {"type": "pong", "id": "😀"}
    await client.ws.send_bytes(b"\x00\x01")
    assert (await client.recv())["reason"] == "MALFORMED_MESSAGE"
    await client.send({"type": "ping", "pad": "x" * 5000})
    too_large = await client.recv()
    assert too_large["reason"] == "MESSAGE_TOO_LARGE" and too_large["fatal"] is False
    assert too_large["message"] == "Message too large (max 4096 bytes)"
    not_in_room = await client.request({"type": "startGame", "id": "s"})
    assert not_in_room["reason"] == "NOT_IN_ROOM"
    missing = await client.request({"type": "joinRoom", "id": "j", "roomId": "NOPE42", "name": "Sam"})
    assert missing["reason"] == "ROOM_NOT_FOUND" and missing["message"] == "No such room"

    assert await client.request({"type": "ping", "id": 77}) == {"type": "pong", "id": 77}
    assert all(m["fatal"] is False for m in client.seen if m["type"] == "error")


async def test_korean_is_the_default_language(gateway: RunningGateway, ws_client: WsFactory) -> None:
    client = await ws_client(gateway)
    refused = await client.request({"type": "addBot", "id": 1})
    assert refused["reason"] == "NOT_IN_ROOM" and refused["message"] == "먼저 방에 들어가 주세요"


async def test_second_binding_is_refused(gateway: RunningGateway, ws_client: WsFactory) -> None:
    client = await ws_client(gateway)
    joined = await client.request({"type": "createRoom", "id": 1, "name": "Sam", "seats": 2})
    again = await client.request({"type": "spectate", "id": 2, "roomId": joined["roomId"]})
    assert again["reason"] == "ALREADY_IN_ROOM"
    left = await client.request({"type": "leaveRoom", "id": 3})
    assert left == {"type": "left", "id": 3, "roomId": joined["roomId"]}
    watching = await client.request({"type": "spectate", "id": 4, "roomId": joined["roomId"]})
    assert watching["type"] == "joined" and watching["role"] == "spectator"


async def test_a_far_too_large_frame_closes_with_1009(gateway: RunningGateway, ws_client: WsFactory) -> None:
    client = await ws_client(gateway)
    await client.send({"type": "ping", "pad": "x" * 70_000})
    error = await client.recv()
    assert error["reason"] == "MESSAGE_TOO_LARGE" and error["fatal"] is True
    goodbye = await client.recv()
    assert goodbye == {"type": "goodbye", "reason": "abuse", "retryAfterMs": 0}
    assert await client.close_code() == 1009


async def test_resume_in_the_lobby_gets_the_seat_back(gateway: RunningGateway, ws_client: WsFactory) -> None:
    host = await ws_client(gateway)
    created = await host.request({"type": "createRoom", "id": 1, "name": "지호", "seats": 3})
    guest = await ws_client(gateway)
    joined = await guest.request({"type": "joinRoom", "id": 2, "roomId": created["roomId"], "name": "민서"})
    await host.ws.close()
    await guest.ws.close()

    # No game yet, so no view names the viewer: the session's GetView says whose token it is.
    back = await ws_client(gateway)
    host_again = await back.request({"type": "resume", "id": 3, "token": created["token"], "afterSeq": 0})
    assert host_again == {**host_again, "playerId": created["playerId"], "role": "player", "host": True}
    room = await back.until(lambda m: m["type"] == "room")
    assert room["room"]["phase"] == "waiting"
    added = await back.request({"type": "addBot", "id": 4})
    assert added["type"] == "room" and len(added["room"]["seats"]) == 3

    guest_back = await ws_client(gateway)
    guest_again = await guest_back.request(
        {"type": "resume", "id": 5, "token": joined["token"], "afterSeq": 0}
    )
    assert guest_again == {**guest_again, "playerId": joined["playerId"], "role": "player", "host": False}
    refused = await guest_back.request({"type": "startGame", "id": 6})
    assert refused["type"] == "error" and refused["reason"] == "NOT_HOST"


async def test_an_older_client_seq_is_refused_as_stale(gateway: RunningGateway, ws_client: WsFactory) -> None:
    client = await ws_client(gateway)
    await client.request({"type": "createRoom", "id": 1, "name": "Sam", "seats": 2})
    await client.request({"type": "addBot", "id": 2})
    await client.request({"type": "startGame", "id": 3})
    view = await client.until(lambda m: m["type"] == "view" and m["view"].get("myTurn") is True)
    action = view["view"]["legalPlays"][0]["action"]
    played = await client.request({"type": "play", "id": 4, "clientSeq": 50, "action": action})
    assert played["type"] == "played" and played["clientSeq"] == 50
    stale = await client.request({"type": "play", "id": 5, "clientSeq": 49, "action": action})
    assert stale["type"] == "error" and stale["reason"] == "STALE"
    assert stale["metadata"]["clientSeq"] == "49"
