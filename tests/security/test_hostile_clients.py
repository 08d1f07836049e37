"""Hostile clients: other seats' cards, spectator and made-up tokens, replayed clientSeq, floods,
10 MB frames and gRPC messages. Each is refused with its reason, changes nothing, and the
servers go on serving.
"""

from __future__ import annotations

from typing import Any

import grpc
import grpc.aio
import pytest

from ninetynine.engine.v1 import game_pb2
from ninetynine.gateway.server import RunningGateway
from ninetynine.gateway.v1 import gateway_service_pb2 as gw
from ninetynine.gateway.v1 import gateway_service_pb2_grpc as gw_grpc
from ninetynine.session.v1 import session_service_pb2 as pb
from ninetynine.session.v1 import session_service_pb2_grpc as pb_grpc
from tests.gateway.conftest import Backend, WsClient, WsFactory
from tests.session.helpers import refused

TEN_MB = 10 * 1024 * 1024
# These games must not move by themselves: a 30 s turn stays 30 s (the fixture compresses time).
pytestmark = pytest.mark.turn_time_scale(1.0)


async def _two_seat_game(gateway: RunningGateway, ws_client: WsFactory) -> tuple[WsClient, WsClient, str]:
    """Two humans, no bots, a long turn timer; returns (host, guest, room_id) once the game runs."""
    host, guest = await ws_client(gateway), await ws_client(gateway)
    joined = await host.request(
        {"type": "createRoom", "id": 1, "name": "A", "seats": 2, "options": {"turnSeconds": 30}}
    )
    await guest.request({"type": "joinRoom", "id": 1, "roomId": joined["roomId"], "name": "B"})
    await host.request({"type": "startGame", "id": 2})
    return host, guest, joined["roomId"]


async def _latest_view(client: WsClient) -> dict[str, Any]:
    """The newest view the client got (it may have come before the reply it waited for)."""
    seen = [m for m in client.seen if m["type"] == "view"]
    message = seen[-1] if seen else await client.until(lambda m: m["type"] == "view")
    view: dict[str, Any] = message["view"]
    return view


async def test_acting_for_another_seat_or_as_a_spectator_changes_nothing(
    backend: Backend, gateway: RunningGateway, ws_client: WsFactory
) -> None:
    host, guest, room_id = await _two_seat_game(gateway, ws_client)
    host_view, guest_view = await _latest_view(host), await _latest_view(guest)
    mover, waiter = (host, guest) if host_view["myTurn"] else (guest, host)
    mover_view, waiter_view = (host_view, guest_view) if mover is host else (guest_view, host_view)
    mover_card = mover_view["hand"][0]["choices"][0]["action"]
    waiter_card = waiter_view["hand"][0]["choices"][0]["action"]

    out_of_turn = await waiter.request({"type": "play", "id": "x", "clientSeq": 1, "action": mover_card})
    assert out_of_turn["reason"] == "NOT_YOUR_TURN"
    not_mine = await mover.request({"type": "play", "id": "y", "clientSeq": 1, "action": waiter_card})
    assert not_mine["reason"] == "CARD_NOT_IN_HAND"

    watcher = await ws_client(gateway)
    await watcher.request({"type": "spectate", "id": "s", "roomId": room_id})
    as_spectator = await watcher.request({"type": "play", "id": "z", "clientSeq": 1, "action": mover_card})
    assert as_spectator["reason"] == "SPECTATOR_CANNOT_ACT"
    made_up = await (await ws_client(gateway)).request(
        {"type": "resume", "id": "r", "token": "A" * 32, "afterSeq": 0}
    )
    assert made_up["reason"] == "INVALID_TOKEN" and made_up["fatal"] is False

    async with grpc.aio.insecure_channel(backend.session_target) as channel:
        stub = pb_grpc.SessionServiceStub(channel)
        room = (await stub.GetRoom(pb.GetRoomRequest(room_id=room_id))).room
        action = game_pb2.Action(card_id=mover_card["cardId"])
        await refused(
            stub.Play(pb.PlayRequest(token="A" * 32, client_seq=1, action=action)),
            grpc.StatusCode.UNAUTHENTICATED,
            "INVALID_TOKEN",
        )
        again = (await stub.GetRoom(pb.GetRoomRequest(room_id=room_id))).room
        assert again == room, "no refused attempt changed the room"
    # The turn is still the mover's and nothing was played.
    assert (await mover.request({"type": "ping", "id": "p"}))["type"] == "pong"
    fresh = await ws_client(gateway)
    watching = await fresh.request({"type": "spectate", "id": 1, "roomId": room_id})
    assert watching["type"] == "joined"
    view = await _latest_view(fresh)
    assert view["seq"] == mover_view["seq"] and view["recentPlays"] == mover_view["recentPlays"]


async def test_a_replayed_client_seq_applies_once_and_an_older_one_is_stale(
    gateway: RunningGateway, ws_client: WsFactory
) -> None:
    host, guest, _ = await _two_seat_game(gateway, ws_client)
    host_view, guest_view = await _latest_view(host), await _latest_view(guest)
    mover, view = (host, host_view) if host_view["myTurn"] else (guest, guest_view)
    play = {"type": "play", "id": "a", "clientSeq": 10, "action": view["legalPlays"][0]["action"]}
    first = await mover.request(play)
    assert first["type"] == "played"
    again = await mover.request({**play, "id": "b"})
    assert again["type"] == "played" and again["seq"] == first["seq"], "the first outcome, nothing new"
    older = await mover.request({**play, "id": "c", "clientSeq": 9})
    assert older["reason"] == "STALE"
    played = [m for m in mover.seen if m["type"] == "event" and m["event"]["type"] == "cardPlayed"]
    assert len(played) == 1, "the replayed play was applied once"


async def test_a_flood_beyond_the_rate_limit_plays_nothing_extra(
    gateway: RunningGateway, ws_client: WsFactory
) -> None:
    host, guest, _ = await _two_seat_game(gateway, ws_client)
    host_view = await _latest_view(host)
    flooder = host if not host_view["myTurn"] else guest
    for i in range(400):  # default limits: burst 40, 20/s, abuse after 100 refusals
        await flooder.send({"type": "play", "clientSeq": 1000 + i, "action": {"cardId": "N3-1"}})
    assert await flooder.close_code() == 1008
    refusals = {m["reason"] for m in flooder.seen if m["type"] == "error"}
    assert "RATE_LIMITED" in refusals and refusals <= {"RATE_LIMITED", "NOT_YOUR_TURN", "CARD_NOT_IN_HAND"}
    assert not [m for m in flooder.seen if m["type"] == "played"]
    assert (await (await ws_client(gateway)).request({"type": "ping", "id": 1}))["type"] == "pong"


async def test_a_10_mb_websocket_frame_closes_that_connection_only(
    gateway: RunningGateway, ws_client: WsFactory
) -> None:
    bystander = await ws_client(gateway)
    attacker = await ws_client(gateway)
    try:
        await attacker.ws.send_str('{"type": "ping", "pad": "' + "x" * TEN_MB + '"}')
    except ConnectionError:
        pass  # the server closed (1009) and reset the socket before the last bytes went out
    else:
        assert await attacker.close_code() == 1009  # refused by the WebSocket reader, no goodbye
    assert attacker.ws.closed or await attacker.close_code() == 1009
    assert not [m for m in attacker.seen if m["type"] == "pong"]
    assert await bystander.request({"type": "ping", "id": 1}) == {"type": "pong", "id": 1}
    assert (await (await ws_client(gateway)).request({"type": "ping", "id": 2}))["type"] == "pong"


async def test_10_mb_grpc_messages_are_refused_resource_exhausted(
    backend: Backend, gateway: RunningGateway
) -> None:
    huge = "x" * TEN_MB
    async with grpc.aio.insecure_channel(f"127.0.0.1:{gateway.grpc_port}") as channel:
        call = gw_grpc.GatewayServiceStub(channel).Connect()  # type: ignore[call-arg]
        await call.write(gw.ConnectRequest(message=gw.ClientMessage(id="big", hello=gw.Hello(client=huge))))
        try:
            await call.read()
            raise AssertionError("the gateway read a 10 MB message")
        except grpc.aio.AioRpcError as err:
            assert err.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        ok = gw_grpc.GatewayServiceStub(channel).Connect()  # type: ignore[call-arg]
        await ok.write(gw.ConnectRequest(message=gw.ClientMessage(id="p", ping=gw.Ping())))
        reply = await ok.read()
        assert isinstance(reply, gw.ConnectResponse) and reply.message.id == "p"
        ok.cancel()
    async with grpc.aio.insecure_channel(backend.session_target) as channel:
        stub = pb_grpc.SessionServiceStub(channel)
        try:
            await stub.CreateRoom(pb.CreateRoomRequest(name=huge, max_seats=2))
            raise AssertionError("the session accepted a 10 MB request")
        except grpc.aio.AioRpcError as err:
            assert err.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        created = await stub.CreateRoom(pb.CreateRoomRequest(name="ok", max_seats=2))
        assert created.room.room_id
