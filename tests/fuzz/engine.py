"""Fuzz target: the engine's request handling in-process (``EngineHandlers``, as ``LocalEngine`` runs it).

The first byte picks the method (``Setup``, ``Apply``, ``View``, ``Timeout``; for ``View`` also the
language), the rest is the request's wire bytes: what a caller of the engine's gRPC service sends.
Bytes that do not decode are skipped (the server's lenient deserializer refuses them before the
handlers; ``tests/engine/test_service_fuzz.py`` covers that). The seeds are real requests from
games of both modes, of a preset (its rule set in the state) and of the trick game (State.trick)
at several stages, so libFuzzer
starts from states the validator accepts, and half its mutations change one field of the decoded
request (``custom_mutator``) instead of bytes.

Contract: a response, or a ``ServiceError`` with an UPPER_SNAKE rules reason (the adding game's or
the trick game's) and a status code of the error tables (INVALID_ARGUMENT, FAILED_PRECONDITION,
ABORTED; never UNKNOWN or INTERNAL); the request message is left as it came (its deterministic
serialization is unchanged); and a state the engine returns is one it accepts again (a ``View`` of
it succeeds), so the session can always go on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import atheris

from tests.fuzz.common import mutate_wire, require, require_reason

with atheris.instrument_imports(include=["ninetynine"]):
    from google.protobuf.message import DecodeError, Message

    from ninetynine.common.errors import ServiceError
    from ninetynine.engine import convert, trick, trick_wire
    from ninetynine.engine.errors import REASON_STATUS, TRICK_REASON_STATUS
    from ninetynine.engine.handlers import EngineHandlers, RulesMetrics
    from ninetynine.engine.rules import CLASSIC, PRESETS, Options, Reason, apply, setup, timeout_action
    from ninetynine.engine.trick import TrickReason
    from ninetynine.engine.v1 import engine_service_pb2 as pb

HANDLERS: Final = EngineHandlers(RulesMetrics.create(None), log_fields=False)
ALLOWED_CODES: Final = set(REASON_STATUS.values()) | set(TRICK_REASON_STATUS.values())
REASONS: Final = set(Reason.__members__) | set(TrickReason.__members__)
ARGS: Final = ["-max_len=16384"]  # a mid-game state with its history is a few kilobytes

# method index -> (request type, call)
METHODS: Final[list[tuple[type[Message], Callable[[Any], Message]]]] = [
    (pb.SetupRequest, HANDLERS.setup),
    (pb.ApplyRequest, HANDLERS.apply),
    (pb.ViewRequest, lambda request: HANDLERS.view(request, "ko")),
    (pb.TimeoutRequest, HANDLERS.timeout),
    (pb.ViewRequest, lambda request: HANDLERS.view(request, "en")),
]


def _check_state(response: Message) -> None:
    """The engine's own output state must be accepted by the engine (the session sends it back)."""
    state = response.state  # type: ignore[attr-defined]
    try:
        HANDLERS.view(pb.ViewRequest(state=state), "en")
    except ServiceError as err:
        raise AssertionError(f"the engine refuses a state it returned: {err}") from None


@atheris.instrument_func  # its branches (the input forms) count as coverage too
def TestOneInput(data: bytes) -> None:
    if not data:
        return
    request_type, call = METHODS[data[0] % len(METHODS)]
    try:
        request = request_type.FromString(data[1:])
    except DecodeError:
        return
    before = request.SerializeToString(deterministic=True)
    try:
        response = call(request)
    except ServiceError as err:
        require_reason(err.reason)
        require(err.reason in REASONS, f"not a rules reason: {err.reason}")
        require(err.code in ALLOWED_CODES, f"{err.reason} as {err.code.name}")
        require(bool(err.message("ko")) and bool(err.message("en")), f"{err.reason} without a text")
    else:
        response.SerializeToString()
        if not isinstance(request, pb.ViewRequest):
            _check_state(response)
    require(request.SerializeToString(deterministic=True) == before, "the handler changed its request")


# Half the mutations are structure-aware (tests.fuzz.common.mutate_wire): libFuzzer's byte
# mutations mostly break a request's wire format or its seed commitment, so alone they reach the
# validator's first checks over and over.
STRINGS: Final = (
    *("", "x", "N1-1", "N10-2", "PM9-1", "J-1", "Z-1", "AS-1", "10D-2", "ann", "bob", "0" * 64),
    *("na-online", "card.K", "add", "tokens", "aceValue", "sign"),
    *("trick", "adding", "6S", "AC", "10H", "bid", "play"),
)


def custom_mutator(data: bytes, max_size: int, seed: int) -> bytes:
    request_type = METHODS[data[0] % len(METHODS)][0] if data else None
    return mutate_wire(data, max_size, seed, request_type, STRINGS)


def _requests() -> list[tuple[int, Message]]:
    """Real requests (method index, message) from games of both modes and a preset, start to finish."""
    out: list[tuple[int, Message]] = []
    for options, players, rules in (
        (Options(), ["ann", "bob", "cho"], ""),
        (Options(mode=CLASSIC, lives=1), ["a", "b"], ""),
        (Options(mode=CLASSIC), ["ann", "bob", "cho"], "na-online"),
    ):
        setup_request = pb.SetupRequest(player_ids=players, seed=7, now_ms=1_000, rules=rules)
        setup_request.options.CopyFrom(convert.options_to_proto(options))
        setup_request.display_names[players[0]] = "지호"
        if rules:
            setup_request.overrides["card.K"] = "add"
        out.append((0, setup_request))
        state, _ = setup(players, options, seed=7, now_ms=1_000, rules=PRESETS.get(rules))
        moves = 0
        while not state.finished and moves < 400:
            if moves % 7 == 0:
                proto = convert.state_to_proto(state)
                action = timeout_action(state)
                apply_request = pb.ApplyRequest(state=proto, player_id=state.current, expected_seq=state.seq)
                apply_request.action.CopyFrom(convert.action_to_proto(action))
                out.append((1, apply_request))
                out.append((2, pb.ViewRequest(state=proto, viewer_id=state.current)))
                out.append((3, pb.TimeoutRequest(state=proto, expected_seq=state.seq, now_ms=2_000)))
            state, _ = apply(state, state.current, timeout_action(state), now_ms=1_000 + moves)
            moves += 1
        out.append((4, pb.ViewRequest(state=convert.state_to_proto(state))))  # finished, spectator
    out += _trick_requests()
    # Requests that once broke the contract (tests/engine/test_service_errors.py has them too).
    out.append((0, pb.SetupRequest(player_ids=["ann", "bob"], now_ms=2**63 - 1)))
    playing = next(request for method, request in out if method == 1).state  # type: ignore[attr-defined]
    for field, value in (("turn_started_at_ms", 2**63 - 1), ("seq", 2**64 - 1), ("round", 2**32 - 1)):
        broken = pb.TimeoutRequest()
        broken.state.CopyFrom(playing)
        setattr(broken.state, field, value)
        out.append((3, broken))
    broken = pb.TimeoutRequest()
    broken.state.CopyFrom(playing)
    broken.state.seats[-1].lives_lost = 2**32 - 1
    out.append((3, broken))
    return out


def _trick_requests() -> list[tuple[int, Message]]:
    """A trick match from setup to its end (timeout moves), every few decisions."""
    out: list[tuple[int, Message]] = [
        (0, pb.SetupRequest(player_ids=["ann", "bob", "cho"], seed=7, game="trick"))
    ]
    state, _ = trick.setup(["ann", "bob", "cho"], trick.TrickOptions(max_deals=9), seed=7, now_ms=1_000)
    moves = 0
    while not state.finished:
        player = trick.pending(state)[0]
        action = trick.timeout_action(state, player)
        if moves % 5 == 0:
            proto = pb.ApplyRequest(player_id=player, expected_seq=state.seq)
            trick_wire.state_into(state, proto.state.trick)
            trick_wire.action_into(action, proto.action)
            out.append((1, proto))
            out.append((2, pb.ViewRequest(state=proto.state, viewer_id=player)))
            out.append((3, pb.TimeoutRequest(state=proto.state, now_ms=2_000)))
        state, _ = trick.apply(state, player, action, now_ms=1_000 + moves)
        moves += 1
    final = pb.ViewRequest()
    trick_wire.state_into(state, final.state.trick)
    out.append((4, final))
    return out


def seeds() -> list[bytes]:
    return [bytes([method]) + request.SerializeToString() for method, request in _requests()]


DICTIONARY: Final = [
    card.encode() for card in ("N1-1", "N10-1", "PM9-1", "PM10-2", "Z-1", "J-1", "AS-1", "KH-2", "10D-1")
] + [b"ann", b"bob", b"cho", b"kr-product", b"classic", b"trick", b"6S", b"AC", b"10H"]
