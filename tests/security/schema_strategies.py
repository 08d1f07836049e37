# mypy: disable-error-code="arg-type,union-attr,attr-defined"
"""Hypothesis strategies from the client protocol's JSON Schema and from protobuf descriptors.

``from_schema`` walks the subset of JSON Schema the protocol uses ($ref, oneOf/anyOf/allOf, enum,
const, typed objects/strings/integers/arrays); ``mutated`` breaks a valid message the ways a
hostile or buggy client would; ``from_descriptor`` builds any protobuf message field by field.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message
from hypothesis import strategies as st

import ninetynine.gateway

SCHEMA: dict[str, Any] = json.loads(
    (Path(ninetynine.gateway.__file__).parent / "schema" / "client-protocol.schema.json").read_text()
)
DEFS: dict[str, Any] = SCHEMA["$defs"]
CLIENT_TYPES = [ref["$ref"].rsplit("/", 1)[1] for ref in DEFS["ClientMessage"]["oneOf"]]

json_scalars = st.none() | st.booleans() | st.integers(-(2**63), 2**64) | st.floats() | st.text(max_size=20)
any_json = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)


def _string(schema: dict[str, Any]) -> st.SearchStrategy[str]:
    low, high = schema.get("minLength", 0), schema.get("maxLength", 40)
    pattern = schema.get("pattern")
    if pattern and "(?=" not in pattern:
        return st.from_regex(pattern, fullmatch=True).filter(lambda s: low <= len(s) <= high)
    text = st.text(st.characters(blacklist_categories=("Cc", "Cs")), min_size=low, max_size=high)
    return text.filter(lambda s: re.fullmatch(pattern, s) is not None) if pattern else text


def from_schema(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    if "$ref" in schema:
        return st.deferred(lambda: from_schema(DEFS[schema["$ref"].rsplit("/", 1)[1]]))
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    for key in ("oneOf", "anyOf"):
        if key in schema:
            return st.one_of([from_schema(s) for s in schema[key]])
    if "allOf" in schema:
        merged = {k: v for k, v in schema.items() if k != "allOf"}
        for part in schema["allOf"]:
            merged = (
                {**DEFS[part["$ref"].rsplit("/", 1)[1]], **merged} if "$ref" in part else {**part, **merged}
            )
        return from_schema(merged)
    kind = schema.get("type")
    if kind == "object":
        return _object(schema)
    if kind == "string":
        return _string(schema)
    if kind == "integer":
        return st.integers(schema.get("minimum", -(2**31)), schema.get("maximum", 2**31))
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        return st.lists(
            from_schema(schema.get("items", {})),
            min_size=schema.get("minItems", 0),
            max_size=min(schema.get("maxItems", 4), 4),
        )
    return any_json


def _object(schema: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    properties: dict[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", []))
    optional = sorted(set(properties) - required)
    limit = schema.get("maxProperties")

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        chosen = [k for k in optional if draw(st.booleans())]
        if limit is not None:
            chosen = chosen[: max(0, limit - len(required))]
        return {k: draw(from_schema(properties[k])) for k in sorted(required) + chosen}

    return build()


def client_message(kind: str) -> st.SearchStrategy[dict[str, Any]]:
    return from_schema(DEFS[kind])


valid_client_messages = st.one_of([client_message(k) for k in CLIENT_TYPES])


@st.composite
def mutated(draw: st.DrawFn, base: st.SearchStrategy[dict[str, Any]] = valid_client_messages) -> Any:
    """A valid client message with one hostile change (or several)."""
    message: dict[str, Any] = dict(draw(base))
    for _ in range(draw(st.integers(1, 3))):
        how = draw(st.sampled_from(["drop", "add", "replace", "retype", "nest", "whole"]))
        keys = sorted(message)
        if how == "drop" and keys:
            message.pop(draw(st.sampled_from(keys)))
        elif how == "add":
            message[draw(st.text(min_size=1, max_size=12))] = draw(any_json)
        elif how == "replace" and keys:
            message[draw(st.sampled_from(keys))] = draw(any_json)
        elif how == "retype":
            message["type"] = draw(st.sampled_from(CLIENT_TYPES) | st.text(max_size=12) | any_json)
        elif how == "nest" and keys:
            key = draw(st.sampled_from(keys))
            message[key] = {"value": message[key], draw(st.text(max_size=5)): draw(any_json)}
        elif how == "whole":
            return draw(any_json)
    return message


def from_descriptor(descriptor: Descriptor, depth: int = 0) -> st.SearchStrategy[dict[str, Any]]:
    """Keyword arguments for a protobuf message: a random subset of its fields, one oneof member."""

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        fields: dict[str, Any] = {}
        oneof_fields = {f.name for o in descriptor.oneofs for f in o.fields}
        for oneof in descriptor.oneofs:
            if oneof.fields and draw(st.booleans() if depth else st.just(True)):
                member = draw(st.sampled_from(list(oneof.fields)))
                fields[member.name] = draw(_field(member, depth))
        for field in descriptor.fields:
            if field.name not in oneof_fields and draw(st.booleans()):
                fields[field.name] = draw(_field(field, depth))
        return fields

    return build()


def _scalar(field: FieldDescriptor, depth: int) -> st.SearchStrategy[Any]:
    t = field.type
    if t == FieldDescriptor.TYPE_MESSAGE:
        if depth >= 3:
            return st.just({})
        return from_descriptor(field.message_type, depth + 1)
    if t == FieldDescriptor.TYPE_ENUM:
        return st.sampled_from([v.number for v in field.enum_type.values]) | st.integers(-5, 1000)
    if t == FieldDescriptor.TYPE_STRING:
        return st.text(max_size=80) | st.sampled_from(["", "ko", "en", "N3-1", "J-2", "+", "-", "keep"])
    if t == FieldDescriptor.TYPE_BYTES:
        return st.binary(max_size=40)
    if t == FieldDescriptor.TYPE_BOOL:
        return st.booleans()
    if t in (FieldDescriptor.TYPE_FLOAT, FieldDescriptor.TYPE_DOUBLE):
        return st.floats(allow_nan=False, width=32)
    unsigned = t in (
        FieldDescriptor.TYPE_UINT32,
        FieldDescriptor.TYPE_UINT64,
        FieldDescriptor.TYPE_FIXED32,
        FieldDescriptor.TYPE_FIXED64,
    )
    bits = (
        64
        if t
        in (
            FieldDescriptor.TYPE_INT64,
            FieldDescriptor.TYPE_UINT64,
            FieldDescriptor.TYPE_SINT64,
            FieldDescriptor.TYPE_FIXED64,
            FieldDescriptor.TYPE_SFIXED64,
        )
        else 32
    )
    if unsigned:
        return st.integers(0, 2**bits - 1)
    return st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)


def _repeated(field: FieldDescriptor) -> bool:
    # protobuf 6 dropped ``label`` in favour of ``is_repeated``.
    repeated = getattr(field, "is_repeated", None)
    if repeated is None:
        return bool(field.label == FieldDescriptor.LABEL_REPEATED)
    return bool(repeated)


def _field(field: FieldDescriptor, depth: int) -> st.SearchStrategy[Any]:
    if _repeated(field):
        return st.lists(_scalar(field, depth), max_size=3)
    return _scalar(field, depth)


def build_message(cls: type[Message], fields: dict[str, Any]) -> Message:
    """Construct ``cls`` from ``from_descriptor`` output (nested dicts become nested messages)."""
    message = cls()
    _fill(message, fields)
    return message


def _fill(message: Message, fields: dict[str, Any]) -> None:
    for name, value in fields.items():
        field = message.DESCRIPTOR.fields_by_name[name]
        target = getattr(message, name)
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            if _repeated(field):
                if field.message_type.GetOptions().map_entry:
                    continue  # maps are not part of any client message
                for item in value:
                    _fill(target.add(), item)
            else:
                target.SetInParent()
                _fill(target, value)
        elif _repeated(field):
            target.extend(value)
        else:
            setattr(message, name, value)
