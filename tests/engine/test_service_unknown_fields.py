"""Fields a client appends that the schema does not know never come back from the engine.

The engine parses a request once and keeps its unknown fields (it does not walk the request a
second time to drop them): every response is built from the rules' values. Sent over the real
server as raw bytes, with an unknown field appended to the request, its state, the state's
options, a history record and the action, an Apply answers byte-for-byte what the clean request
gets, and so do Setup and Timeout.
"""

from __future__ import annotations

import grpc
from google.protobuf.message import Message

from ninetynine.common.wire import length_delimited
from ninetynine.engine.v1 import engine_service_pb2 as pb
from ninetynine.engine.v1 import engine_service_pb2_grpc as pb_grpc
from ninetynine.engine.v1 import game_pb2, state_pb2
from tests.engine.service_fixtures import RunningEngine

MARKER = b"appended-by-a-client" * 8
UNKNOWN = length_delimited(9999, MARKER)


def _number(message_type: type[Message], name: str) -> int:
    return int(message_type.DESCRIPTOR.fields_by_name[name].number)


def _dirty(message: Message) -> bytes:
    """``message`` serialized with the unknown field appended to it (and so to its parent)."""
    return message.SerializeToString() + UNKNOWN


def _call(channel: grpc.Channel, method: str, data: bytes) -> bytes:
    call = channel.unary_unary(
        f"/ninetynine.engine.v1.EngineService/{method}", request_serializer=None, response_deserializer=None
    )
    answer = call(data, timeout=5)
    assert isinstance(answer, bytes)
    return answer


def test_unknown_fields_at_every_depth_are_not_echoed(
    engine: RunningEngine, stub: pb_grpc.EngineServiceStub
) -> None:
    setup = pb.SetupRequest(player_ids=["ann", "bob"], seed=7, now_ms=1_000)
    state = stub.Setup(setup).state
    for _ in range(3):  # a few moves: the state has history records
        view = stub.View(pb.ViewRequest(state=state, viewer_id=state.current)).view
        state = stub.Apply(
            pb.ApplyRequest(
                state=state, player_id=state.current, action=view.legal_plays[0].action, now_ms=2_000
            )
        ).state
    assert len(state.history) >= 3
    action = stub.View(pb.ViewRequest(state=state, viewer_id=state.current)).view.legal_plays[0].action
    request = pb.ApplyRequest(state=state, player_id=state.current, action=action, now_ms=3_000)

    # The same request with an unknown field in the options, a history record, the state, the
    # action and the request itself (appending to a sub-message's bytes merges into it).
    state_bytes = (
        state.SerializeToString()
        + length_delimited(_number(state_pb2.State, "options"), _dirty(state.options))
        + length_delimited(_number(state_pb2.State, "history"), _dirty(state.history[0]))  # one more
        + UNKNOWN
    )
    dirty_state = state_pb2.State.FromString(state_bytes)
    clean = pb.ApplyRequest(state=dirty_state, player_id=request.player_id, action=action, now_ms=3_000)
    clean.DiscardUnknownFields()
    head = pb.ApplyRequest(player_id=request.player_id, now_ms=3_000).SerializeToString()
    dirty = (
        length_delimited(_number(pb.ApplyRequest, "state"), state_bytes)
        + head
        + length_delimited(_number(pb.ApplyRequest, "action"), _dirty(action))
        + UNKNOWN
    )

    with grpc.insecure_channel(engine.target) as channel:
        answer = _call(channel, "Apply", dirty)
        assert MARKER not in answer
        assert answer == _call(channel, "Apply", clean.SerializeToString())

        timeout_state = _number(pb.TimeoutRequest, "state")
        timed = _call(channel, "Timeout", length_delimited(timeout_state, state_bytes) + UNKNOWN)
        assert MARKER not in timed
        set_up = _call(
            channel,
            "Setup",
            setup.SerializeToString()
            + length_delimited(_number(pb.SetupRequest, "options"), _dirty(game_pb2.Options()))
            + UNKNOWN,
        )
        assert MARKER not in set_up
        assert set_up == _call(channel, "Setup", setup.SerializeToString())
