"""The wire-format pieces agree with protobuf's own encoding and parsing of the same messages."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ninetynine.common.wire import first_payload, first_varint, length_delimited, read_varint, varint
from ninetynine.session.v1 import room_document_pb2 as doc_pb
from ninetynine.session.v1 import session_service_pb2 as pb

_SEQ = pb.RoomEvent.DESCRIPTOR.fields_by_name["seq"]
_BATCH_END = pb.RoomEvent.DESCRIPTOR.fields_by_name["batch_end"].number
_STATE = doc_pb.RoomDocument.DESCRIPTOR.fields_by_name["state"].number
_UINT64 = st.integers(min_value=1, max_value=2**64 - 1)


@given(_UINT64)
def test_a_varint_is_what_protobuf_writes_and_reads_back(value: int) -> None:
    key = varint(_SEQ.number << 3)
    assert key + varint(value) == pb.RoomEvent(seq=value).SerializeToString()
    assert read_varint(varint(value), 0) == (value, len(varint(value)))


@given(st.text(max_size=300))
def test_a_length_delimited_field_parses_as_that_field(player_id: str) -> None:
    played = pb.RoomEvent(source=player_id)
    field = played.DESCRIPTOR.fields_by_name["source"].number
    assert pb.RoomEvent.FromString(length_delimited(field, player_id.encode())) == played


@given(
    seq=_UINT64,
    at_ms=st.integers(min_value=0, max_value=2**62),
    batch_end=st.booleans(),
    source=st.sampled_from(["", "player", "bot", "timeout"]),
    player_id=st.text(max_size=40),
)
def test_first_varint_reads_a_serialized_event_s_batch_end(
    seq: int, at_ms: int, batch_end: bool, source: str, player_id: str
) -> None:
    event = pb.RoomEvent(seq=seq, at_ms=at_ms, batch_end=batch_end, source=source)
    event.player_left.player_id = player_id
    assert first_varint(event.SerializeToString(), _BATCH_END) == int(batch_end)


@given(moves=st.integers(min_value=0, max_value=60), with_state=st.booleans(), seed=st.integers(0, 2**32))
def test_first_payload_finds_the_document_s_state_without_walking_its_moves(
    moves: int, with_state: bool, seed: int
) -> None:
    doc = doc_pb.RoomDocument(room_id="r1", max_seats=4, last_seq=moves)
    doc.seats.add(player_id="p1")
    if with_state:
        doc.state.seed = seed
    for n in range(moves):
        doc.moves.add(player_id=f"p{n % 4 + 1}", source="player", at_ms=n)
    data = doc.SerializeToString()
    expected = doc.state.SerializeToString() if with_state else None
    assert first_payload(data, _STATE) == expected
    if with_state:  # what follows the state is never read: a damaged tail does not change the answer
        assert first_payload(data + b"\xff", _STATE) == expected
