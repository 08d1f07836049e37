"""The recorded corpus replays byte for byte: every server message becomes exactly the frame that
was recorded, every client frame exactly the recorded ``ClientMessage``.

The corpus also proves its own coverage (every message kind, event kind, enum value and view
shape), so a re-recording that lost a part fails here instead of silently testing less.
"""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import Iterator
from functools import cache
from typing import Any

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from ninetynine.gateway.convert import client_from_json, server_bytes
from ninetynine.gateway.v1 import gateway_service_pb2 as gw
from tests.gateway.golden.record import CORPUS_PATH


@cache
def corpus() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    server: list[dict[str, Any]] = []
    client: list[dict[str, Any]] = []
    for line in gzip.decompress(CORPUS_PATH.read_bytes()).decode("ascii").splitlines():
        record = json.loads(line)
        (server if "server" in record else client).append(record)
    return server, client


def test_every_server_message_is_the_recorded_frame() -> None:
    server, _ = corpus()
    wrong = []
    for record in server:
        msg = gw.ServerMessage.FromString(base64.b64decode(record["server"]))
        frame = server_bytes(msg, record["id"])
        if frame != record["frame"].encode("utf-8"):
            wrong.append((record["frame"][:300], frame[:300]))
    assert len(server) > 10_000
    assert wrong == [], f"{len(wrong)} frames differ; first: {wrong[0]}"


def test_every_client_frame_is_the_recorded_message() -> None:
    _, client = corpus()
    for record in client:
        expected = gw.ClientMessage.FromString(base64.b64decode(record["message"]))
        assert client_from_json(json.loads(record["client"])) == expected, record["client"]
    kinds = {gw.ClientMessage.FromString(base64.b64decode(r["message"])).WhichOneof("kind") for r in client}
    assert kinds == {f.name for f in gw.ClientMessage.DESCRIPTOR.oneofs_by_name["kind"].fields}


def _walk(msg: Message) -> Iterator[tuple[str, object]]:
    """(``Message.oneof`` or ``Enum``, member or number) for every oneof and enum value set in ``msg``."""
    for oneof in msg.DESCRIPTOR.oneofs:
        which = msg.WhichOneof(oneof.name)
        if which is not None:
            yield f"{msg.DESCRIPTOR.full_name}.{oneof.name}", which
    fields: Any = msg.ListFields()  # the stubs and upb disagree on descriptor types
    for field, value in fields:
        values = value if field.is_repeated else [value]
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            continue
        for v in values:
            if field.type == FieldDescriptor.TYPE_MESSAGE:
                yield from _walk(v)
            elif field.type == FieldDescriptor.TYPE_ENUM:
                yield field.enum_type.full_name, v


def _reachable_enums(descriptor: Any, seen: set[str]) -> Iterator[tuple[str, object]]:
    if descriptor.full_name in seen:
        return
    seen.add(descriptor.full_name)
    for field in descriptor.fields:
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            yield from _reachable_enums(field.message_type, seen)
        elif field.type == FieldDescriptor.TYPE_ENUM:
            yield from ((field.enum_type.full_name, v.number) for v in field.enum_type.values if v.number)


# Only preset games (SetupRequest.rules) produce these; the corpus records kr-product and classic
# rooms, whose frames must not change, so it cannot show them.
PRESET_ONLY: set[tuple[str, object]] = {
    ("ninetynine.engine.v1.Event.payload", "turn_skipped"),
    ("ninetynine.engine.v1.Event.payload", "play_again"),
    ("ninetynine.engine.v1.Event.payload", "tokens_paid"),
    ("ninetynine.engine.v1.Event.payload", "bonus"),
    ("ninetynine.engine.v1.Event.payload", "round_scored"),
    ("ninetynine.engine.v1.Event.payload", "start_card"),
    ("ninetynine.engine.v1.Event.payload", "special_hand"),
    ("ninetynine.engine.v1.CardKind", 10),
    ("ninetynine.engine.v1.CardKind", 11),
    ("ninetynine.engine.v1.RoundReason", 4),
    ("ninetynine.engine.v1.RoundReason", 5),
    ("ninetynine.engine.v1.RoundReason", 6),
    ("ninetynine.engine.v1.EliminationReason", 4),
    ("ninetynine.engine.v1.Reach", 1),
    ("ninetynine.engine.v1.Reach", 2),
    # paranoia (004 part III): pairs, points, penalty cards and the exchange phase
    ("ninetynine.engine.v1.Event.payload", "pair_played"),
    ("ninetynine.engine.v1.Event.payload", "points_scored"),
    ("ninetynine.engine.v1.Event.payload", "hand_scored"),
    ("ninetynine.engine.v1.Event.payload", "exchange_started"),
    ("ninetynine.engine.v1.Event.payload", "pass_chosen"),
    ("ninetynine.engine.v1.Event.payload", "exchange_done"),
    ("ninetynine.engine.v1.Phase", 8),
    # 003's ONO 99 presets
    ("ninetynine.engine.v1.Event.payload", "obligation_passed"),
    ("ninetynine.engine.v1.Event.payload", "second_card_owed"),
    ("ninetynine.engine.v1.Event.payload", "cards_discarded"),
    ("ninetynine.engine.v1.CardKind", 12),
    ("ninetynine.engine.v1.CardKind", 13),
}


# The trick game never sends these: a bid is described by the view's bidChoice, not listed among
# legalActions, and bidding starts with biddingStarted, not a trickTurnStarted.
TRICK_NEVER_SENT: set[tuple[str, object]] = {
    ("ninetynine.engine.v1.TrickActionKind", 1),
    ("ninetynine.engine.v1.TrickDecision", 1),
}


def test_the_corpus_covers_every_kind_enum_value_and_view_shape() -> None:
    server, _ = corpus()
    seen: set[tuple[str, object]] = set()
    shapes: set[str] = set()
    for record in server:
        msg = gw.ServerMessage.FromString(base64.b64decode(record["server"]))
        seen.update(_walk(msg))
        if msg.WhichOneof("kind") == "view":
            view = msg.view.view
            shapes.add(
                ("player" if view.viewer_id else "spectator") + ("-finished" if view.result.ranking else "")
            )
        if msg.WhichOneof("kind") == "joined":
            shapes.add(f"joined-{msg.joined.role}")
    wanted: set[tuple[str, object]] = {
        ("ninetynine.gateway.v1.ServerMessage.kind", f.name)
        for f in gw.ServerMessage.DESCRIPTOR.oneofs[0].fields
    }
    event: Any = gw.EventPush.DESCRIPTOR.fields_by_name["event"].message_type
    wanted |= {("ninetynine.engine.v1.Event.payload", f.name) for f in event.oneofs_by_name["payload"].fields}
    wanted.update(_reachable_enums(gw.ServerMessage.DESCRIPTOR, set()))
    assert wanted - seen == PRESET_ONLY | TRICK_NEVER_SENT
    assert shapes >= {
        "player",
        "spectator",
        "player-finished",
        "spectator-finished",
        "joined-player",
        "joined-spectator",
    }
    ids = {json.dumps(r["id"]) for r in server}
    assert {"null", '"req-1"', "0", str(2**53 - 1), str(2**64)} <= ids
