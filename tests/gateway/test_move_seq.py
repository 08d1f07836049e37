"""``play.moveSeq``: a play names the view it was chosen from, and an outdated one is refused.

Real engine, session and gateway; turns of 15 s (``turn_time_scale(1.0)``) so that only the
moves a test makes move the game. Every frame read is checked against the protocol's schema.
"""

from __future__ import annotations

from typing import Any

import grpc.aio
import pytest

from ninetynine.gateway.server import RunningGateway
from ninetynine.gateway.v1 import gateway_service_pb2 as gw
from ninetynine.gateway.v1 import gateway_service_pb2_grpc as gw_grpc
from ninetynine.session.errors import REASONS
from tests.gateway.conftest import WsClient, WsFactory
from tests.gateway.test_grpc_contract import Stream

pytestmark = pytest.mark.turn_time_scale(1.0)

_, KOREAN, ENGLISH = REASONS["VIEW_OUTDATED"]


def _my_turn_after(move_seq: int) -> Any:
    """A predicate: a view that says it is my turn, past the game move counter ``move_seq``."""
    return lambda m: m["type"] == "view" and m["view"].get("myTurn") is True and m["view"]["seq"] > move_seq


async def _table_with_a_bot(client: WsClient) -> dict[str, Any]:
    joined = await client.request({"type": "createRoom", "id": "c", "name": "지호", "seats": 2})
    await client.request({"type": "addBot", "id": "b"})
    started = await client.request({"type": "startGame", "id": "s"})
    assert started["type"] == "room" and started["room"]["phase"] == "playing"
    return joined


async def test_a_play_from_an_outdated_view_gets_view_outdated_in_the_connections_language(
    gateway: RunningGateway, ws_client: WsFactory
) -> None:
    client = await ws_client(gateway)  # no hello: Korean
    joined = await _table_with_a_bot(client)
    first = (await client.until(_my_turn_after(-1)))["view"]
    played = await client.request(
        {
            "type": "play",
            "id": "p1",
            "clientSeq": 1,
            "moveSeq": first["seq"],
            "action": first["legalPlays"][0]["action"],
        }
    )
    assert played["type"] == "played" and played["clientSeq"] == 1

    # The bot has moved and the turn is back: a play still naming the first view is refused,
    # even though the card is legal now.
    now = (await client.until(_my_turn_after(first["seq"])))["view"]
    legal_now = now["legalPlays"][0]["action"]
    stale = {"type": "play", "id": "p2", "clientSeq": 2, "moveSeq": first["seq"], "action": legal_now}
    refused = await client.request(stale)
    assert refused["type"] == "error" and refused["reason"] == "VIEW_OUTDATED"
    assert refused["message"] == KOREAN and refused["fatal"] is False
    assert refused["metadata"] == {
        "moveSeq": str(first["seq"]),
        "currentMoveSeq": str(now["seq"]),
        "clientSeq": "2",
    }

    # Another connection of the same seat that chose English gets the English text.
    english = await ws_client(gateway)
    await english.request({"type": "hello", "id": "h", "lang": "en"})
    resumed = await english.request({"type": "resume", "id": "r", "token": joined["token"], "afterSeq": 0})
    assert resumed["type"] == "joined"
    refused_en = await english.request({**stale, "id": "p3", "clientSeq": 3})
    assert refused_en["reason"] == "VIEW_OUTDATED" and refused_en["message"] == ENGLISH

    # Nothing was applied: the current view's counter is accepted, and the play lands.
    applied = await english.request(
        {"type": "play", "id": "p4", "clientSeq": 4, "moveSeq": now["seq"], "action": legal_now}
    )
    assert applied["type"] == "played" and applied["clientSeq"] == 4
    assert applied["seq"] > played["seq"]
    # The reply may overtake the room stream: read on until the stream has brought that move (the
    # view after a batch carries the batch's last room seq, whichever of its events this seat got).
    await english.until(lambda m: m["type"] in ("event", "view") and m["seq"] >= applied["seq"])
    mine = [
        m["event"]
        for m in english.seen
        if m["type"] == "event"
        and m["event"]["type"] == "cardPlayed"
        and m["event"]["player"] == joined["playerId"]
    ]
    assert [e["seq"] for e in mine] == [first["seq"] + 1, now["seq"] + 1], "two plays applied, not four"


@pytest.mark.parametrize("move_seq", [-1, 1.5, "3", None, True])
async def test_a_move_seq_that_is_not_a_non_negative_integer_is_malformed(
    gateway: RunningGateway, ws_client: WsFactory, move_seq: object
) -> None:
    client = await ws_client(gateway)
    refused = await client.request(
        {"type": "play", "id": "p", "clientSeq": 1, "moveSeq": move_seq, "action": {"cardId": "N3-1"}}
    )
    assert refused["type"] == "error" and refused["reason"] == "MALFORMED_MESSAGE"
    assert "moveSeq" in refused["metadata"]["detail"]


async def test_the_grpc_stream_carries_expected_move_seq(gateway: RunningGateway) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{gateway.grpc_port}") as channel:
        stream = Stream(gw_grpc.GatewayServiceStub(channel).Connect())  # type: ignore[call-arg]
        await stream.request(gw.ClientMessage(id="h", hello=gw.Hello(lang="en")))
        await stream.request(gw.ClientMessage(id="c", create_room=gw.CreateRoom(name="Sam", seats=2)))
        await stream.request(gw.ClientMessage(id="b", add_bot=gw.AddBot()))
        await stream.request(gw.ClientMessage(id="s", start_game=gw.StartGame()))
        message = await stream.until(lambda m: m.WhichOneof("kind") == "view" and m.view.view.my_turn)
        view = message.view.view
        action = view.legal_plays[0].action
        # Move counter 0 is a real value (the opening view), distinct from "not sent".
        outdated = view.seq + 1
        refused = await stream.request(
            gw.ClientMessage(id="p1", play=gw.Play(client_seq=1, action=action, expected_move_seq=outdated))
        )
        assert refused.WhichOneof("kind") == "error" and refused.error.reason == "VIEW_OUTDATED"
        assert refused.error.message == ENGLISH
        played = await stream.request(
            gw.ClientMessage(id="p2", play=gw.Play(client_seq=2, action=action, expected_move_seq=view.seq))
        )
        assert played.WhichOneof("kind") == "played" and played.played.client_seq == 2
        stream.call.cancel()
