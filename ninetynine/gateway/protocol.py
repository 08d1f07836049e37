"""Parsing client frames and the gateway's own refusals (docs/client-protocol.md §1, §5 errors).

A frame becomes a ``ClientMessage`` only after it passed the JSON Schema
(``ninetynine/gateway/schema/client-protocol.schema.json``) definition its ``type``'s handler names
(:data:`ninetynine.gateway.handlers.HANDLERS`); everything else becomes a :class:`ProtocolError`
with a stable reason (its texts are the services' table, :mod:`ninetynine.common.reasons`) and the
facts in ``metadata``. Nothing in here raises anything else on client input.

Validation is two-tier, for speed on the hot path (every ``play``): a ``fastjsonschema`` function
compiled once per message type accepts a valid frame in a few microseconds; a frame it refuses is
judged again by ``jsonschema`` (the reference implementation), whose verdict and ``best_match`` text
are the ones the client gets, exactly as before. The fast tier is used only for types whose schema
uses keywords that mean the same in both (``_FAST_KEYWORDS``); it may be stricter, never laxer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import fastjsonschema
import jsonschema

from ninetynine.engine.rules import RuleError
from ninetynine.gateway.convert import JsonId, client_from_json
from ninetynine.gateway.handlers import HANDLERS
from ninetynine.gateway.v1 import gateway_service_pb2 as gw

__all__ = [
    "SCHEMA_PATH",
    "ProtocolError",
    "client_validator",
    "message_validator",
    "parse_text",
    "reply_id_of",
    "schema",
    "server_validator",
    "short_detail",
]

SCHEMA_PATH = Path(__file__).resolve().parent / "schema" / "client-protocol.schema.json"

# ErrorInfo metadata values echo client input: keep them within the schema's limits.
MAX_METADATA_VALUE = 200
MAX_METADATA_KEYS = 20


@dataclass
class ProtocolError(Exception):
    """A refused client frame. ``fatal`` closes the connection after the error is sent."""

    reason: str
    metadata: dict[str, str] = field(default_factory=dict)
    reply_id: JsonId | None = None
    fatal: bool = False

    def __post_init__(self) -> None:
        super().__init__(self.reason)


@cache
def schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return loaded


def _target(ref: str) -> dict[str, Any]:
    # The root schema with the one definition as its target: errors then name the fields of
    # that message instead of "is not valid under any of the given schemas".
    root = dict(schema())
    root.pop("oneOf", None)
    root["$ref"] = f"#/$defs/{ref}"
    return root


@cache
def message_validator(ref: str) -> jsonschema.protocols.Validator:
    """The reference validator for one definition, ``#/$defs/<ref>`` (a message type or a kind)."""
    root = _target(ref)
    cls = jsonschema.validators.validator_for(root)
    return cls(root, format_checker=cls.FORMAT_CHECKER)  # type: ignore[no-any-return]


# Keywords fastjsonschema (draft 7 semantics) checks exactly as draft 2020-12 does. Anything else
# reachable from a message's definition (``unevaluatedProperties``, ``format``, ...) keeps that
# type on jsonschema alone. ``items`` is only safe as a schema, not as the draft-7 tuple form.
_FAST_KEYWORDS = frozenset(
    {
        "$ref", "type", "properties", "required", "additionalProperties", "const", "enum",
        "minimum", "maximum", "minLength", "maxLength", "pattern", "items", "minItems", "maxItems",
        "maxProperties", "oneOf", "anyOf", "allOf", "not", "description", "title",
    }
)  # fmt: skip
_SUBSCHEMA_MAPS = frozenset({"properties"})
_SUBSCHEMA_LISTS = frozenset({"oneOf", "anyOf", "allOf"})
_SUBSCHEMAS = frozenset({"additionalProperties", "items", "not"})


def _fast_compatible(ref: str) -> bool:
    """Whether every schema reachable from ``#/$defs/<ref>`` uses only ``_FAST_KEYWORDS``."""
    defs: dict[str, Any] = schema()["$defs"]
    seen: set[str] = set()
    pending: list[Any] = [{"$ref": f"#/$defs/{ref}"}]
    while pending:
        node = pending.pop()
        if isinstance(node, bool):
            continue
        if not isinstance(node, dict) or not node.keys() <= _FAST_KEYWORDS:
            return False
        for key, value in node.items():
            if key == "$ref":
                prefix, _, name = str(value).rpartition("/")
                if prefix != "#/$defs" or name not in defs:
                    return False
                if name not in seen:
                    seen.add(name)
                    pending.append(defs[name])
            elif key in _SUBSCHEMA_MAPS:
                pending.extend(value.values())
            elif key in _SUBSCHEMA_LISTS:
                pending.extend(value)
            elif key in _SUBSCHEMAS:
                if isinstance(value, list):
                    return False
                pending.append(value)
    return True


@cache
def _fast_validator(ref: str) -> Callable[[Any], Any] | None:
    """A compiled validator for ``#/$defs/<ref>``, or None when that type must use jsonschema only."""
    if not _fast_compatible(ref):
        return None
    root = _target(ref)
    root.pop("$schema", None)  # fastjsonschema knows drafts up to 7; the keywords above mean the same
    # use_default=False: never write schema defaults into the client's message.
    validate: Callable[[Any], Any] = fastjsonschema.compile(root, use_default=False, use_formats=False)
    return validate


def _schema_error(kind: str, raw: dict[str, Any]) -> jsonschema.ValidationError | None:
    fast = _fast_validator(kind)
    if fast is not None:
        try:
            fast(raw)
        except fastjsonschema.JsonSchemaException:
            pass  # refused by the fast tier: the reference validator decides and words the error
        else:
            return None
    error: jsonschema.ValidationError | None = jsonschema.exceptions.best_match(
        message_validator(kind).iter_errors(raw)
    )
    return error


def server_validator() -> jsonschema.protocols.Validator:
    """A validator for server messages (``#/$defs/ServerMessage``); tests check every frame with it."""
    return message_validator("ServerMessage")


def client_validator() -> jsonschema.protocols.Validator:
    """A validator for client messages (``#/$defs/ClientMessage``): what the web table sends, in tests."""
    return message_validator("ClientMessage")


def reply_id_of(raw: object) -> JsonId | None:
    """The client's ``id`` when it is a usable one (string 1–64 characters or integer ≥ 0)."""
    if not isinstance(raw, dict):
        return None
    value = raw.get("id")
    if isinstance(value, str) and 1 <= len(value) <= 64:
        return value
    if isinstance(value, float) and value.is_integer():
        # JSON has one number type: 7.0 is the integer 7 to the schema, so it is echoed as 7.
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 2**53 - 1:
        return value
    return None


def short_detail(text: str) -> str:
    """``text`` cut to fit an error's metadata value."""
    return text if len(text) <= MAX_METADATA_VALUE else text[: MAX_METADATA_VALUE - 1] + "…"


# Cheap pre-check: a lone surrogate can only come from a \uD800-\uDFFF escape.
_LONE_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")


def _has_lone_surrogate(raw: object) -> bool:
    try:
        json.dumps(raw, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def parse_text(text: str) -> tuple[gw.ClientMessage, JsonId | None]:
    """A text frame as ``(ClientMessage, reply_id)``; raises :class:`ProtocolError` otherwise."""
    try:
        raw = json.loads(text)
    except (ValueError, RecursionError) as exc:
        # ValueError, not only JSONDecodeError: an integer of more than 4300 digits is refused by
        # int() (sys.get_int_max_str_digits), reachable when --max-message-bytes is above that.
        raise ProtocolError("MALFORMED_MESSAGE", {"detail": short_detail(f"not JSON: {exc}")}) from None
    if not isinstance(raw, dict):
        raise ProtocolError("MALFORMED_MESSAGE", {"detail": "a message must be a JSON object"})
    reply_id = reply_id_of(raw)
    if _LONE_SURROGATE_ESCAPE.search(text) and _has_lone_surrogate(raw):
        # "\ud800" is valid JSON but no Unicode text: nothing could be echoed or stored from it.
        # The refusal still answers a usable id, unless the surrogate is in the id itself.
        echo = None if reply_id is None or _has_lone_surrogate(reply_id) else reply_id
        raise ProtocolError(
            "MALFORMED_MESSAGE", {"detail": "a string holds a lone surrogate (\\ud800-\\udfff)"}, echo
        )
    kind = raw.get("type")
    if not isinstance(kind, str):
        raise ProtocolError("MALFORMED_MESSAGE", {"detail": "missing string field 'type'"}, reply_id)
    handler = HANDLERS.get(kind)
    if handler is None:
        raise ProtocolError("UNKNOWN_TYPE", {"type": short_detail(kind)}, reply_id)
    error = _schema_error(handler.schema, raw)
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(message)"
        raise ProtocolError(
            "MALFORMED_MESSAGE", {"detail": short_detail(f"{where}: {error.message}")}, reply_id
        )
    try:
        return client_from_json(raw), reply_id
    except RuleError as exc:  # an option the engine refuses although the schema let it pass
        meta = {k: short_detail(v) for k, v in exc.meta.items()}
        raise ProtocolError(exc.reason.value, meta, reply_id) from None


def clean_metadata(metadata: dict[str, str]) -> dict[str, str]:
    """At most 20 keys, each value at most 200 characters (the schema's error limits)."""
    items = list(metadata.items())[:MAX_METADATA_KEYS]
    return {str(k): short_detail(str(v)) for k, v in items}
