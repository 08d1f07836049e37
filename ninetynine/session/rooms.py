"""Room documents: seats, tokens and the public room, as pure functions (no I/O).

A token is ``"<room_id>.<secret>"``: the room id routes the request, the secret (32 bytes
from :mod:`secrets`) proves the seat. Only ``sha256(secret)`` is stored, and comparison is
constant-time, so neither the store nor the logs can leak a usable token.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import grpc

from ninetynine.common.errors import ServiceError
from ninetynine.engine.v1 import game_pb2, trick_pb2
from ninetynine.session import games
from ninetynine.session.errors import session_error
from ninetynine.session.v1 import room_document_pb2 as doc_pb
from ninetynine.session.v1 import session_service_pb2 as pb

ROOM_ID_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I: read aloud as a join code
ROOM_ID_LENGTH = 6
MAX_NAME_LENGTH = 24
MAX_SPECTATORS = 200
# How long a spectator's place outlives its last subscription (or its issue, if it never
# subscribed) before a new spectator may take it: a reconnect within it keeps the place.
SPECTATOR_GRACE_MS = 30_000
TURN_SECONDS = (10, 15, 20, 30)

PHASE_NAMES = {
    pb.ROOM_PHASE_LOBBY: "lobby",
    pb.ROOM_PHASE_PLAYING: "playing",
    pb.ROOM_PHASE_FINISHED: "finished",
}


def new_room_id() -> str:
    return "".join(secrets.choice(ROOM_ID_ALPHABET) for _ in range(ROOM_ID_LENGTH))


def _hash(secret: str) -> bytes:
    return hashlib.sha256(secret.encode()).digest()


def new_token(room_id: str) -> tuple[str, bytes]:
    """A fresh token for ``room_id`` and the hash to store."""
    secret = secrets.token_urlsafe(32)
    return f"{room_id}.{secret}", _hash(secret)


def token_room(token: str) -> str:
    """The room id a token belongs to (INVALID_TOKEN when it has no shape of a token)."""
    room_id, sep, secret = token.partition(".")
    if not sep or not room_id or len(secret) < 16 or len(token) > 200:
        raise session_error("INVALID_TOKEN")
    return room_id


@dataclass(frozen=True, slots=True)
class Caller:
    """Who a token belongs to: a seat (``player_id``) or a spectator (``player_id`` is None)."""

    room_id: str
    player_id: str | None

    @property
    def spectator(self) -> bool:
        return self.player_id is None


def token_digest(token: str) -> bytes:
    """What the room stores of ``token``: the hash of its secret part."""
    return _hash(token.partition(".")[2])


def spectator_hashes(doc: doc_pb.RoomDocument) -> list[bytes]:
    """The token hashes of the room's spectators."""
    return [s.token_hash for s in doc.spectators] + list(doc.spectator_token_hashes)


def seat_holds(doc: doc_pb.RoomDocument, player_id: str, digest: bytes) -> bool:
    """Whether the token hashing to ``digest`` still acts for seat ``player_id``: leaving revokes it."""
    for seat in doc.seats:
        if seat.player_id == player_id:
            return bool(seat.token_hash) and hmac.compare_digest(seat.token_hash, digest)
    return False


def identify(doc: doc_pb.RoomDocument, token: str) -> Caller:
    room_id, _, secret = token.partition(".")
    if room_id != doc.room_id:
        raise session_error("INVALID_TOKEN")
    digest = _hash(secret)
    for seat in doc.seats:
        if seat.token_hash and hmac.compare_digest(seat.token_hash, digest):
            return Caller(doc.room_id, seat.player_id)
    for spectator in spectator_hashes(doc):
        if hmac.compare_digest(spectator, digest):
            return Caller(doc.room_id, None)
    raise session_error("INVALID_TOKEN")


def clean_name(name: str) -> str:
    name = " ".join(name.split())
    if not 1 <= len(name) <= MAX_NAME_LENGTH or not name.isprintable():
        raise session_error("INVALID_NAME")
    return name


def seat_of(doc: doc_pb.RoomDocument, player_id: str) -> doc_pb.StoredSeat:
    for seat in doc.seats:
        if seat.player_id == player_id:
            return seat
    raise session_error("INVALID_TOKEN")


# Refusals that answer a play for good (docs/client-protocol.md §3): the rules' (malformed or not
# allowed now), the lobby's and an outdated view's. Anything else (engine or store unavailable,
# room busy) says nothing about the play, which may be sent again.
_OUTCOME_CODES = (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.FAILED_PRECONDITION)
_CODES = {code.value[0]: code for code in grpc.StatusCode}


def is_play_outcome(err: ServiceError) -> bool:
    """Whether ``err`` is a play's outcome, to be given again for the same client_seq."""
    return err.code in _OUTCOME_CODES or err.reason == "VIEW_OUTDATED"


def refuse_play(seat: doc_pb.StoredSeat, client_seq: int, err: ServiceError) -> None:
    """Record that the seat's ``client_seq`` was refused with ``err``."""
    seat.last_client_seq = client_seq
    seat.last_outcome_seq = 0
    seat.last_outcome_total = 0
    seat.last_refusal.CopyFrom(
        doc_pb.StoredRefusal(
            code=err.code.value[0],
            reason=err.reason,
            domain=err.domain,
            metadata=err.metadata,
            message_ko=err.message_ko,
            message_en=err.message_en,
        )
    )


def last_refusal(seat: doc_pb.StoredSeat) -> ServiceError | None:
    """The refusal of the seat's last client_seq, as it was given; None when it was applied."""
    if not seat.HasField("last_refusal"):
        return None
    stored = seat.last_refusal
    return ServiceError(
        _CODES.get(stored.code, grpc.StatusCode.FAILED_PRECONDITION),
        stored.reason,
        stored.domain,
        message_ko=stored.message_ko,
        message_en=stored.message_en,
        metadata=dict(stored.metadata),
    )


def new_room(
    room_id: str,
    host_name: str,
    options: game_pb2.Options,
    max_seats: int,
    now_ms: int,
    rules: str = "",
    overrides: Mapping[str, str] | None = None,
    game: str = "",
    trick_options: trick_pb2.TrickOptions | None = None,
) -> tuple[doc_pb.RoomDocument, str]:
    """A room in the lobby with its host seated; returns the document and the host's token.

    ``rules`` and ``overrides`` are stored as given: the engine has accepted them (CreateRoom).
    ``game`` is the registry's kind (empty: the adding game), which bounds the seats.
    """
    games.entry(game).check_seats(max_seats)
    doc = doc_pb.RoomDocument(
        room_id=room_id,
        phase=pb.ROOM_PHASE_LOBBY,
        options=options,
        max_seats=max_seats,
        created_at_ms=now_ms,
        next_player_number=1,
        rules=rules,
        overrides=overrides,
        game="" if game == games.ADDING else game,
        trick_options=trick_options if game == games.TRICK else None,
    )
    player_id, token = add_seat(doc, host_name, bot=False)
    doc.host_player_id = player_id
    return doc, token


def add_seat(doc: doc_pb.RoomDocument, name: str, *, bot: bool) -> tuple[str, str]:
    """Seat somebody (lobby only); returns (player_id, token). Bots get no usable token."""
    if doc.phase != pb.ROOM_PHASE_LOBBY:
        raise session_error("GAME_ALREADY_STARTED", roomId=doc.room_id)
    if len(doc.seats) >= doc.max_seats:
        raise session_error("ROOM_FULL", roomId=doc.room_id, maxSeats=doc.max_seats)
    name = clean_name(name)
    player_id = f"p{doc.next_player_number}"
    doc.next_player_number += 1
    token, digest = new_token(doc.room_id)
    doc.seats.add(player_id=player_id, name=name, bot=bot, token_hash=b"" if bot else digest, connected=bot)
    return player_id, ("" if bot else token)


def _migrate_spectators(doc: doc_pb.RoomDocument, now_ms: int) -> None:
    # Places of documents written before presence was kept: away from now on.
    for digest in doc.spectator_token_hashes:
        doc.spectators.add(token_hash=digest, away_since_ms=now_ms)
    del doc.spectator_token_hashes[:]


def _drop_spectators(doc: doc_pb.RoomDocument, drop: Callable[[doc_pb.StoredSpectator], bool]) -> None:
    for index in reversed(range(len(doc.spectators))):
        if drop(doc.spectators[index]):
            del doc.spectators[index]


def add_spectator(doc: doc_pb.RoomDocument, now_ms: int, grace_ms: int) -> str:
    """A new spectator place; when all are taken, the places away for ``grace_ms`` are freed first."""
    _migrate_spectators(doc, now_ms)
    if len(doc.spectators) >= MAX_SPECTATORS:
        _drop_spectators(doc, lambda s: not s.present and now_ms - s.away_since_ms >= grace_ms)
    if len(doc.spectators) >= MAX_SPECTATORS:
        raise session_error("TOO_MANY_SPECTATORS", roomId=doc.room_id)
    token, digest = new_token(doc.room_id)
    doc.spectators.add(token_hash=digest, away_since_ms=now_ms)
    return token


def set_spectator_presence(doc: doc_pb.RoomDocument, digest: bytes, present: bool, now_ms: int) -> bool:
    """Record whether a client of the spectator place ``digest`` is subscribed; True if that changed
    (False too when the place is gone: given up or freed)."""
    _migrate_spectators(doc, now_ms)
    for spectator in doc.spectators:
        if hmac.compare_digest(spectator.token_hash, digest):
            if spectator.present == present:
                return False
            spectator.present = present
            if not present:
                spectator.away_since_ms = now_ms
            return True
    return False


def remove_spectator(doc: doc_pb.RoomDocument, token: str) -> None:
    digest = token_digest(token)
    _drop_spectators(doc, lambda s: hmac.compare_digest(s.token_hash, digest))
    keep = [h for h in doc.spectator_token_hashes if not hmac.compare_digest(h, digest)]
    del doc.spectator_token_hashes[:]
    doc.spectator_token_hashes.extend(keep)


def remove_seat(doc: doc_pb.RoomDocument, player_id: str) -> None:
    """Lobby: free the seat (the host's role passes to the next seated human, if any)."""
    keep = [s for s in doc.seats if s.player_id != player_id]
    del doc.seats[:]
    doc.seats.extend(keep)
    if doc.host_player_id == player_id:
        humans = [s.player_id for s in doc.seats if not s.bot]
        doc.host_player_id = humans[0] if humans else ""


def public_seat(doc: doc_pb.RoomDocument, seat: doc_pb.StoredSeat) -> pb.Seat:
    return pb.Seat(
        player_id=seat.player_id,
        name=seat.name,
        bot=seat.bot,
        connected=seat.connected,
        left=seat.left,
        host=seat.player_id == doc.host_player_id,
    )


def public_room(doc: doc_pb.RoomDocument) -> pb.Room:
    """The room as anybody may see it: no token hashes, no game state."""
    room = pb.Room(
        room_id=doc.room_id,
        phase=doc.phase,
        options=doc.options,
        max_seats=doc.max_seats,
        seats=[public_seat(doc, s) for s in doc.seats],
        host_player_id=doc.host_player_id,
        # The places, not who is watching right now: that changes without an event, and every
        # view of one room seq must show the same room.
        spectator_count=len(doc.spectators) + len(doc.spectator_token_hashes),
        created_at_ms=doc.created_at_ms,
        last_seq=doc.last_seq,
        deadline_ms=games.shown_deadline_ms(doc) if doc.phase == pb.ROOM_PHASE_PLAYING else 0,
    )
    games.of(doc).room_into(doc, room)
    return room
