"""Pushed server messages are encoded once per audience: connections that get an equal message
share one JSON text, which is exactly the text the converter gives for that message."""

from __future__ import annotations

import json

import pytest
from ninetynine.engine.v1 import events_pb2, game_pb2
from ninetynine.gateway.v1 import gateway_service_pb2 as gw
from ninetynine.session.v1 import session_service_pb2 as spb

from services.gateway.convert import server_text
from services.gateway.encoding import SharedServerText


def room_update(spectators: int) -> gw.ServerMessage:
    room = spb.Room(room_id="ROOM01", phase=spb.ROOM_PHASE_PLAYING, max_seats=4, spectator_count=spectators)
    return gw.ServerMessage(room=gw.RoomUpdate(room=room))


def card_played(seq: int, source: str) -> gw.ServerMessage:
    played = events_pb2.CardPlayed(
        player_id="p1", action=game_pb2.Action(card_id="N5-3"), before=42, total=47
    )
    event = events_pb2.Event(card_played=played)
    return gw.ServerMessage(event=gw.EventPush(seq=seq, event=event, source=source))


def test_equal_pushes_share_one_text_equal_to_the_converters() -> None:
    texts = SharedServerText()
    # Each connection's stream hands the gateway its own, equal, message object.
    first, second = texts.text(room_update(2), None), texts.text(room_update(2), None)
    assert first is second
    assert first == server_text(room_update(2))
    assert json.loads(first)["type"] == "room"
    assert (texts.hits, texts.misses) == (1, 1)


def test_different_pushes_get_their_own_text() -> None:
    texts = SharedServerText()
    assert texts.text(room_update(1), None) == server_text(room_update(1))
    assert texts.text(room_update(2), None) == server_text(room_update(2))
    # The same card seen as a player's move and as a timeout's: the source is part of the text.
    assert json.loads(texts.text(card_played(7, "player"), None))["event"]["source"] == "player"
    assert json.loads(texts.text(card_played(7, "timeout"), None))["event"]["source"] == "timeout"
    assert texts.hits == 0


def test_replies_keep_their_own_id() -> None:
    texts = SharedServerText()
    texts.text(room_update(2), None)
    with_id = texts.text(room_update(2), "req-7")
    assert json.loads(with_id)["id"] == "req-7"
    assert with_id == server_text(room_update(2), "req-7")
    assert "id" not in json.loads(texts.text(room_update(2), None))


def test_the_cache_is_bounded() -> None:
    texts = SharedServerText(max_entries=3)
    for seq in range(1, 10):
        assert texts.text(card_played(seq, "player"), None) == server_text(card_played(seq, "player"))
    assert len(texts) == 3
    with pytest.raises(ValueError):
        SharedServerText(max_entries=0)
