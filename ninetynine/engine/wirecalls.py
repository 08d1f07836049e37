"""Apply and Timeout answered from their bytes, so the states they carry are kept by those bytes.

The engine's gRPC surface takes ``Apply``, ``Timeout`` and ``ApplyMany`` requests as the bytes that
came and serializes their answers itself (they are registered raw in
:func:`ninetynine.common.lenient.lenient_handler`). The state a call brings and the state its answer
carries are then slices of bytes the engine already holds: the answered state is remembered by its
slice (:mod:`ninetynine.engine.recent`), and a caller that sends it back, byte for byte, has it
neither decoded nor checked again. Parsing stays lenient: bytes that do not parse are refused
MALFORMED_REQUEST, never INTERNAL.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from google.protobuf.message import Message

from ninetynine.common.lenient import checked, lenient
from ninetynine.common.wire import first_payload, sole_payload
from ninetynine.engine.errors import ENGINE_DOMAIN
from ninetynine.engine.handlers import EngineHandlers
from ninetynine.engine.v1 import engine_service_pb2 as pb

__all__ = [
    "APPLY_STATE",
    "TIMEOUT_STATE",
    "StatePath",
    "answer_apply",
    "answer_timeout",
    "keep_answer",
    "state_slice",
]

# Field numbers from a message down to its game state.
StatePath = Sequence[int]


def _state_field(message: type[Message]) -> int:
    return message.DESCRIPTOR.fields_by_name["state"].number


# (request path, answer path) of each call's state.
APPLY_STATE: tuple[StatePath, StatePath] = (
    (_state_field(pb.ApplyRequest),),
    (_state_field(pb.ApplyResponse),),
)
TIMEOUT_STATE: tuple[StatePath, StatePath] = (
    (_state_field(pb.TimeoutRequest),),
    (_state_field(pb.TimeoutResponse),),
)

_parse_apply = lenient(pb.ApplyRequest, keep_unknown=True)
_parse_timeout = lenient(pb.TimeoutRequest, keep_unknown=True)


def state_slice(data: bytes, path: StatePath, *, ours: bool = False) -> bytes | None:
    """The bytes at ``path`` of ``data``; None unless each field on the way occurs exactly once.

    A field sent twice is parsed as the merge of its parts, which no single slice stands for.
    ``ours``: ``data`` is an answer this engine serialized, where each field occurs once, so the
    walk stops at the field.
    """
    find = first_payload if ours else sole_payload
    for number in path:
        found = find(data, number)
        if found is None:
            return None
        data = found
    return data


def keep_answer(handlers: EngineHandlers, before: bytes | None, out: bytes, path: StatePath) -> None:
    """Remember the state just answered (if any) by its slice of ``out``, the serialized answer."""
    answered = handlers.take_answered()
    if answered is None:
        return
    wire = state_slice(out, path, ours=True)
    if wire is not None:
        handlers.recent.moved(before, wire, answered)


def _answer(
    handlers: EngineHandlers,
    data: bytes,
    parse: Callable[[bytes], object],
    paths: tuple[StatePath, StatePath],
    handle: Callable[[Any, bytes | None], Message],  # takes what ``parse`` gives, once checked
) -> bytes:
    request = parse(data)
    checked(request, ENGINE_DOMAIN, handlers.count_refusal)
    before = state_slice(data, paths[0])
    out = handle(request, before).SerializeToString()
    keep_answer(handlers, before, out, paths[1])
    return out


def answer_apply(handlers: EngineHandlers, data: bytes) -> bytes:
    """The serialized ``ApplyResponse`` to an ``ApplyRequest``'s bytes (refusals raise ServiceError)."""
    return _answer(handlers, data, _parse_apply, APPLY_STATE, handlers.apply)


def answer_timeout(handlers: EngineHandlers, data: bytes) -> bytes:
    """The serialized ``TimeoutResponse`` to a ``TimeoutRequest``'s bytes (refusals raise ServiceError)."""
    return _answer(handlers, data, _parse_timeout, TIMEOUT_STATE, handlers.timeout)
