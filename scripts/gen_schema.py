#!/usr/bin/env python3
"""Generate the client-frame half of the JSON Schema from the protobuf descriptors.

``ninetynine/gateway/schema/client-protocol.schema.json`` is what the gateway validates client
frames with (``ninetynine/gateway/protocol.py``). Its definitions of every client message
(``ClientMessage`` and one per ``type``), of the objects they carry (``Action``, ``OptionValues``,
``FullOptions``) and of the enums the protocol names (``Mode``, ``CardKind``, ``Direction``) are
built here from ``ninetynine.gateway.v1.ClientMessage`` and the engine's messages: the keys and
enum names by the codec's rule (:mod:`ninetynine.common.codec`), the bounds, required keys and
allowed values from the ``(ninetynine.common.v1.json)`` options in the ``.proto`` files. The
other definitions (server messages and the shared vocabulary they and the client messages
``$ref``: ``RequestId``, ``RoomId``, ``Token``, ``DisplayName``, ``Lang``, ``CardId``, ...) are
kept from the file as they are.

    python scripts/gen_schema.py           # rewrite the generated definitions in place
    python scripts/gen_schema.py --check   # exit 1 if the committed file differs
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ninetynine.common.codec import camel, enum_json, field_json, json_key  # noqa: E402
from ninetynine.common.v1 import json_options_pb2 as jo  # noqa: E402
from ninetynine.engine.v1 import game_pb2  # noqa: E402
from ninetynine.gateway.v1 import gateway_service_pb2 as gw  # noqa: E402

SCHEMA_PATH = ROOT / "ninetynine" / "gateway" / "schema" / "client-protocol.schema.json"
# The enums the schema names, by their $defs name.
ENUM_DEFS: dict[str, Any] = {
    "Mode": game_pb2.Mode.DESCRIPTOR,
    "CardKind": game_pb2.CardKind.DESCRIPTOR,
    "Direction": game_pb2.Direction.DESCRIPTOR,
}
_UNSIGNED = {
    "TYPE_UINT32",
    "TYPE_UINT64",
    "TYPE_FIXED32",
    "TYPE_FIXED64",
}


def _type_name(field: Any) -> str:
    return next(
        name for name in dir(field) if name.startswith("TYPE_") and getattr(field, name) == field.type
    )


def enum_values(enum: Any) -> list[object]:
    """The JSON values a client may send: every non-zero value's, once, in declaration order."""
    out: list[object] = []
    for number, value in enum_json(enum).items():
        if number and value not in out:
            out.append(value)
    return out


def schema_name(message: Any) -> str:
    options: jo.JsonMessage = message.GetOptions().Extensions[jo.json_message]
    return options.schema_name or message.name


class Builder:
    def __init__(self) -> None:
        self.defs: dict[str, Any] = {}

    def ref(self, name: str) -> dict[str, str]:
        return {"$ref": f"#/$defs/{name}"}

    def value(self, field: Any) -> dict[str, Any]:
        options = field_json(field)
        bounds = options.bounds
        if bounds.ref:
            if field.message_type is not None:
                self.message(field.message_type)
            return self.ref(bounds.ref)
        if bounds.one_of_json:
            return {"enum": [json.loads(v) for v in bounds.one_of_json]}
        if field.enum_type is not None:
            return {"enum": enum_values(field.enum_type)}
        if field.message_type is not None:
            return self.ref(self.message(field.message_type))
        kind = _type_name(field)
        if kind == "TYPE_BOOL":
            return {"enum": list(options.bool_names)} if options.bool_names else {"type": "boolean"}
        if kind == "TYPE_STRING":
            out: dict[str, Any] = {"type": "string"}
            if bounds.HasField("min_length"):
                out["minLength"] = bounds.min_length
            if bounds.HasField("max_length"):
                out["maxLength"] = bounds.max_length
            if bounds.pattern:
                out["pattern"] = bounds.pattern
            return out
        out = {"type": "integer"}
        if bounds.HasField("minimum"):
            out["minimum"] = bounds.minimum
        elif kind in _UNSIGNED:
            out["minimum"] = 0
        if bounds.HasField("maximum"):
            out["maximum"] = bounds.maximum
        return out

    def field(self, field: Any) -> dict[str, Any]:
        one = self.value(field)
        description = field_json(field).description
        if description:
            one = {"description": description, **one}
        if not field.is_repeated:
            return one
        out: dict[str, Any] = {"type": "array", "items": one}
        if field_json(field).bounds.HasField("max_items"):
            out["maxItems"] = field_json(field).bounds.max_items
        return out

    def object(self, message: Any, head: dict[str, Any], required: list[str]) -> dict[str, Any]:
        properties = dict(head)
        order = list(message.GetOptions().Extensions[jo.json_message].order) or [
            f.name for f in message.fields
        ]
        for name in order:
            field = message.fields_by_name[name]
            if field_json(field).omit:
                continue
            properties[json_key(field)] = self.field(field)
            if field_json(field).required:
                required.append(json_key(field))
        described = message.GetOptions().Extensions[jo.json_message].description
        out: dict[str, Any] = {"description": described} if described else {}
        out.update({"type": "object", "properties": properties})
        if required:
            out["required"] = required
        out["additionalProperties"] = False
        return out

    def message(self, message: Any) -> str:
        name = schema_name(message)
        if name not in self.defs:
            self.defs[name] = {}  # taken before its fields, so a message may refer to itself
            self.defs[name] = self.object(message, {}, [])
        return name

    def client_messages(self) -> None:
        descriptor: Any = gw.ClientMessage.DESCRIPTOR
        kinds = descriptor.oneofs_by_name["kind"]
        type_key = kinds.GetOptions().Extensions[jo.json_oneof].type_key
        # Fields outside the oneof that clients may send with any type (the request id).
        shared = {
            json_key(f): self.field(f)
            for f in descriptor.fields
            if f.containing_oneof is None and field_json(f).bounds.ByteSize()
        }
        names = []
        for member in kinds.fields:
            kind = camel(member.name)
            names.append(kind)
            head = {type_key: {"const": kind}, **shared}
            self.defs[kind] = self.object(member.message_type, head, [type_key])
        self.defs["ClientMessage"] = {"oneOf": [self.ref(k) for k in names]}

    def options(self) -> None:
        """``FullOptions``: the option values with every key, as the server writes them."""
        descriptor: Any = game_pb2.Options.DESCRIPTOR
        self.defs["FullOptions"] = {
            "allOf": [self.ref(self.message(descriptor))],
            "required": [json_key(f) for f in descriptor.fields],
        }

    def enums(self) -> None:
        for name, enum in ENUM_DEFS.items():
            self.defs[name] = {"enum": enum_values(enum)}


def generated_defs() -> dict[str, Any]:
    builder = Builder()
    builder.client_messages()
    builder.options()
    builder.enums()
    return builder.defs


def render(current: dict[str, Any]) -> str:
    """The schema file with the generated definitions put in (in place, or appended)."""
    out = dict(current)
    defs = dict(current["$defs"])
    defs.update(generated_defs())
    out["$defs"] = defs
    return json.dumps(out, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--check", action="store_true", help="fail if the committed schema is not what the descriptors give"
    )
    args = parser.parse_args(argv)
    committed = SCHEMA_PATH.read_text(encoding="utf-8")
    fresh = render(json.loads(committed))
    if args.check:
        if fresh != committed:
            print(
                f"{SCHEMA_PATH.relative_to(ROOT)} is out of date; run scripts/gen_schema.py", file=sys.stderr
            )
            return 1
        print(f"{SCHEMA_PATH.relative_to(ROOT)} is up to date")
        return 0
    SCHEMA_PATH.write_text(fresh, encoding="utf-8")
    print(f"wrote {SCHEMA_PATH.relative_to(ROOT)} ({len(generated_defs())} generated definitions)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
