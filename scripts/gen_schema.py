#!/usr/bin/env python3
"""Generate the client protocol's JSON Schema from the protobuf descriptors.

``ninetynine/gateway/schema/client-protocol.schema.json`` is what the gateway validates client
frames with (``ninetynine/gateway/protocol.py``) and what describes every server frame. The whole
file is built here, from ``ninetynine.gateway.v1.ClientMessage`` and ``ServerMessage`` and every
message they contain, by the codec's rule (:mod:`ninetynine.common.codec`: keys, enum names, which
keys are written when) and the ``json_options.proto`` options in the ``.proto`` files:

* a client message's required keys are the fields declared ``required``; a server message's are
  the keys the codec always writes (a ``when_set`` or ``when`` key is optional);
* a field's ``when`` rule becomes an ``if``/``then``/``else``: the keys are all there when the
  condition holds and none of them otherwise;
* ``bounds`` give ranges, lengths, patterns, item counts and allowed values; ``bounds.ref`` names
  a shared value, declared once per file as a ``(ninetynine.common.v1.json_def)`` file option;
* a ``projection``'s object and a rule between two keys' values, which no option says, are the
  message's declared ``schema_json`` fragment.

Nothing here names a field of the game.

    python scripts/gen_schema.py           # rewrite the schema file
    python scripts/gen_schema.py --check   # exit 1 if the committed file differs
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ninetynine.common.codec import camel, enum_json, field_json, json_key  # noqa: E402
from ninetynine.common.v1 import json_options_pb2 as jo  # noqa: E402
from ninetynine.gateway.v1 import gateway_service_pb2 as gw  # noqa: E402

SCHEMA_PATH = ROOT / "ninetynine" / "gateway" / "schema" / "client-protocol.schema.json"
HEAD: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://ninety-nine.example/schemas/client-protocol.schema.json",
    "title": "ninety-nine client protocol, version 1",
    "description": "Every WebSocket message in both directions (docs/client-protocol.md). A client message "
    "matches #/$defs/ClientMessage, a server message #/$defs/ServerMessage.",
    "oneOf": [{"$ref": "#/$defs/ClientMessage"}, {"$ref": "#/$defs/ServerMessage"}],
}
_UNSIGNED = {"TYPE_UINT32", "TYPE_UINT64", "TYPE_FIXED32", "TYPE_FIXED64"}
_NULL = {"type": "null"}


def _type_name(field: Any) -> str:
    return next(
        name for name in dir(field) if name.startswith("TYPE_") and getattr(field, name) == field.type
    )


def enum_values(enum: Any) -> list[object]:
    """The JSON values that mean something: every non-zero value's, once, in declaration order."""
    out: list[object] = []
    for number, value in enum_json(enum).items():
        if number and value not in out:
            out.append(value)
    return out


def _message_json(message: Any) -> jo.JsonMessage:
    return message.GetOptions().Extensions[jo.json_message]


def schema_name(message: Any) -> str:
    return _message_json(message).schema_name or message.name


def _type_oneof(message: Any) -> Any:
    """The oneof written as a discriminator key and its member's keys, if the message has one."""
    for oneof in message.oneofs:
        if oneof.GetOptions().Extensions[jo.json_oneof].type_key:
            return oneof
    return None


def _files(file: Any) -> Iterator[Any]:
    """``file`` and every file it imports, each once, imports first."""
    seen: set[str] = set()

    def walk(one: Any) -> Iterator[Any]:
        if one.name in seen:
            return
        seen.add(one.name)
        for dependency in one.dependencies:
            yield from walk(dependency)
        yield one

    yield from walk(file)


def _one_of(bounds: jo.JsonBounds) -> dict[str, Any]:
    values = [json.loads(v) for v in bounds.one_of_json]
    return {"const": values[0]} if len(values) == 1 else {"enum": values}


def _bounded(kind: str, bounds: jo.JsonBounds) -> dict[str, Any]:
    """A string or integer value with its bounds."""
    if bounds.one_of_json:
        return _one_of(bounds)
    if kind == "string":
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
    if bounds.HasField("maximum"):
        out["maximum"] = bounds.maximum
    return out


def _refs(node: object) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                yield value
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


class Builder:
    def __init__(self) -> None:
        self.defs: dict[str, Any] = {}
        # Server objects require the keys always written; client objects those declared required.
        self.server = False

    @staticmethod
    def ref(name: str) -> dict[str, str]:
        return {"$ref": f"#/$defs/{name}"}

    # -- values -----------------------------------------------------------------------------

    def value(self, field: Any, without: frozenset[str] = frozenset()) -> dict[str, Any]:
        """One value of ``field`` (``without``: sub-message fields lifted into the parent)."""
        options = field_json(field)
        bounds = options.bounds
        if bounds.ref:
            if field.message_type is not None:
                self.message(field.message_type, without, bounds.ref, bounds)
            elif field.enum_type is not None and bounds.ref not in self.defs:
                self.defs[bounds.ref] = {"enum": enum_values(field.enum_type)}
            return self.ref(bounds.ref)
        if bounds.one_of_json:
            return _one_of(bounds)
        if field.enum_type is not None:
            return {"enum": enum_values(field.enum_type)}
        if field.message_type is not None:
            return self.ref(self.message(field.message_type, without))
        kind = _type_name(field)
        if kind == "TYPE_BOOL":
            return {"enum": list(options.bool_names)} if options.bool_names else {"type": "boolean"}
        if kind == "TYPE_STRING" or options.as_string:
            return _bounded("string", bounds)
        out = _bounded("integer", bounds)
        if "minimum" not in out and kind in _UNSIGNED:
            out = {"type": "integer", "minimum": 0, **{k: v for k, v in out.items() if k != "type"}}
        return out

    def _map(self, field: Any) -> dict[str, Any]:
        """A protobuf map, or a repeated two-field message written ``as_map``: an object."""
        bounds = field_json(field).bounds
        key_field, value_field = field.message_type.fields[:2]
        out: dict[str, Any] = {"type": "object"}
        if field.message_type.GetOptions().map_entry:
            values = self.value(value_field)
            if value_field.message_type is None and not field_json(value_field).bounds.ByteSize():
                values = _bounded("string" if _type_name(value_field) == "TYPE_STRING" else "integer", bounds)
            out["additionalProperties"] = values
        else:
            out["additionalProperties"] = self.value(value_field)
            out["propertyNames"] = self.value(key_field)
        if bounds.HasField("max_properties"):
            out["maxProperties"] = bounds.max_properties
        return out

    def field(self, field: Any, without: frozenset[str] = frozenset()) -> dict[str, Any]:
        options = field_json(field)
        message = field.message_type
        if field.is_repeated and message is not None and (message.GetOptions().map_entry or options.as_map):
            one = self._map(field)
        elif field.is_repeated:
            one = {"type": "array", "items": self.value(field, without)}
            if options.bounds.HasField("min_items"):
                one["minItems"] = options.bounds.min_items
            if options.bounds.HasField("max_items"):
                one["maxItems"] = options.bounds.max_items
        else:
            one = self.value(field, without)
        if self.server and options.presence == jo.JSON_PRESENCE_NULL_WHEN_UNSET:
            one = {"oneOf": [one, _NULL]}
        if options.description:
            one = {"description": options.description, **one}
        return one

    # -- objects ----------------------------------------------------------------------------

    def _always(self, field: Any) -> bool:
        """The codec writes ``field``'s key whatever its value."""
        options = field_json(field)
        return not options.when and options.presence != jo.JSON_PRESENCE_WHEN_SET and not options.group

    def _condition(self, message: Any, when: str) -> dict[str, Any]:
        """The schema of "the ``when`` condition holds" in ``message``'s object."""
        name, _, enum_value = when.partition("=")
        field = message.fields_by_name[name]
        key = json_key(field)
        if enum_value:
            number = field.enum_type.values_by_name[enum_value].number
            return {"properties": {key: {"const": enum_json(field.enum_type)[number]}}, "required": [key]}
        presence = field_json(field).presence
        if presence == jo.JSON_PRESENCE_NULL_WHEN_UNSET:
            return {"properties": {key: {"not": _NULL}}, "required": [key]}
        return {"required": [key]}

    def _when_rules(self, message: Any, keys: dict[str, Any]) -> list[dict[str, Any]]:
        """Per ``when`` condition: its keys are all written when it holds, none otherwise."""
        by_condition: dict[str, list[Any]] = {}
        for field in message.fields:
            when = field_json(field).when
            if when and json_key(field) in keys:
                by_condition.setdefault(when, []).append(field)
        rules = []
        for when, fields in by_condition.items():
            written = [json_key(f) for f in fields if field_json(f).presence != jo.JSON_PRESENCE_WHEN_SET]
            rule: dict[str, Any] = {"if": self._condition(message, when)}
            if written:
                rule["then"] = {"required": written}
            rule["else"] = {"not": {"anyOf": [{"required": [json_key(f)]} for f in fields]}}
            rules.append(rule)
        return rules

    def _into(self, message: Any, field: Any) -> None:
        """The key ``field`` adds to the object of its ``into`` sibling."""
        target = message.fields_by_name[field_json(field).into].message_type
        only_in = field_json(field).bounds.only_in
        if only_in:
            member = target.fields_by_name[only_in]
            name = self.member_name(target, member)
        else:
            name = self.message(target)
        self.defs[name]["properties"][json_key(field)] = self.field(field)
        if self._always(field):
            self.defs[name].setdefault("required", []).append(json_key(field))

    def object(
        self,
        message: Any,
        head: dict[str, Any],
        required: list[str],
        without: frozenset[str] = frozenset(),
    ) -> dict[str, Any]:
        options = _message_json(message)
        if options.projection:
            out = json.loads(options.schema_json)
            out["properties"] = {**head, **out["properties"]}
            out["required"] = [*required, *out["required"]]
            return out
        properties = dict(head)
        order = list(options.order) or [f.name for f in message.fields]
        lifted: dict[str, set[str]] = {}
        for path in order:
            if "." in path:
                parent, sub = path.split(".", 1)
                lifted.setdefault(parent, set()).add(sub)
        intos: list[Any] = []
        for path in order:
            if "." in path:
                parent, sub = path.split(".", 1)
                field = message.fields_by_name[parent].message_type.fields_by_name[sub]
            else:
                field = message.fields_by_name[path]
            fo = field_json(field)
            if field.name in without or fo.omit:
                continue
            if fo.into:
                intos.append(field)
                continue
            if fo.group:
                if fo.group not in properties:
                    members = [f for f in message.fields if field_json(f).group == fo.group]
                    properties[fo.group] = {
                        "type": "object",
                        "properties": {json_key(f): self.field(f) for f in members},
                        "required": [json_key(f) for f in members],
                        "additionalProperties": False,
                    }
                continue
            if fo.inline:
                inner = self.defs[self.message(field.message_type)]
                properties.update(inner["properties"])
                if self.server:
                    required.extend(inner.get("required", []))
                continue
            key = json_key(field)
            properties[key] = self.field(field, frozenset(lifted.get(field.name, ())))
            if fo.required or (self.server and self._always(field)):
                required.append(key)
        out: dict[str, Any] = {"description": options.description} if options.description else {}
        out.update({"type": "object", "properties": properties})
        if required:
            out["required"] = required
        out["additionalProperties"] = False
        if self.server:
            rules = self._when_rules(message, properties)
            if len(rules) == 1:
                out.update(rules[0])
            elif rules:
                out["allOf"] = rules
        if options.schema_json:
            out.update(json.loads(options.schema_json))
        for field in intos:
            self._into(message, field)
        return out

    def member_name(self, message: Any, member: Any) -> str:
        oneof = member.containing_oneof
        return oneof.GetOptions().Extensions[jo.json_oneof].schema_prefix + camel(member.name)

    def union(self, message: Any, name: str) -> None:
        """A message written as one of its oneof's members, each after the discriminator key."""
        oneof = _type_oneof(message)
        type_key = oneof.GetOptions().Extensions[jo.json_oneof].type_key
        # Fields outside the oneof that any member's object may carry (the request id).
        shared = {
            json_key(f): self.field(f)
            for f in message.fields
            if f.containing_oneof is None and (not field_json(f).omit or field_json(f).bounds.ByteSize())
        }
        described = _message_json(message).description
        self.defs[name] = {"description": described} if described else {}
        members = []
        for member in oneof.fields:
            kind = camel(member.name)
            member_name = self.member_name(message, member)
            members.append(member_name)
            head = {type_key: {"const": kind}, **({} if field_json(member).pushed else shared)}
            self.defs[member_name] = {}  # taken first, so a member may refer to itself
            self.defs[member_name] = self.object(member.message_type, head, [type_key])
        self.defs[name]["oneOf"] = [self.ref(m) for m in members]

    def message(
        self,
        message: Any,
        without: frozenset[str] = frozenset(),
        name: str = "",
        bounds: jo.JsonBounds | None = None,
    ) -> str:
        name = name or schema_name(message)
        if name in self.defs:
            return name
        self.defs[name] = {}  # taken before its fields, so a message may refer to itself
        if _type_oneof(message) is not None:
            self.union(message, name)
            return name
        out = self.object(message, {}, [], without)
        if without:  # a part of the message: its description is the referring field's
            out.pop("description", None)
        if bounds is not None and bounds.HasField("max_properties"):
            out["maxProperties"] = bounds.max_properties
        self.defs[name] = out
        return name

    # -- the file ---------------------------------------------------------------------------

    def named(self) -> None:
        """The shared values the ``.proto`` files declare (``json_def`` file options)."""
        for file in _files(gw.DESCRIPTOR):
            for one in file.GetOptions().Extensions[jo.json_def]:
                out: dict[str, Any] = {"description": one.description} if one.description else {}
                if one.schema_json:
                    out.update(json.loads(one.schema_json))
                else:
                    out.update(_bounded(one.type, one.bounds))
                self.defs[one.name] = out


def generated() -> dict[str, Any]:
    builder = Builder()
    builder.defs["ClientMessage"] = {}
    builder.defs["ServerMessage"] = {}
    builder.named()
    builder.union(gw.ClientMessage.DESCRIPTOR, "ClientMessage")
    builder.server = True
    builder.union(gw.ServerMessage.DESCRIPTOR, "ServerMessage")
    missing = {ref.rsplit("/", 1)[1] for ref in _refs(builder.defs)} - set(builder.defs)
    if missing:
        raise SystemExit(f"gen_schema: $ref to undeclared definitions {sorted(missing)}")
    return {**HEAD, "$defs": builder.defs}


def render() -> str:
    return json.dumps(generated(), indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--check", action="store_true", help="fail if the committed schema is not what the descriptors give"
    )
    args = parser.parse_args(argv)
    fresh = render()
    if args.check:
        if fresh != SCHEMA_PATH.read_text(encoding="utf-8"):
            print(
                f"{SCHEMA_PATH.relative_to(ROOT)} is out of date; run scripts/gen_schema.py", file=sys.stderr
            )
            return 1
        print(f"{SCHEMA_PATH.relative_to(ROOT)} is up to date")
        return 0
    SCHEMA_PATH.write_text(fresh, encoding="utf-8")
    print(f"wrote {SCHEMA_PATH.relative_to(ROOT)} ({len(json.loads(fresh)['$defs'])} definitions)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
