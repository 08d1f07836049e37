"""Client messages are dispatched from one table: every type of the client protocol has exactly one
handler, and where a handler may run is what a client sees when it sends the message out of place."""

from __future__ import annotations

from typing import Any

from ninetynine.gateway.handlers import HANDLER_OF_FIELD, HANDLERS, Where
from ninetynine.gateway.protocol import schema
from ninetynine.gateway.server import RunningGateway
from ninetynine.gateway.v1 import gateway_service_pb2 as gw
from tests.gateway.conftest import WsFactory
from tests.gateway.doc_examples import doc_examples

_ONEOF = gw.ClientMessage.DESCRIPTOR.oneofs_by_name["kind"]

# docs/client-protocol.md §2: these bind a connection to a room, these act in it.
BINDING = {"createRoom", "joinRoom", "spectate", "resume"}
IN_ROOM = {"play", "addBot", "startGame", "leaveRoom", "rematch"}


def _schema_types() -> set[str]:
    refs = [entry["$ref"] for entry in schema()["$defs"]["ClientMessage"]["oneOf"]]
    assert all(ref.startswith("#/$defs/") for ref in refs), refs
    return {ref.removeprefix("#/$defs/") for ref in refs}


def test_every_client_message_type_has_one_handler_and_every_handler_a_type() -> None:
    proto_types = {f.json_name for f in _ONEOF.fields}
    assert set(HANDLERS) == proto_types, "ClientMessage oneof and the handler table differ"
    assert set(HANDLERS) == _schema_types(), "the schema's ClientMessage and the handler table differ"
    assert set(HANDLER_OF_FIELD) == {f.name for f in _ONEOF.fields}
    for type_name, handler in HANDLERS.items():
        assert handler.type == type_name
        assert HANDLER_OF_FIELD[handler.field] is handler
        assert handler.schema in schema()["$defs"], f"{type_name}: no schema definition {handler.schema}"


def test_where_each_message_may_run_is_the_documented_place() -> None:
    where = {name: handler.where for name, handler in HANDLERS.items()}
    assert {name for name, w in where.items() if w is Where.UNBOUND} == BINDING
    assert {name for name, w in where.items() if w is Where.BOUND} == IN_ROOM


def _examples() -> dict[str, dict[str, Any]]:
    """One documented example of each client type, with an id so the reply can be told apart."""
    found: dict[str, dict[str, Any]] = {}
    for message in doc_examples()["client"]:
        found.setdefault(message["type"], {**message, "id": f"x-{message['type']}"})
    assert set(found) == set(HANDLERS), "docs/client-protocol.md lacks an example of some type"
    return found


async def test_each_message_out_of_place_is_refused_as_its_entry_says(
    gateway: RunningGateway, ws_client: WsFactory
) -> None:
    examples = _examples()
    unbound = await ws_client(gateway)
    for name in sorted(IN_ROOM):
        refused = await unbound.request(examples[name])
        assert (refused["type"], refused["reason"]) == ("error", "NOT_IN_ROOM"), name
        assert refused["message"] == "먼저 방에 들어가 주세요"

    bound = await ws_client(gateway)
    joined = await bound.request({"type": "createRoom", "id": "c", "name": "Sam", "seats": 2})
    assert joined["type"] == "joined"
    for name in sorted(BINDING):
        refused = await bound.request(examples[name])
        assert (refused["type"], refused["reason"]) == ("error", "ALREADY_IN_ROOM"), name
        assert refused["metadata"] == {"roomId": joined["roomId"]}

    for name in sorted(set(HANDLERS) - BINDING - IN_ROOM):
        for client in (unbound, bound):
            reply = await client.request(examples[name])
            assert reply.get("reason") not in ("NOT_IN_ROOM", "ALREADY_IN_ROOM"), (name, reply)
