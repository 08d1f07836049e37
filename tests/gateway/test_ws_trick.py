"""The trick-taking 99 over the WebSocket JSON protocol: a room of the trick game, two bots, and a
client that bids, announces or passes and plays from its views to the end of the match.

Every frame read is checked against the protocol's JSON Schema by ``ws_client``.
"""

from __future__ import annotations

import json
import re
from typing import Any

import grpc.aio
import pytest

from ninetynine.engine import trick_wire
from ninetynine.engine.trick import TrickAction, TrickState, apply, setup
from ninetynine.engine.trick.state import ActionKind
from ninetynine.engine.v1 import game_pb2, trick_pb2
from ninetynine.gateway.server import RunningGateway
from ninetynine.gateway.v1 import gateway_service_pb2 as gw
from ninetynine.session.v1 import session_service_pb2 as spb
from ninetynine.session.v1 import session_service_pb2_grpc as spb_grpc
from tests.gateway.conftest import Backend, WsClient, WsFactory
from tests.gateway.test_grpc_contract import _open

SUIT_VALUE = {"C": 3, "H": 2, "S": 1, "D": 0}


def _decision(view: dict[str, Any]) -> dict[str, Any]:
    """The client's move from its view: the three lowest-bidding cards, pass, the first playable."""
    if view["phase"] == "bidding":
        values = view["bidChoice"]["suitValues"]
        hand = sorted(view["hand"], key=lambda c: values[c["card"]["suit"]])
        return {"trick": {"kind": "bid", "cards": [c["card"]["id"] for c in hand[:3]]}}
    if view["phase"] == "announcing":
        return {"trick": view["legalActions"][-1]}  # announce, pass: pass
    return {"trick": {"kind": "play", "card": next(c["card"]["id"] for c in view["hand"] if c["playable"])}}


async def _play_match(client: WsClient, me: str) -> dict[str, Any]:
    """Play whenever the view says it is my turn; returns the finished view."""
    client_seq = 0
    asked: set[int] = set()
    answered = True  # one play in flight at a time: a view may come before my last play's
    while True:
        message = await client.recv()
        if message["type"] in ("played", "error"):
            answered = True
        if message["type"] == "view":
            view = message["trick"]
            assert "view" not in message and view["game"] == "trick"
            if view["phase"] == "finished":
                return dict(view)
            assert view["viewer"] == me
            if view["myTurn"] and view["seq"] not in asked and answered:
                asked.add(view["seq"])
                answered = False
                client_seq += 1
                await client.send(
                    {
                        "type": "play",
                        "id": f"p{client_seq}",
                        "clientSeq": client_seq,
                        "moveSeq": view["seq"],
                        "action": _decision(view),
                    }
                )
        if message["type"] == "error":
            # The decision may time out between the view and the play.
            assert message["reason"] in ("VIEW_OUTDATED", "WRONG_PHASE", "NOT_YOUR_TURN"), message


CARD = re.compile(r'"((?:[6-9]|10|J|Q|K|A)[SHDC])"')


async def _states(backend: Backend, room_id: str) -> dict[int, TrickState]:
    """The match's state after every move, re-run by the rules from the replay (seed and moves)."""
    async with grpc.aio.insecure_channel(backend.session_target) as channel:
        replay = await spb_grpc.SessionServiceStub(channel).GetReplay(spb.GetReplayRequest(room_id=room_id))
    options = trick_wire.options_from_proto(replay.trick_options)
    state, _ = setup(list(replay.player_ids), options, seed=replay.seed, names=dict(replay.display_names))
    states = {0: state}
    for move in replay.moves:
        action = move.action.trick
        kind = ActionKind(["", "bid", "announce", "pass", "play"][action.kind])
        state, _ = apply(state, move.player_id, TrickAction(kind, tuple(action.cards), action.card or None))
        states[state.seq] = state
    return states


def _secrets(state: TrickState, reader: str | None) -> set[str]:
    """What ``reader`` may not see in ``state``: the others' hands and their face-down bids."""
    hidden = {c for p, hand in state.hands.items() if p != reader for c in hand}
    return hidden | {c for p, bid in state.bids.items() if p != reader and not state.revealed[p] for c in bid}


def _assert_views_keep_secrets(client: WsClient, reader: str | None, states: dict[int, TrickState]) -> int:
    """Every view ``reader`` got names no card hidden from it (the scored deals aside: earlier deals')."""
    checked = 0
    for message in client.seen:
        if message["type"] != "view":
            continue
        view = dict(message["trick"])
        assert view["viewer"] == reader
        secrets = _secrets(states[view["seq"]], reader)
        del view["deals"]  # the scored deals of earlier deals, whose cards are dealt again since
        named = set(CARD.findall(json.dumps(view)))
        assert not named & secrets, (view["seq"], named & secrets)
        checked += 1
    return checked


def _assert_events_keep_secrets(client: WsClient, reader: str | None) -> None:
    for message in client.seen:
        if message["type"] != "event":
            continue
        event = message["event"]
        if event["type"] == "trickHandDealt":
            assert event["player"] == reader, event
        if event["type"] == "bidPlaced":
            assert ("cards" in event) == (event["player"] == reader), event


@pytest.mark.timeout(180)
async def test_a_trick_match_against_two_bots_plays_to_the_end(
    gateway: RunningGateway, ws_client: WsFactory, backend: Backend
) -> None:
    client = await ws_client(gateway)
    assert (await client.request({"type": "hello", "id": 0, "lang": "en"}))["type"] == "welcome"
    joined = await client.request(
        {
            "type": "createRoom",
            "id": 1,
            "name": "Sam",
            "seats": 3,
            "game": "trick",
            "trickOptions": {"target": 50, "maxDeals": 9},
        }
    )
    assert joined["type"] == "joined", joined
    room = (await client.until(lambda m: m["type"] == "room"))["room"]
    assert room["game"] == "trick" and room["maxSeats"] == 3 and room["trickOptions"]["target"] == 50
    for i in range(2):
        await client.request({"type": "addBot", "id": f"b{i}"})
    listed = await client.request({"type": "listRooms", "id": "l"})
    assert next(r for r in listed["rooms"] if r["roomId"] == joined["roomId"])["game"] == "trick"
    watcher = await ws_client(gateway)
    assert (await watcher.request({"type": "spectate", "id": 1, "roomId": joined["roomId"]}))[
        "type"
    ] == "joined"
    await client.request({"type": "startGame", "id": "s"})
    finished = await _play_match(client, joined["playerId"])
    await watcher.until(lambda m: m["type"] == "view" and m["trick"]["phase"] == "finished")

    result = finished["result"]
    assert sorted(r["player"] for r in result["ranking"]) == ["p1", "p2", "p3"]
    assert result["deals"] == len(finished["deals"]) and finished["seed"]
    me = joined["playerId"]
    events = [m["event"] for m in client.seen if m["type"] == "event"]
    assert events[-1]["type"] == "trickGameFinished"
    # My hands and my own bids with their cards; the others' bids without them, hands never.
    dealt = [e for e in events if e["type"] == "trickHandDealt"]
    assert dealt and {e["player"] for e in dealt} == {me}
    for e in events:
        if e["type"] == "bidPlaced":
            assert ("cards" in e) == (e["player"] == me), e
    played = [m for m in client.seen if m["type"] == "played"]
    assert played, "the client's plays were accepted"
    replay = await client.request({"type": "getReplay", "id": "r", "roomId": joined["roomId"]})
    assert replay["type"] == "replay" and any(e["event"]["type"] == "dealScored" for e in replay["events"])

    # Secrets: neither the player nor the spectator ever read another hand or a face-down bid.
    states = await _states(backend, joined["roomId"])
    assert states[max(states)].finished and states[max(states)].seed == int(finished["seed"])
    assert _assert_views_keep_secrets(client, me, states) > 20
    assert _assert_views_keep_secrets(watcher, None, states) > 20
    _assert_events_keep_secrets(client, me)
    _assert_events_keep_secrets(watcher, None)


async def test_a_trick_play_of_no_game_s_shape_is_refused_before_the_session(
    gateway: RunningGateway, ws_client: WsFactory
) -> None:
    client = await ws_client(gateway)
    await client.request({"type": "createRoom", "id": 1, "name": "Sam", "seats": 3, "game": "trick"})
    shapes: list[dict[str, Any]] = [
        {},
        {"trick": {}},
        {"trick": {"kind": "bid", "cards": ["1X"]}},
        {"trick": {"kind": "fold"}},
    ]
    for action in shapes:
        refused = await client.request({"type": "play", "id": "x", "clientSeq": 1, "action": action})
        assert refused["type"] == "error" and refused["reason"] == "MALFORMED_MESSAGE", (action, refused)


async def test_a_trick_match_over_grpc_connect_with_a_connect_spectator(gateway: RunningGateway) -> None:
    """The same decisions as protobuf ``Play`` messages on the gRPC ``Connect`` stream."""
    async with grpc.aio.insecure_channel(f"127.0.0.1:{gateway.grpc_port}") as channel:
        host, watcher = _open(channel), _open(channel)
        options = trick_pb2.TrickOptions(target=50, max_deals=9)
        create = gw.CreateRoom(name="Sam", seats=3, game="trick", trick_options=options)
        joined = await host.request(gw.ClientMessage(id="c", create_room=create))
        me = joined.joined.player_id
        for i in range(2):
            await host.request(gw.ClientMessage(id=f"b{i}", add_bot=gw.AddBot()))
        await watcher.request(gw.ClientMessage(id="w", spectate=gw.Spectate(room_id=joined.joined.room_id)))
        await host.request(gw.ClientMessage(id="s", start_game=gw.StartGame()))
        client_seq, asked, answered = 0, set(), True
        while True:
            message = await host.next()
            kind = message.WhichOneof("kind")
            answered = answered or kind in ("played", "error")
            if kind == "error":
                assert message.error.reason in ("VIEW_OUTDATED", "WRONG_PHASE", "NOT_YOUR_TURN"), message
            if kind != "view":
                continue
            assert not message.view.HasField("view")
            view = message.view.trick
            if view.phase == trick_pb2.TRICK_PHASE_FINISHED:
                break
            if view.my_turn and view.seq not in asked and answered:
                asked.add(view.seq)
                answered = False
                client_seq += 1
                action = game_pb2.Action(trick=_proto_decision(view))
                play = gw.Play(client_seq=client_seq, action=action, expected_move_seq=view.seq)
                await host.send(gw.ClientMessage(id=f"p{client_seq}", play=play))
        assert len(view.result.ranking) == 3 and view.seed
        await watcher.until(
            lambda m: m.WhichOneof("kind") == "view" and m.view.trick.phase == trick_pb2.TRICK_PHASE_FINISHED
        )
        for message in watcher.seen:
            if message.WhichOneof("kind") == "view":
                assert not message.view.trick.viewer_id and not message.view.trick.hand
            if message.WhichOneof("kind") == "event":
                event = message.event.event
                assert event.WhichOneof("payload") != "trick_hand_dealt"
                assert not event.bid_placed.cards
        dealt = [m.event.event for m in host.seen if m.WhichOneof("kind") == "event"]
        assert {e.trick_hand_dealt.player_id for e in dealt if e.HasField("trick_hand_dealt")} == {me}
        await host.call.done_writing()
        await watcher.call.done_writing()


def _proto_decision(view: trick_pb2.TrickView) -> trick_pb2.TrickAction:
    if view.phase == trick_pb2.TRICK_PHASE_BIDDING:
        return trick_pb2.TrickAction(
            kind=trick_pb2.TRICK_ACTION_KIND_BID, cards=[c.card.id for c in view.hand[-3:]]
        )
    if view.phase == trick_pb2.TRICK_PHASE_ANNOUNCING:
        return trick_pb2.TrickAction(kind=trick_pb2.TRICK_ACTION_KIND_ANNOUNCE)
    return trick_pb2.TrickAction(
        kind=trick_pb2.TRICK_ACTION_KIND_PLAY, card=next(c.card.id for c in view.hand if c.playable)
    )


async def test_a_trick_seat_resumes_on_a_new_connection_with_the_missed_events_and_its_view(
    gateway: RunningGateway, ws_client: WsFactory
) -> None:
    """The seat's token on another connection, after the last seq it saw: the events it missed
    (its own hand dealt among them, nobody else's), then its view, and it plays on."""
    first = await ws_client(gateway)
    short = {"target": 50, "maxDeals": 9}
    joined = await first.request(
        {"type": "createRoom", "id": 1, "name": "Sam", "seats": 3, "game": "trick", "trickOptions": short}
    )
    for i in range(2):
        await first.request({"type": "addBot", "id": f"b{i}"})
    await first.request({"type": "startGame", "id": "s"})
    opening = await first.until(lambda m: m["type"] == "view")
    await first.ws.close()
    back = await ws_client(gateway)
    after = opening["seq"]
    resumed = await back.request({"type": "resume", "id": "r", "token": joined["token"], "afterSeq": after})
    assert resumed["type"] == "joined" and resumed["playerId"] == joined["playerId"]
    view = await back.until(lambda m: m["type"] == "view")
    missed = [m for m in back.seen if m["type"] == "event"]
    assert all(m["seq"] > after for m in missed)
    assert view["seq"] >= max((m["seq"] for m in missed), default=after)
    assert view["trick"]["viewer"] == joined["playerId"] and view["trick"]["hand"]
    for m in missed:
        if m["event"]["type"] in ("trickHandDealt", "bidPlaced") and "cards" in m["event"]:
            assert m["event"]["player"] == joined["playerId"], m
    finished = await _play_match(back, joined["playerId"])
    assert finished["phase"] == "finished"
