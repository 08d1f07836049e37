"""The golden corpus of engine calls: its file format, a raw-bytes engine client, replay and comparison.

A corpus is a gzipped JSON Lines file. Line 1 is the header (format, recorder version, the git
commit and library versions it was recorded with, what it covers); every further line is one game:
the ordered calls a client made to ``ninetynine.engine.v1.EngineService`` and what the engine
answered. A call is stored as

* ``m``: the method (``Setup``, ``Apply``, ``View``, ``Timeout``);
* ``req``: the request bytes (base64). When ``from`` is set, the request carries the ``state`` of
  the response of call ``from`` of the same game as its field 1, and ``req`` holds only the other
  fields: the request is ``0x0A, varint(len(state)), state, req``, byte for byte (protobuf writes
  field 1 first). The state is sliced out of the recorded response's bytes, so a request is
  rebuilt exactly without a protobuf library, and the corpus stores each state once;
* ``ok``: the response bytes (base64), and ``lang``: the ``accept-language`` it was asked in
  (``ko`` or ``en``; a View's refusal texts depend on it);
* or ``err``: the refusal, asked once with ``accept-language: ko`` and once with ``en``: the
  status code, the ``ErrorInfo``'s reason, domain and metadata, the number of details in the
  ``google.rpc.Status`` trailer, whether that trailer agrees with the call's status, and the
  message in each language;
* ``seq``: the request state's seq (the move index), ``note``: what the call is meant to do.

Why bytes for responses but fields for refusals: no engine response contains a map field (a test
checks the descriptors), so protobuf writes a response in one canonical order (field-number order,
repeated fields in order) and its bytes are a strict fingerprint of the answer. A refusal's
``ErrorInfo.metadata`` is a map, whose serialized order protobuf does not promise (upb's hash
order may differ between processes), so a refusal is compared as parsed fields, metadata as a dict.
"""

from __future__ import annotations

import asyncio
import base64
import difflib
import gzip
import json
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
from google.protobuf import text_format
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError, Message
from google.rpc import error_details_pb2, status_pb2

from ninetynine.engine.v1 import engine_service_pb2 as pb

FORMAT = "ninetynine-engine-golden"
FORMAT_VERSION = 1
CORPUS_PATH = Path(__file__).resolve().parent / "corpus.jsonl.gz"
SERVICE = "ninetynine.engine.v1.EngineService"
STATUS_DETAILS_KEY = "grpc-status-details-bin"
LANGS = ("ko", "en")
CALL_TIMEOUT = 30.0  # seconds; generous: a loaded CI box, and a server busy with a window of calls

REQUEST_TYPES: dict[str, type[Message]] = {
    "Setup": pb.SetupRequest,
    "Apply": pb.ApplyRequest,
    "View": pb.ViewRequest,
    "Timeout": pb.TimeoutRequest,
}
RESPONSE_TYPES: dict[str, type[Message]] = {
    "Setup": pb.SetupResponse,
    "Apply": pb.ApplyResponse,
    "View": pb.ViewResponse,
    "Timeout": pb.TimeoutResponse,
}
# The response field holding the new State, which later requests carry as their field 1.
STATE_FIELD = {"Setup": 1, "Apply": 1, "Timeout": 3}


# -- raw protobuf framing (enough to move a State between messages) ----------------------------


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def field_bytes(message: bytes, number: int) -> bytes:
    """The payload of the first length-delimited top-level field ``number`` of ``message``."""
    pos = 0
    while pos < len(message):
        key, pos = _read_varint(message, pos)
        wire_type = key & 7
        if wire_type == 0:
            _, pos = _read_varint(message, pos)
        elif wire_type in (1, 5):
            pos += 8 if wire_type == 1 else 4
        elif wire_type == 2:
            size, pos = _read_varint(message, pos)
            if key >> 3 == number:
                return message[pos : pos + size]
            pos += size
        else:
            raise ValueError(f"unsupported wire type {wire_type}")
    raise ValueError(f"no field {number}")


def with_state(state: bytes, rest: bytes) -> bytes:
    """A request whose field 1 (``state``) is ``state``, followed by its other fields ``rest``."""
    return b"\x0a" + _varint(len(state)) + state + rest


def split_state(request: bytes, state: bytes) -> bytes | None:
    """``rest`` such that ``with_state(state, rest) == request``; None when it does not start so."""
    head = with_state(state, b"")
    return request[len(head) :] if request.startswith(head) else None


# -- outcomes -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Refusal:
    """A refused call as the client saw it, in one language."""

    code: str
    message: str
    reason: str
    domain: str
    metadata: Mapping[str, str]
    details: int  # the google.rpc.Status's number of details (the contract: exactly one)
    status_agrees: bool  # the Status trailer's code and message are the call's own

    def facts(self) -> dict[str, Any]:
        """Everything but the message, which depends on the language."""
        return {
            "code": self.code,
            "reason": self.reason,
            "domain": self.domain,
            "metadata": dict(sorted(self.metadata.items())),
            "details": self.details,
            "statusAgrees": self.status_agrees,
        }


def refusal_of(err: grpc.RpcError) -> Refusal:
    """A failed call's status code, message and ErrorInfo."""
    call: Any = err  # a grpc.Call as well as an RpcError
    return refusal_from(call.code(), call.details() or "", call.trailing_metadata() or ())


def refusal_from(code: grpc.StatusCode, message: str, trailers: Iterable[tuple[str, str | bytes]]) -> Refusal:
    """The refusal a client reads from a status code, its message and the trailing metadata."""
    reason = domain = ""
    metadata: dict[str, str] = {}
    details = 0
    agrees = False
    for key, value in trailers:
        if key == STATUS_DETAILS_KEY and isinstance(value, bytes):
            status = status_pb2.Status.FromString(value)
            agrees = status.code == code.value[0] and status.message == message
            details = len(status.details)
            for detail in status.details:
                info = error_details_pb2.ErrorInfo()
                if detail.Unpack(info):
                    reason, domain, metadata = info.reason, info.domain, dict(info.metadata)
                    break
    return Refusal(code.name, message, reason, domain, metadata, details, agrees)


def refusal_record(by_lang: Mapping[str, Refusal]) -> dict[str, Any]:
    """The stored form of one refusal asked in every language (which must agree but for the text)."""
    facts = [by_lang[lang].facts() for lang in LANGS]
    if any(f != facts[0] for f in facts):
        raise AssertionError(f"a refusal differs between languages: {facts}")
    return {**facts[0], "message": {lang: by_lang[lang].message for lang in LANGS}}


# -- the engines a corpus is replayed against --------------------------------------------------

Sent = tuple["Game", int, str]  # the game, the call's index, the language it is asked in
Send = tuple[Sent, str, bytes]  # which call, its method, its request bytes
Answer = bytes | Refusal


class RawEngine:
    """EngineService over a real channel, bytes in and bytes out (no protobuf on the client side)."""

    def __init__(self, target: str) -> None:
        self.channel = grpc.insecure_channel(target)
        # No serializers: grpc sends the request bytes as they are and hands back the response's.
        self._methods = {
            name: self.channel.unary_unary(f"/{SERVICE}/{name}", None, None) for name in REQUEST_TYPES
        }

    def close(self) -> None:
        self.channel.close()

    def _future(self, method: str, request: bytes, lang: str) -> Any:
        metadata = (("accept-language", lang),)
        return self._methods[method].future(request, metadata=metadata, timeout=CALL_TIMEOUT)

    @staticmethod
    def _result(future: Any) -> Answer:
        try:
            response: bytes = future.result()
        except grpc.RpcError as err:
            return refusal_of(err)
        return response

    def call(self, method: str, request: bytes, lang: str) -> Answer:
        return self._result(self._future(method, request, lang))

    def answers(self, sends: Iterable[Send], *, window: int = 32) -> Iterator[tuple[Sent, Answer]]:
        """The answer to each of ``sends``, with up to ``window`` calls in flight (they are
        independent: each carries its whole state)."""
        pending: deque[tuple[Sent, Any]] = deque()
        for sent, method, request in sends:
            if len(pending) >= window:
                done, future = pending.popleft()
                yield done, self._result(future)
            pending.append((sent, self._future(method, request, sent[2])))
        while pending:
            done, future = pending.popleft()
            yield done, self._result(future)


class InProcessEngine:
    """The engine server's own request handling, called in this process without the transport.

    Each request goes through the method table the server registers
    (:func:`ninetynine.engine.server.engine_handler`): the request deserializer (bytes to request,
    or MALFORMED_REQUEST; none for a method that parses its own bytes), the servicer
    (:class:`~ninetynine.engine.handlers.EngineHandlers`) and the response serializer (response to
    bytes). A refusal goes through
    :func:`ninetynine.common.errors.abort`, which the server's interceptor calls, into the status
    code, message and ``grpc-status-details-bin`` trailer grpc would send, read back as a client
    reads them. Left out: grpc's C core (HTTP/2 framing, which passes bytes through untouched)
    and the interceptor's canonical log line. About four times cheaper than a real server.
    """

    def __init__(self) -> None:
        from ninetynine.engine.server import EngineMetrics, EngineServicer, engine_handler

        handler = engine_handler(EngineServicer(EngineMetrics.create(None)))
        self._methods: dict[str, Any] = {}
        for name in REQUEST_TYPES:
            method = handler.service(_CallDetails(f"/{SERVICE}/{name}", ()))  # type: ignore[arg-type]
            if method is None:
                raise AssertionError(f"the engine serves no {name}")
            self._methods[name] = method

    async def call(self, method: str, request: bytes, lang: str) -> Answer:
        from ninetynine.common.errors import ServiceError, abort

        handler = self._methods[method]
        context = _Context(lang)
        try:
            # A method registered raw (no deserializer) parses its bytes itself, as under grpc.
            parse = handler.request_deserializer
            response = await handler.unary_unary(request if parse is None else parse(request), context)
        except ServiceError as err:
            with suppress(grpc.aio.AbortError):
                await abort(context, err)  # type: ignore[arg-type]
            if context.status is None:
                raise AssertionError("abort() did not abort") from err
            return refusal_from(*context.status)
        data: bytes = handler.response_serializer(response)
        return data

    def answers(self, sends: Iterable[Send]) -> list[tuple[Sent, Answer]]:
        async def run() -> list[tuple[Sent, Answer]]:
            return [(sent, await self.call(method, request, sent[2])) for sent, method, request in sends]

        return asyncio.run(run())


@dataclass(frozen=True)
class _CallDetails:
    method: str
    invocation_metadata: tuple[tuple[str, str], ...]


class _Context:
    """What the engine's servicer and ``abort`` use of a ``grpc.aio.ServicerContext``."""

    def __init__(self, lang: str) -> None:
        self._metadata = (("accept-language", lang),)
        self.status: tuple[grpc.StatusCode, str, tuple[tuple[str, str | bytes], ...]] | None = None

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return self._metadata

    def trailing_metadata(self) -> tuple[tuple[str, str | bytes], ...]:
        return ()

    async def abort(self, code: grpc.StatusCode, details: str = "", trailing_metadata: Any = ()) -> None:
        self.status = (code, details, tuple(trailing_metadata))
        raise grpc.aio.AbortError()


# -- the corpus file ------------------------------------------------------------------------------


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def unb64(text: str) -> bytes:
    return base64.b64decode(text, validate=True)


@dataclass
class Game:
    """One recorded game: its summary (``info``) and its calls, in order."""

    game: int
    info: dict[str, Any]
    calls: list[dict[str, Any]] = field(default_factory=list)

    def request(self, index: int) -> bytes:
        """The exact request bytes of call ``index``."""
        call = self.calls[index]
        rest = unb64(call["req"])
        source = call.get("from")
        if source is None:
            return rest
        origin = self.calls[source]
        return with_state(field_bytes(unb64(origin["ok"]), STATE_FIELD[origin["m"]]), rest)

    @property
    def label(self) -> str:
        return f"game-{self.game:03d}-{self.info.get('mode')}-{self.info.get('players')}p"

    def to_json(self) -> dict[str, Any]:
        return {"game": self.game, **self.info, "calls": self.calls}


def write_corpus(path: Path, header: Mapping[str, Any], games: Iterable[Game]) -> None:
    # No mtime or file name in the gzip header: recording the same games gives the same file.
    with path.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", filename="", mtime=0) as out:
        out.write(_line(header))
        for game in games:
            out.write(_line(game.to_json()))


def _line(value: Mapping[str, Any]) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def read_corpus(path: Path = CORPUS_PATH) -> tuple[dict[str, Any], list[Game]]:
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        header = json.loads(next(lines))
        if header.get("format") != FORMAT or header.get("formatVersion") != FORMAT_VERSION:
            raise ValueError(f"{path} is not a {FORMAT} v{FORMAT_VERSION} corpus")
        games = []
        for line in lines:
            raw = json.loads(line)
            calls = raw.pop("calls")
            games.append(Game(raw.pop("game"), raw, calls))
    return header, games


# -- replay and comparison --------------------------------------------------------------------------


@dataclass(frozen=True)
class Mismatch:
    game: int
    index: int
    text: str


def sends(games: Iterable[Game]) -> Iterator[Send]:
    """Every call to make again, as (which, method, request bytes); a refusal once per language."""
    for game in games:
        for index, call in enumerate(game.calls):
            request = game.request(index)
            for lang in [call["lang"]] if "ok" in call else LANGS:
                yield (game, index, lang), call["m"], request


def replay(engine: RawEngine | InProcessEngine, games: Iterable[Game]) -> list[Mismatch]:
    """Send every recorded call of ``games`` again and compare each answer with the recorded one.

    One mismatch per call at most (the first language that differs), in corpus order.
    """
    found: dict[tuple[int, int], Mismatch] = {}
    for (game, index, lang), answer in engine.answers(sends(games)):
        text = compare(game, index, lang, answer)
        if text is not None:
            found.setdefault((game.game, index), Mismatch(game.game, index, text))
    return [found[key] for key in sorted(found)]


def compare(game: Game, index: int, lang: str, answer: bytes | Refusal) -> str | None:
    """None when ``answer`` is what call ``index`` of ``game`` recorded, else a readable report."""
    call = game.calls[index]
    method = call["m"]
    where = (
        f"{game.label}, call {index} ({method} at seq {call.get('seq', '-')}: {call.get('note', '')}), "
        f"accept-language {lang}"
    )
    if "ok" in call:
        expected = unb64(call["ok"])
        if isinstance(answer, Refusal):
            return f"{where}: recorded a response, now refused: {answer.facts()} {answer.message!r}"
        if answer == expected:
            return None
        return f"{where}: response bytes differ\n" + describe_difference(
            RESPONSE_TYPES[method], expected, answer
        )
    recorded = call["err"]
    if not isinstance(answer, Refusal):
        return (
            f"{where}: recorded refusal {recorded['reason']} ({recorded['code']}), now answered:\n"
            + _text(RESPONSE_TYPES[method], answer)[:2000]
        )
    want = {key: value for key, value in recorded.items() if key != "message"}
    want["message"] = recorded["message"][lang]
    got = {**answer.facts(), "message": answer.message}
    if want == got:
        return None
    lines = [
        f"  {key}: recorded {want[key]!r}, now {got.get(key)!r}" for key in want if want[key] != got.get(key)
    ]
    return f"{where}: refusal differs\n" + "\n".join(lines)


def _text(message_type: type[Message], data: bytes) -> str:
    try:
        return text_format.MessageToString(message_type.FromString(data), as_utf8=True)
    except DecodeError as exc:
        return f"<undecodable: {exc}> {data[:200]!r}"


MAX_DIFF_LINES = 60


def describe_difference(message_type: type[Message], expected: bytes, actual: bytes) -> str:
    """The first differing field (by path) of two encoded messages, then their text-format diff."""
    try:
        want, got = message_type.FromString(expected), message_type.FromString(actual)
    except DecodeError as exc:
        return f"  <undecodable: {exc}>\n  recorded {expected[:80]!r}...\n  now      {actual[:80]!r}..."
    lines = [f"  first difference: {first_difference(want, got)}"]
    if want == got:
        lines.append(f"  (equal fields, different encoding: {len(expected)} vs {len(actual)} bytes)")
    diff = list(
        difflib.unified_diff(
            text_format.MessageToString(want, as_utf8=True).splitlines(),
            text_format.MessageToString(got, as_utf8=True).splitlines(),
            "recorded",
            "now",
            lineterm="",
            n=2,
        )
    )
    lines += ["  " + line for line in diff[:MAX_DIFF_LINES]]
    if len(diff) > MAX_DIFF_LINES:
        lines.append(f"  ... {len(diff) - MAX_DIFF_LINES} more diff lines")
    return "\n".join(lines)


def first_difference(want: Message, got: Message, path: str = "") -> str:
    """``path: recorded ... != now ...`` for the first field (in field-number order) that differs."""
    fields = {f.number: f for f, _ in want.ListFields()} | {f.number: f for f, _ in got.ListFields()}
    for number in sorted(fields):
        desc = fields[number]
        name = f"{path}.{desc.name}" if path else desc.name
        a, b = getattr(want, desc.name), getattr(got, desc.name)
        if not desc.is_repeated:
            found = _differs(desc, a, b, name)
            if found:
                return found
            continue
        for i in range(max(len(a), len(b))):
            if i >= len(a) or i >= len(b):
                who = "recorded" if i < len(a) else "now"
                return f"{name}[{i}]: only {who} has it ({len(a)} vs {len(b)} items)"
            found = _differs(desc, a[i], b[i], f"{name}[{i}]")
            if found:
                return found
    return "(none: the parsed messages are equal)"


def _differs(desc: FieldDescriptor, a: Any, b: Any, name: str) -> str | None:
    if a == b:
        return None
    if desc.type == FieldDescriptor.TYPE_MESSAGE:
        return first_difference(a, b, name)
    if desc.enum_type is not None:
        names = desc.enum_type.values_by_number
        a, b = (names[v].name if v in names else v for v in (a, b))
    return f"{name}: recorded {a!r} != now {b!r}"
