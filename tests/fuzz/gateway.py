"""Fuzz target: a client frame becoming a ``ClientMessage`` or a refusal, as ``Connection.on_frame`` sees it.

What a frame goes through before any session call: ``protocol.parse_text`` for a WebSocket text
frame (JSON, the schema's two validator tiers, ``client_from_json`` and the rules' option parser)
or ``server._parse_grpc`` for a decoded gRPC ``ConnectRequest``; on a ``ProtocolError`` the
connection words it with ``Connection.error_message`` and sends it as an ``error`` frame.

The first byte picks the input's form (the rest is the input):

* 0 — the bytes as the text of a WebSocket frame. aiohttp refuses text frames that are not UTF-8
  (the connection fails before the gateway sees them), so only valid UTF-8 goes on.
* 1 — a JSON message built from the protocol's JSON Schema by ``FuzzedDataProvider``: a client type,
  its properties mostly as the schema wants them and sometimes not (a wrong type, a missing required
  field, an extra key, integers as floats), written with or without ASCII escapes.
* 2 — the bytes as a ``ConnectRequest`` (bytes gRPC itself cannot decode never reach the gateway).

Contract: a message whose kind is the frame's ``type`` and whose reply id is the frame's usable
``id``; or a ``ProtocolError`` with an UPPER_SNAKE reason the error table knows, string metadata, the
frame's usable ``id`` when the frame is a JSON object, and an ``error`` frame the schema accepts in
both languages. An accepted frame must also pass the reference validator (``jsonschema``): the
fast tier may be stricter, never laxer. Anything else raised is a crash.
"""

from __future__ import annotations

import json
from typing import Any, Final

import atheris

from tests.fuzz.common import require, require_reason, wild_json
from tests.gateway.doc_examples import doc_examples

# startswith/endswith operands go to libFuzzer as comparison hints. (The "RegEx" hook is left off:
# it proxies every pattern of every library, and the schema's patterns get sample strings below.)
atheris.enabled_hooks.add("str")

with atheris.instrument_imports(include=["ninetynine"]):
    import jsonschema
    from google.protobuf.message import DecodeError

    from ninetynine.common.reasons import SERVICE_TEXTS
    from ninetynine.engine.rules import CLASSIC, KR, Reason, build_deck
    from ninetynine.gateway.connection import Connection
    from ninetynine.gateway.convert import server_bytes
    from ninetynine.gateway.handlers import HANDLER_OF_FIELD, HANDLERS
    from ninetynine.gateway.limits import Limits
    from ninetynine.gateway.metrics import GatewayMetrics
    from ninetynine.gateway.outbox import Outgoing
    from ninetynine.gateway.protocol import (
        ProtocolError,
        client_validator,
        message_validator,
        parse_text,
        reply_id_of,
        schema,
    )
    from ninetynine.gateway.relay import PlayRelay, SessionRelay
    from ninetynine.gateway.server import _parse_grpc
    from ninetynine.gateway.v1 import gateway_service_pb2 as gw

DEFS: Final[dict[str, Any]] = schema()["$defs"]
CLIENT_KINDS: Final = sorted(HANDLERS)
ARGS: Final = ["-max_len=8192"]  # twice the default frame limit (--max-message-bytes can raise it)


ERROR_FRAME: Final = message_validator("error")
CLIENT_FRAME: Final = client_validator()


class _Unsent:
    """A transport nothing is sent through: the harness only asks the connection to word errors."""

    protocol = "ws"
    json_text = True

    async def send(self, out: Outgoing) -> None: ...

    async def send_many(self, outs: list[Outgoing]) -> None: ...

    def write_now(self, outs: list[Outgoing]) -> bool:
        return True

    async def close(self, code: int) -> None: ...


_NO_SESSION: Final[Any] = None  # the harness makes no session call (the relays open theirs on first use)
CONNECTION: Final = Connection(
    _Unsent(),
    _NO_SESSION,
    Limits(),
    GatewayMetrics.create(None),
    relay=SessionRelay(_NO_SESSION),
    plays=PlayRelay(_NO_SESSION),
)


def _doc_frames() -> list[Any]:
    """The documented client messages and refused ones."""
    examples = doc_examples()
    return [*examples["client"], *examples["invalid"]]


def _samples() -> dict[str, list[str]]:
    """String values by property name, from the documented messages (ids, tokens, card ids, names)."""
    deck = build_deck(KR, 6, 1) + build_deck(CLASSIC, 4, 2)
    found: dict[str, list[str]] = {"cardId": sorted({card.id for card in deck})}

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if isinstance(value, str) and value not in found.setdefault(key, []):
                    found[key].append(value)
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    for frame in _doc_frames():
        walk(frame)
    return found


SAMPLES: Final = _samples()


def _from_schema(fdp: Any, node: Any, name: str, depth: int) -> Any:
    """A value for ``node``: schema-shaped, and one time in sixteen anything at all."""
    if depth > 6 or fdp.ConsumeIntInRange(0, 15) == 0:
        return wild_json(fdp, depth)
    if not isinstance(node, dict):
        return wild_json(fdp, depth)
    if "$ref" in node:
        return _from_schema(fdp, DEFS[node["$ref"].rsplit("/", 1)[1]], name, depth + 1)
    if "const" in node:
        return node["const"]
    if "enum" in node:
        return fdp.PickValueInList(node["enum"])
    for key in ("oneOf", "anyOf"):
        if key in node:
            return _from_schema(fdp, fdp.PickValueInList(node[key]), name, depth + 1)
    kind = node.get("type")
    if kind == "object":
        out: dict[str, Any] = {}
        required = set(node.get("required", ()))
        for prop, sub in node.get("properties", {}).items():
            # Required properties are left out one time in sixteen, optional ones half the time.
            keep = fdp.ConsumeIntInRange(0, 15) != 0 if prop in required else fdp.ConsumeBool()
            if keep:
                out[prop] = _from_schema(fdp, sub, prop, depth + 1)
        if fdp.ConsumeIntInRange(0, 15) == 0:
            out[fdp.ConsumeUnicode(fdp.ConsumeIntInRange(0, 8))] = wild_json(fdp, depth + 1)
        return out
    if kind == "integer":
        low, high = node.get("minimum", -(2**63)), node.get("maximum", 2**64)
        value = fdp.ConsumeIntInRange(low - 1, high + 1)
        # JSON has one number type: 3.0 is an integer to JSON Schema.
        return float(value) if fdp.ConsumeIntInRange(0, 7) == 0 else value
    if kind == "string":
        pool = SAMPLES.get(name)
        if pool and fdp.ConsumeBool():
            return fdp.PickValueInList(pool)
        low, high = node.get("minLength", 0), node.get("maxLength", 40)
        return fdp.ConsumeUnicode(fdp.ConsumeIntInRange(low, min(high, 300)))
    if kind == "boolean":
        return fdp.ConsumeBool()
    return wild_json(fdp, depth)


def _unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _check_refusal(exc: ProtocolError, raw: Any) -> None:
    require_reason(exc.reason)
    require(exc.reason in SERVICE_TEXTS or exc.reason in Reason.__members__, f"unlisted reason {exc.reason}")
    require(
        all(isinstance(k, str) and isinstance(v, str) for k, v in exc.metadata.items()),
        f"metadata {exc.metadata!r}",
    )
    if isinstance(raw, dict):
        usable = reply_id_of(raw)
        if isinstance(usable, str) and not _unicode(usable):
            usable = None  # an id holding a lone surrogate cannot be written back
        require(exc.reply_id == usable, f"refusal reply id {exc.reply_id!r} for id {raw.get('id')!r}")
    for lang in ("ko", "en"):
        CONNECTION.lang = lang
        error = CONNECTION.error_message(exc.reason, exc.metadata)
        frame = json.loads(server_bytes(gw.ServerMessage(error=error), exc.reply_id))
        problem = jsonschema.exceptions.best_match(ERROR_FRAME.iter_errors(frame))
        require(problem is None, f"error frame {frame!r}: {problem}")


def check_text(text: str) -> None:
    """One WebSocket text frame through ``parse_text``."""
    try:
        raw: Any = json.loads(text)
    except (ValueError, RecursionError):
        raw = None
    try:
        message, reply_id = parse_text(text)
    except ProtocolError as exc:
        _check_refusal(exc, raw)
        return
    require(isinstance(raw, dict), "a frame that is no JSON object was accepted")
    kind = message.WhichOneof("kind")
    require(kind is not None and HANDLER_OF_FIELD[kind].type == raw["type"], f"{kind} for {raw['type']!r}")
    # The fast validator tier may be stricter than jsonschema, never laxer.
    problem = jsonschema.exceptions.best_match(CLIENT_FRAME.iter_errors(raw))
    require(problem is None, f"accepted, but the reference validator refuses it: {problem}")
    require(reply_id == reply_id_of(raw), f"reply id {reply_id!r} for {raw.get('id')!r}")
    if "id" in raw:
        require(reply_id is not None, f"accepted id {raw['id']!r} is not echoed")
    message.SerializeToString()


def check_grpc(data: bytes) -> None:
    """One ``ConnectRequest`` through ``_parse_grpc``."""
    try:
        request = gw.ConnectRequest.FromString(data)
    except DecodeError:
        return
    try:
        message, reply_id = _parse_grpc(request)
    except ProtocolError as exc:
        _check_refusal(exc, None)
        return
    require(message.WhichOneof("kind") is not None, "a message without a kind was accepted")
    require(reply_id is None or (isinstance(reply_id, str) and 1 <= len(reply_id) <= 64), f"id {reply_id!r}")


@atheris.instrument_func  # its branches (the input forms) count as coverage too
def TestOneInput(data: bytes) -> None:
    if not data:
        return
    form, body = data[0] % 3, data[1:]
    if form == 0:
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            return
        check_text(text)
    elif form == 1:
        fdp = atheris.FuzzedDataProvider(body)
        kind = fdp.PickValueInList(CLIENT_KINDS)
        frame = _from_schema(fdp, DEFS[kind], "", 0)
        try:
            text = json.dumps(frame, ensure_ascii=fdp.ConsumeBool())
            text.encode("utf-8")  # a lone surrogate written raw is no UTF-8 frame
        except (UnicodeEncodeError, ValueError, RecursionError):
            return
        check_text(text)
    else:
        check_grpc(body)


# Frames that once broke the contract (tests/gateway/test_limits.py has them as tests too).
REGRESSIONS: Final = [
    '{"type": "ping", "id": "p1", "x": "\\ud800"}',
    '{"type": "ping", "id": "a\\ud800"}',
    '{"type": "ping", "id": 7.0}',
    '{"type": "ping", "id": 3, "n": ' + "1" * 4301 + "}",
]


def seeds() -> list[bytes]:
    """The documented frames (valid and refused) as text, and the valid ones as gRPC requests."""
    out = [b"\x01" + bytes(range(64)), b"\x01" + b"\xff" * 64]
    out += [b"\x00" + frame.encode() for frame in REGRESSIONS]
    for frame in _doc_frames():
        text = json.dumps(frame, ensure_ascii=False)
        out.append(b"\x00" + text.encode("utf-8"))
        try:
            message, reply_id = parse_text(text)
        except ProtocolError:
            continue
        request = gw.ConnectRequest(message=message)
        if isinstance(reply_id, str):
            request.message.id = reply_id
        out.append(b"\x02" + request.SerializeToString())
    return out


DICTIONARY: Final = [
    token.encode("utf-8")
    for token in [
        *(f'"{kind}"' for kind in CLIENT_KINDS),
        *(f'"{prop}"' for kind in CLIENT_KINDS for prop in DEFS[kind].get("properties", {})),
        *(f'"{key}"' for key in DEFS["OptionValues"]["properties"]),
        '"type":',
        '"id":',
        "true",
        "false",
        "null",
        "NaN",
        "-Infinity",
        "1e400",
        "-0.0",
        "2.0",
        "9007199254740991",
        "9007199254740992",
        "18446744073709551616",
        '"\\ud800"',
        '"\\u0000"',
    ]
]
