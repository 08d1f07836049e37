"""The descriptor-driven codec: its naming rule, and the kept texts of frames staying bounded,
exact and shared where the declarations say so."""

from __future__ import annotations

import tracemalloc

import orjson

from ninetynine.common.codec import Codec, camel, enum_json
from ninetynine.common.v1 import json_options_pb2 as jo
from ninetynine.engine.v1 import game_pb2, state_pb2, view_pb2
from ninetynine.gateway.v1 import gateway_service_pb2 as gw
from tests.gateway.games import game_messages


def test_keys_and_enum_names_follow_one_rule_where_nothing_is_declared() -> None:
    codec = Codec()
    welcome = gw.Welcome(protocol_version=1, heartbeat_seconds=20, max_message_bytes=4096, lang="ko")
    assert codec.encode(welcome) == {
        "protocolVersion": 1,
        "heartbeatSeconds": 20,
        "maxMessageBytes": 4096,
        "lang": "ko",
    }
    assert camel("GAP_TOO_OLD") == "gapTooOld"
    kinds = enum_json(game_pb2.CardKind.DESCRIPTOR)
    assert kinds[game_pb2.CARD_KIND_PLUS_MINUS] == "plusMinus"
    assert kinds[game_pb2.CARD_KIND_TO99] == "to99"
    # Declared where the protocol differs: the names of the sign, the direction as a number.
    assert enum_json(game_pb2.Sign.DESCRIPTOR)[game_pb2.SIGN_MINUS] == "-"
    assert enum_json(game_pb2.Direction.DESCRIPTOR)[game_pb2.DIRECTION_COUNTERCLOCKWISE] == -1


def _record_part(codec: Codec) -> object:
    return codec.part(state_pb2.PlayRecord.DESCRIPTOR, frozenset(), frames=True)


def test_a_kept_part_is_bounded_and_rebuilds_what_it_dropped() -> None:
    codec = Codec()
    part = _record_part(codec)
    part.max_entries = 3  # type: ignore[attr-defined]
    plain = codec.encoder(state_pb2.PlayRecord.DESCRIPTOR)
    records = [
        state_pb2.PlayRecord(
            player_id=f"p{i}", action=game_pb2.Action(card_id="PM9-1", sign=game_pb2.SIGN_MINUS), total=i
        )
        for i in range(6)
    ]
    for _ in range(2):
        for record in records:
            assert orjson.dumps([part(record)]) == orjson.dumps([plain(record)])  # type: ignore[operator]
            assert len(part) <= 3  # type: ignore[arg-type]
    assert part(records[-1]) is part(records[-1])  # type: ignore[operator]


def test_the_views_of_one_state_share_one_kept_text() -> None:
    """Each seat's view frame is its own (hand, legal plays), yet the rest is built once per
    state: the views of four seats and a spectator add one entry."""
    codec = Codec()
    shared = codec.part(view_pb2.GameView.DESCRIPTOR, frozenset(), frames=True)
    plain = codec.encoder(view_pb2.GameView.DESCRIPTOR)
    views = [m.view.view for m in game_messages(2**63 + 5, players=4) if m.WhichOneof("kind") == "view"]
    for first in range(0, 5 * 8, 5):  # the views after the first eight moves, five per state
        before = len(shared)  # type: ignore[arg-type]
        texts = set()
        for view in views[first : first + 5]:
            text = orjson.dumps(shared(view))  # type: ignore[operator]
            assert text == orjson.dumps(plain(view))
            texts.add(text)
        assert len(shared) == before + 1  # type: ignore[arg-type]
        assert len(texts) == 5  # four hands and the spectator's view: five different texts


def test_kept_texts_hold_their_size_not_orjsons_work_buffer() -> None:
    # orjson returns its 4 KiB work buffer as the bytes of a small result; 500 kept records must
    # not cost 2 MB.
    part = _record_part(Codec())
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(500):
            part(state_pb2.PlayRecord(player_id="p1", face="7", before=i, total=i + 7))  # type: ignore[operator]
        per_entry = (tracemalloc.get_traced_memory()[0] - before) / 500
    finally:
        tracemalloc.stop()
    assert len(part) == 500  # type: ignore[arg-type]
    assert per_entry < 1024


def test_decoding_reads_what_encoding_writes() -> None:
    """A client frame's shapes: a oneof by its discriminator, a renamed optional, enum names."""
    codec = Codec()
    raw = {"type": "play", "clientSeq": 3, "moveSeq": 0, "action": {"cardId": "PM9-1", "sign": "-"}}
    msg = codec.decode(raw, gw.ClientMessage())
    assert isinstance(msg, gw.ClientMessage)
    assert msg.play.client_seq == 3
    assert msg.play.HasField("expected_move_seq") and msg.play.expected_move_seq == 0
    assert msg.play.action.sign == game_pb2.SIGN_MINUS
    assert codec.encode(msg.play.action) == raw["action"]
    room = codec.decode({"hostId": "p1", "seats": [{"playerId": "p1", "bot": True}]}, gw.RoomUpdate().room)
    assert isinstance(room, type(gw.RoomUpdate().room))
    assert room.host_player_id == "p1" and room.seats[0].bot


def test_reading_is_the_inverse_of_encoding_for_every_message_a_client_gets() -> None:
    """The reader undoes every JSON option the encoder applies (a oneof's discriminator, renamed
    and inlined keys, groups, repeated pairs as one object, null for unset, seeds as strings)."""
    from ninetynine.gateway.convert import CODEC

    read = CODEC.reader(gw.ServerMessage.DESCRIPTOR)
    kinds: set[str] = set()
    for seed in (3, 11):
        for msg in game_messages(seed):
            kind = msg.WhichOneof("kind")
            assert kind is not None
            member = msg.DESCRIPTOR.fields_by_name[kind].message_type
            assert member is not None
            if member.GetOptions().Extensions[jo.json_message].projection:  # written, never read
                continue
            kinds.add(kind)
            written = CODEC.encode(msg)
            again = gw.ServerMessage()
            read(written, again)
            assert CODEC.encode(again) == written, kind
    assert {"event", "view", "played"} <= kinds


def test_a_reader_refuses_a_shape_that_lost_a_key_the_encoder_always_writes() -> None:
    codec = Codec()
    card = codec.encode(game_pb2.Card(id="KS-1", kind=game_pb2.CARD_KIND_ADD, value=10, face="K♠"))
    del card["face"]
    try:
        codec.reader(game_pb2.Card.DESCRIPTOR)(card, game_pb2.Card())
    except KeyError as missing:
        assert missing.args == ("face",)
    else:
        raise AssertionError("a Card without its face was read")
