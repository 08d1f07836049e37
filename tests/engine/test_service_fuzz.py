"""Hypothesis-generated requests never make the engine fail as UNKNOWN or INTERNAL.

Three generators: raw random bytes, messages with random values in every field (built from the
proto descriptors, so new fields are fuzzed too), and real states with one field changed.
"""

from __future__ import annotations

from typing import Any

import grpc
import pytest
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ninetynine.engine import convert
from ninetynine.engine.rules import CLASSIC, Options, apply, setup, timeout_action
from ninetynine.engine.v1 import engine_service_pb2 as pb
from ninetynine.engine.v1 import rules_pb2
from tests.engine.service_fixtures import RunningEngine

ACCEPTED = {
    grpc.StatusCode.OK,
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.FAILED_PRECONDITION,
    grpc.StatusCode.ABORTED,
}
METHODS = {
    "Setup": pb.SetupRequest,
    "Apply": pb.ApplyRequest,
    "View": pb.ViewRequest,
    "Timeout": pb.TimeoutRequest,
    "ListRules": rules_pb2.ListRulesRequest,
}
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

_INT_RANGES = {
    FieldDescriptor.TYPE_INT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_INT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_UINT32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_UINT64: (0, 2**64 - 1),
    FieldDescriptor.TYPE_SINT32: (-(2**31), 2**31 - 1),
}
# Small values are where the game's meaning lives (totals, seq, enum numbers, card ids).
_words = st.sampled_from(["", "a", "b", "N1-1", "J-1", "Z-1", "PM9-1", "AS-1", "KS-2", "ann", "bob"])


def _scalar(field: FieldDescriptor) -> st.SearchStrategy[Any]:
    if field.type == FieldDescriptor.TYPE_BOOL:
        return st.booleans()
    if field.type == FieldDescriptor.TYPE_STRING:
        return _words | st.text(max_size=12)
    if field.type == FieldDescriptor.TYPE_ENUM:
        # Known numbers and unknown ones (proto3 enums are open).
        known = [v.number for v in field.enum_type.values] if field.enum_type is not None else [0]
        return st.sampled_from(known) | st.integers(-5, 50)
    lo, hi = _INT_RANGES[field.type]
    return st.integers(max(lo, -3), min(hi, 120)) | st.integers(lo, hi)


def _fill(message: Message, data: st.DataObject, depth: int) -> None:
    descriptor: Any = message.DESCRIPTOR
    for field in descriptor.fields:
        if not data.draw(st.booleans()):
            continue
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            target = getattr(message, field.name)
            for _ in range(data.draw(st.integers(0, 3))):
                target[data.draw(_words)] = data.draw(_words)
        elif field.message_type is not None:
            if depth >= 3:
                continue
            if field.is_repeated:
                for _ in range(data.draw(st.integers(0, 3))):
                    _fill(getattr(message, field.name).add(), data, depth + 1)
            else:
                _fill(getattr(message, field.name), data, depth + 1)
                getattr(message, field.name).SetInParent()
        elif field.is_repeated:
            getattr(message, field.name).extend(data.draw(st.lists(_scalar(field), max_size=4)))
        else:
            setattr(message, field.name, data.draw(_scalar(field)))


def _code_of(engine: RunningEngine, method: str, payload: bytes) -> grpc.StatusCode:
    with grpc.insecure_channel(engine.target) as channel:
        call = channel.unary_unary(
            f"/ninetynine.engine.v1.EngineService/{method}",
            request_serializer=None,
            response_deserializer=None,
        )
        try:
            call(payload, timeout=10)
        except grpc.RpcError as err:
            return err.code()  # type: ignore[attr-defined,no-any-return]
    return grpc.StatusCode.OK


@FUZZ
@given(method=st.sampled_from(sorted(METHODS)), payload=st.binary(max_size=300))
def test_random_bytes(engine: RunningEngine, method: str, payload: bytes) -> None:
    assert _code_of(engine, method, payload) in ACCEPTED


@FUZZ
@given(method=st.sampled_from(sorted(METHODS)), data=st.data())
def test_random_field_values(engine: RunningEngine, method: str, data: st.DataObject) -> None:
    request = METHODS[method]()
    _fill(request, data, 0)
    assert _code_of(engine, method, request.SerializeToString()) in ACCEPTED


def _mid_game_states() -> list[pb.ApplyRequest]:
    requests = []
    for options in (Options(), Options(mode=CLASSIC, lives=2)):
        state, _ = setup(["ann", "bob", "cho"], options, seed=12)
        for _ in range(6):
            state, _ = apply(state, state.current, timeout_action(state), now_ms=5)
        request = pb.ApplyRequest(state=convert.state_to_proto(state), player_id=state.current)
        request.action.CopyFrom(convert.action_to_proto(timeout_action(state)))
        requests.append(request)
    return requests


BASES = _mid_game_states()


@FUZZ
@given(
    base=st.sampled_from(range(len(BASES))),
    method=st.sampled_from(["Apply", "View", "Timeout"]),
    data=st.data(),
)
def test_real_state_with_one_field_changed(
    engine: RunningEngine, base: int, method: str, data: st.DataObject
) -> None:
    state = pb.ApplyRequest()
    state.CopyFrom(BASES[base])
    target: Message = state.state
    # Walk down to one random (sub)message of the state and overwrite some of its fields.
    for _ in range(data.draw(st.integers(0, 2))):
        subs = [
            f
            for f in target.DESCRIPTOR.fields
            if f.message_type is not None and not f.message_type.GetOptions().map_entry
        ]
        if not subs:
            break
        field = data.draw(st.sampled_from(subs))
        if field.is_repeated:
            items = getattr(target, field.name)
            if not len(items):
                break
            target = items[data.draw(st.integers(0, len(items) - 1))]
        else:
            target = getattr(target, field.name)
    _fill(target, data, 2)
    if method == "Apply":
        payload = state.SerializeToString()
    elif method == "View":
        payload = pb.ViewRequest(state=state.state, viewer_id=state.player_id).SerializeToString()
    else:
        payload = pb.TimeoutRequest(state=state.state).SerializeToString()
    assert _code_of(engine, method, payload) in ACCEPTED


@pytest.mark.parametrize("method", sorted(METHODS))
def test_empty_request_is_refused_cleanly(engine: RunningEngine, method: str) -> None:
    assert _code_of(engine, method, b"") in ACCEPTED - {grpc.StatusCode.ABORTED}
