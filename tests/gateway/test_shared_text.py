"""Pushed server messages are encoded once per audience: connections that get an equal message
share one frame payload, which is exactly the payload the converter gives for that message."""

from __future__ import annotations

import json
import tracemalloc

import pytest

from ninetynine.engine.v1 import events_pb2, game_pb2, view_pb2
from ninetynine.gateway.convert import server_bytes
from ninetynine.gateway.encoding import SharedServerText
from ninetynine.gateway.v1 import gateway_service_pb2 as gw
from ninetynine.session.v1 import session_service_pb2 as spb


def room_update(spectators: int) -> gw.ServerMessage:
    room = spb.Room(room_id="ROOM01", phase=spb.ROOM_PHASE_PLAYING, max_seats=4, spectator_count=spectators)
    return gw.ServerMessage(room=gw.RoomUpdate(room=room))


def card_played(seq: int, source: str) -> gw.ServerMessage:
    played = events_pb2.CardPlayed(
        player_id="p1", action=game_pb2.Action(card_id="N5-3"), before=42, total=47
    )
    event = events_pb2.Event(card_played=played)
    return gw.ServerMessage(event=gw.EventPush(seq=seq, event=event, source=source))


def view(viewer: str) -> gw.ServerMessage:
    game_view = view_pb2.GameView(seq=9, total=50, viewer_id=viewer)
    return gw.ServerMessage(view=gw.ViewPush(seq=9, view=game_view))


def test_equal_pushes_share_one_frame_equal_to_the_converters() -> None:
    texts = SharedServerText()
    # Each connection's stream hands the gateway its own, equal, message object.
    first, second = texts.frame(room_update(2), None), texts.frame(room_update(2), None)
    assert first is second
    assert first == server_bytes(room_update(2))
    assert json.loads(first)["type"] == "room"
    assert (texts.hits, texts.misses) == (1, 1)


def test_different_pushes_get_their_own_frame() -> None:
    texts = SharedServerText()
    assert texts.frame(room_update(1), None) == server_bytes(room_update(1))
    assert texts.frame(room_update(2), None) == server_bytes(room_update(2))
    # The same card seen as a player's move and as a timeout's: the source is part of the frame.
    assert json.loads(texts.frame(card_played(7, "player"), None))["event"]["source"] == "player"
    assert json.loads(texts.frame(card_played(7, "timeout"), None))["event"]["source"] == "timeout"
    assert texts.hits == 0


def test_replies_keep_their_own_id() -> None:
    texts = SharedServerText()
    texts.frame(room_update(2), None)
    with_id = texts.frame(room_update(2), "req-7")
    assert json.loads(with_id)["id"] == "req-7"
    assert with_id == server_bytes(room_update(2), "req-7")
    assert "id" not in json.loads(texts.frame(room_update(2), None))


def test_a_players_own_view_is_not_kept_but_the_spectators_is() -> None:
    texts = SharedServerText()
    for _ in range(2):
        assert texts.frame(view("p1"), None) == server_bytes(view("p1"))
    assert (len(texts), texts.hits, texts.misses) == (0, 0, 0)
    spectators = [texts.frame(view(""), None) for _ in range(2)]
    assert spectators[0] is spectators[1] and spectators[0] == server_bytes(view(""))
    assert json.loads(spectators[0])["view"]["viewer"] is None
    assert (len(texts), texts.hits, texts.misses) == (1, 1, 1)


def test_the_cache_is_bounded() -> None:
    texts = SharedServerText(max_entries=3)
    for seq in range(1, 10):
        assert texts.frame(card_played(seq, "player"), None) == server_bytes(card_played(seq, "player"))
    assert len(texts) == 3
    with pytest.raises(ValueError):
        SharedServerText(max_entries=0)


def test_kept_frames_hold_their_size_not_orjsons_work_buffer() -> None:
    texts = SharedServerText(max_entries=1000)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for seq in range(1, 501):
            texts.frame(card_played(seq, "bot"), None)
        per_entry = (tracemalloc.get_traced_memory()[0] - before) / 500
    finally:
        tracemalloc.stop()
    assert len(texts) == 500
    assert per_entry < 1024
