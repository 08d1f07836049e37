"""Fuzz target: the session's request parsing, before any room is loaded.

The first byte picks a ``SessionService`` method (``PlayMany`` and ``SubscribeMany`` included: their
stream items are requests too), the rest is the request's wire bytes, decoded by the deserializer
the server registers (``ninetynine.common.lenient``). Then every client-supplied string the session
parses without I/O goes through its parser, wherever it sits in the message (other first bytes
give one of these parsers the rest of the bytes as its string, so libFuzzer can work on the
characters without breaking a field's length prefix):

* ``token`` — ``rooms.token_room`` (and the room id it names through the store's ``check_room_id``),
* ``room_id`` — ``check_room_id`` (a refusal there is answered ROOM_NOT_FOUND),
* ``page_token`` — ``parse_page_token`` (answered INVALID_PAGE_TOKEN),
* ``accept_language`` — ``lang_from_metadata``, ``request_id`` — ``sanitize_request_id``,

and a ``CreateRoom`` / ``JoinRoom`` / ``AddBot`` builds the room document it would store
(``rooms.new_room``, ``rooms.add_seat``: options, seats and the name rules) and its public room.

Contract: undecodable bytes become MALFORMED_REQUEST; each parser answers a value or its documented
refusal (``ServiceError`` with an UPPER_SNAKE reason, or the store's ``InvalidStoreInput``); a page
token that parses is exactly the token that room's listing hands out (``list_key``); a request id is
kept only when it is a valid one; a room document survives its own serialization.
"""

from __future__ import annotations

from typing import Any, Final

import atheris

from tests.fuzz.common import mutate_wire, require, require_reason

atheris.enabled_hooks.add("str")

with atheris.instrument_imports(include=["ninetynine"]):
    from google.protobuf.descriptor import FieldDescriptor
    from google.protobuf.message import Message
    from google.protobuf.message_factory import GetMessageClass

    from ninetynine.common.context import _VALID_REQUEST_ID, sanitize_request_id
    from ninetynine.common.errors import ServiceError, lang_from_metadata
    from ninetynine.common.lenient import Undecodable, lenient, malformed_request
    from ninetynine.engine.convert import options_from_proto
    from ninetynine.engine.errors import from_rule_error
    from ninetynine.engine.rules import RuleError
    from ninetynine.session import rooms
    from ninetynine.session.errors import DOMAIN, session_error
    from ninetynine.session.store.base import InvalidStoreInput, check_room_id, list_key, parse_page_token
    from ninetynine.session.v1 import room_document_pb2 as doc_pb
    from ninetynine.session.v1 import session_service_pb2 as pb

SERVICE: Final = pb.DESCRIPTOR.services_by_name["SessionService"]
PARSERS: Final = [(method.name, lenient(GetMessageClass(method.input_type))) for method in SERVICE.methods]
ROOM_ID: Final = "K7QX2P"
# Tokens end at 200 characters, names at 24: longer inputs only slow it. The value profile makes
# the operands of the parsers' comparisons (lengths, separators) count as coverage.
ARGS: Final = ["-max_len=1024", "-use_value_profile=1"]
NOW_MS: Final = 1_700_000_000_000


def _refused(err: ServiceError, *reasons: str) -> None:
    require_reason(err.reason)
    require(err.reason in reasons, f"{err.reason} where {reasons} was expected")


def _room_id(room_id: str) -> None:
    try:
        check_room_id(room_id)
    except InvalidStoreInput:
        session_error("ROOM_NOT_FOUND", roomId=room_id[:16])  # what load() answers; must be constructible


def _token(token: str) -> None:
    try:
        room_id = rooms.token_room(token)
    except ServiceError as err:
        _refused(err, "INVALID_TOKEN")
        return
    require(bool(room_id) and "." not in room_id, f"room id {room_id!r} from {token!r}")
    _room_id(room_id)


def _page_token(page_token: str) -> None:
    try:
        after = parse_page_token(page_token)
    except InvalidStoreInput:
        return
    if after is None:
        require(page_token == "", f"{page_token!r} read as the first page")
    else:
        # Only the tokens the listing hands out may parse: anything else would page from elsewhere.
        require(list_key(*after) == page_token, f"{page_token!r} read as {after!r}")


def _request_id(request_id: str) -> None:
    kept = sanitize_request_id(request_id or None)
    require(_VALID_REQUEST_ID.fullmatch(kept) is not None, f"request id {kept!r}")
    require(kept == request_id or _VALID_REQUEST_ID.fullmatch(request_id) is None, f"{request_id!r} dropped")


def _language(header: str) -> None:
    lang = lang_from_metadata((("accept-language", header),))
    require(lang in ("ko", "en"), f"language {lang!r} of {header!r}")


STRING_CHECKS: Final = {
    "token": _token,
    "room_id": _room_id,
    "page_token": _page_token,
    "request_id": _request_id,
    "accept_language": _language,
}


def _walk(message: Message) -> None:
    descriptor: Any = message.DESCRIPTOR
    for field in descriptor.fields:
        value = getattr(message, field.name)
        if field.message_type is not None:
            if field.message_type.GetOptions().map_entry:
                continue
            if field.is_repeated:
                for item in value:
                    _walk(item)
            elif message.HasField(field.name):
                _walk(value)
        elif field.type == FieldDescriptor.TYPE_STRING and field.name in STRING_CHECKS:
            for item in value if field.is_repeated else [value]:
                STRING_CHECKS[field.name](item)


def _stored(doc: doc_pb.RoomDocument) -> None:
    require(doc_pb.RoomDocument.FromString(doc.SerializeToString()) == doc, "document round trip")
    rooms.public_room(doc).SerializeToString()


def _lobby() -> doc_pb.RoomDocument:
    doc, _ = rooms.new_room(ROOM_ID, "지호", pb.CreateRoomRequest().options, 4, NOW_MS)
    return doc


LOBBY: Final = _lobby()


def _documents(request: Message) -> None:
    """The room document the request would build, as the service builds it."""
    if isinstance(request, pb.CreateRoomRequest):
        try:
            options_from_proto(request.options)
        except RuleError as err:
            _refused(from_rule_error(err), "INVALID_OPTION")
            return
        try:
            doc, token = rooms.new_room(ROOM_ID, request.name, request.options, request.max_seats, NOW_MS)
        except ServiceError as err:
            _refused(err, "INVALID_SEATS", "INVALID_NAME")
            return
        require(rooms.token_room(token) == ROOM_ID, "the host's token names another room")
        require(
            rooms.identify(doc, token).player_id == doc.host_player_id, "the host's token is not the host"
        )
        _stored(doc)
    elif isinstance(request, pb.JoinRoomRequest | pb.AddBotRequest):
        doc = doc_pb.RoomDocument()
        doc.CopyFrom(LOBBY)
        try:
            player_id, token = rooms.add_seat(doc, request.name, bot=isinstance(request, pb.AddBotRequest))
        except ServiceError as err:
            _refused(err, "INVALID_NAME")
            return
        require(rooms.seat_of(doc, player_id).name == " ".join(request.name.split()), "the seat's name")
        if token:
            require(rooms.identify(doc, token).player_id == player_id, "the new token is not the seat")
        _stored(doc)


def _name(name: str) -> None:
    for request in (pb.CreateRoomRequest(name=name, max_seats=4), pb.JoinRoomRequest(name=name)):
        _documents(request)


STRING_FORMS: Final = 6


@atheris.instrument_func  # one branch per parser: libFuzzer keeps a seed for each
def check_string(form: int, text: str) -> None:
    """Strings straight from the bytes: libFuzzer then mutates the characters themselves instead of
    breaking the length prefix of the field they sit in."""
    if form == 0:
        _token(text)
    elif form == 1:
        _room_id(text)
    elif form == 2:
        _page_token(text)
    elif form == 3:
        _request_id(text)
    elif form == 4:
        _language(text)
    else:
        _name(text)


@atheris.instrument_func  # its branches (the input forms) count as coverage too
def TestOneInput(data: bytes) -> None:
    if not data:
        return
    form = data[0] % (len(PARSERS) + STRING_FORMS)
    if form >= len(PARSERS):
        # FuzzedDataProvider's text: ASCII, UTF-16 or UTF-32 code units as the next byte says, so one
        # changed byte can turn a character into any other (a digit into another script's digit).
        # It holds no lone surrogate: protobuf strings are UTF-8, so none reaches the session.
        fdp = atheris.FuzzedDataProvider(data[1:])
        check_string(form - len(PARSERS), fdp.ConsumeUnicodeNoSurrogates(len(data)))
        return
    _, parse = PARSERS[form]
    request = parse(data[1:])
    if isinstance(request, Undecodable):
        _refused(malformed_request(DOMAIN, request.error), "MALFORMED_REQUEST")
        return
    _walk(request)
    _documents(request)


# Half the mutations are structure-aware for the request forms (tests.fuzz.common.mutate_wire).
STRINGS: Final = (
    "",
    ROOM_ID,
    f"{ROOM_ID}.{'s' * 43}",
    f"{ROOM_ID}.short",
    list_key(NOW_MS, ROOM_ID),
    "ko",
    "en;q=0.5",
    "r-1",
    "지호",
    " ",
    "x" * 25,
)


def custom_mutator(data: bytes, max_size: int, seed: int) -> bytes:
    form = data[0] % (len(PARSERS) + STRING_FORMS) if data else len(PARSERS)
    method = SERVICE.methods[form] if form < len(PARSERS) else None
    request_type = GetMessageClass(method.input_type) if method is not None else None
    return mutate_wire(data, max_size, seed, request_type, STRINGS)


def _example(method: str) -> Message:
    token = f"{ROOM_ID}.{'s' * 43}"
    play = pb.PlayRequest(token=token, client_seq=3, expected_move_seq=5)
    play.action.card_id = "N3-1"
    examples: dict[str, Message] = {
        "CreateRoom": pb.CreateRoomRequest(name="지호", max_seats=4),
        "JoinRoom": pb.JoinRoomRequest(room_id=ROOM_ID, name="Sam"),
        "Spectate": pb.SpectateRequest(room_id=ROOM_ID),
        "AddBot": pb.AddBotRequest(token=token, name="bot"),
        "ListRooms": pb.ListRoomsRequest(page_size=20, page_token=list_key(NOW_MS, ROOM_ID)),
        "Play": play,
        "PlayMany": pb.PlayManyRequest(call_id=1, play=play, accept_language="en-US;q=0.9", request_id="r-1"),
        "Subscribe": pb.SubscribeRequest(token=token, after_seq=4),
        "SubscribeMany": pb.SubscribeManyRequest(
            open=pb.OpenSubscription(id=1, request=pb.SubscribeRequest(token=token), accept_language="ko")
        ),
    }
    message = examples.get(method)
    if message is None:
        message = GetMessageClass(SERVICE.methods_by_name[method].input_type)()
        if "token" in message.DESCRIPTOR.fields_by_name:
            message.token = token  # type: ignore[attr-defined]
        if "room_id" in message.DESCRIPTOR.fields_by_name:
            message.room_id = ROOM_ID  # type: ignore[attr-defined]
    return message


def seeds() -> list[bytes]:
    requests = [
        bytes([index]) + _example(method).SerializeToString() for index, (method, _) in enumerate(PARSERS)
    ]
    strings = [f"{ROOM_ID}.{'s' * 43}", ROOM_ID, list_key(NOW_MS, ROOM_ID), "r-1", "en-US;q=0.9, ko", "지호"]
    # Page tokens that once broke the contract (other scripts' digits; see test_contract.py).
    regressions = [bytes([len(PARSERS) + 2]) + b"\x02" + (d * 15 + ":ABC").encode("utf-16-le") for d in "²١"]
    # As UTF-16 text only: an ASCII copy would cover the same lines, and libFuzzer keeps one of the two.
    return (
        requests
        + [
            bytes([len(PARSERS) + index]) + b"\x02" + text.encode("utf-16-le")
            for index, text in enumerate(strings)
        ]
        + regressions
    )


DICTIONARY: Final = [
    ROOM_ID.encode(),
    b".",
    b":",
    list_key(NOW_MS, ROOM_ID).encode(),
    b"000000000000000",
    b"en",
    b"ko",
    b";q=",
    b"en-US",
]
