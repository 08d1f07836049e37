"""The client JSON codec, built from the protobuf descriptors and their ``json_options.proto`` options.

One rule names everything (field ``hand_count`` is the key ``handCount``, enum value
``CARD_KIND_PLUS_MINUS`` is ``"plusMinus"``, every field written in declaration order, an unset one
with its default); ``protos/ninetynine/common/v1/json_options.proto`` declares, in the ``.proto``
files, where the protocol differs from the rule. Nothing here names a field of the game.

Encoding is on the move path (an event and a view for every seat of every move), so each message
type is compiled once, on first use, into a Python function generated for it: straight-line field
reads and one dict display, no per-field interpretation at run time (``Codec.sources`` holds the
generated text). The output is plain dicts, lists, strings, ints, bools and None, ready for
``orjson.dumps``. Frame encoders (``frames=True``) differ in one way: the parts a message declares
``memo`` for are ``orjson.Fragment`` texts kept per distinct wire encoding, and a message declaring
``shared_without`` keeps the text of all but those last keys, shared by the values that differ
only in them (reading a protobuf field from Python costs more than serializing a small message).

Decoding (client JSON into a message) runs once per client frame and interprets a compiled field
table; frames reach it only after the JSON Schema accepted them.

What no option describes is registered by name: a *projection* builds a message's whole object
(``JsonMessage.projection``), a *parser* builds a message from its JSON value (the rules engine
parses options). Both are passed to :class:`Codec` by the service that owns them.
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

import orjson
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor, OneofDescriptor
from google.protobuf.message import Message

from ninetynine.common.v1 import json_options_pb2 as jo

__all__ = [
    "Codec",
    "Decoder",
    "Encoder",
    "Parser",
    "Projection",
    "camel",
    "enum_json",
    "enum_names",
    "enum_numbers",
    "field_json",
    "json_key",
]

Encoder = Callable[[Any], dict[str, Any]]
Decoder = Callable[[Mapping[str, Any], Any], None]
Projection = Callable[[Any], dict[str, Any]]
Parser = Callable[[Any], Message]

_INTS = frozenset(
    {
        FieldDescriptor.TYPE_INT32,
        FieldDescriptor.TYPE_INT64,
        FieldDescriptor.TYPE_UINT32,
        FieldDescriptor.TYPE_UINT64,
        FieldDescriptor.TYPE_SINT32,
        FieldDescriptor.TYPE_SINT64,
        FieldDescriptor.TYPE_FIXED32,
        FieldDescriptor.TYPE_FIXED64,
        FieldDescriptor.TYPE_SFIXED32,
        FieldDescriptor.TYPE_SFIXED64,
    }
)


def camel(snake: str) -> str:
    """``hand_count`` -> ``handCount``; ``GAP_TOO_OLD`` -> ``gapTooOld``."""
    head, *rest = snake.lower().split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _upper_snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).upper()


def _sub(field: FieldDescriptor) -> Descriptor:
    """The message type of a message field."""
    assert field.message_type is not None, field.full_name
    return field.message_type


def _enum(field: FieldDescriptor) -> EnumDescriptor:
    assert field.enum_type is not None, field.full_name
    return field.enum_type


def field_json(field: FieldDescriptor) -> jo.JsonField:
    """The field's declared JSON options (empty when it follows the rule)."""
    return field.GetOptions().Extensions[jo.json]


def json_key(field: FieldDescriptor) -> str:
    return field_json(field).name or camel(field.name)


def enum_json(enum: EnumDescriptor) -> dict[int, object]:
    """Every value number of ``enum`` -> its JSON value (a string, or the declared number)."""
    prefix = _upper_snake(enum.name) + "_"
    out: dict[int, object] = {}
    for value in enum.values:
        declared = value.GetOptions().Extensions[jo.json_value]
        if declared.HasField("number"):
            out[value.number] = declared.number
        else:
            out[value.number] = declared.name or camel(value.name.removeprefix(prefix))
    return out


def enum_names(enum: EnumDescriptor) -> dict[int, object]:
    """The JSON value of every non-zero value number (the values that mean something)."""
    return {number: value for number, value in enum_json(enum).items() if number}


def enum_numbers(enum: EnumDescriptor) -> dict[object, int]:
    """JSON value -> number, for the non-zero values."""
    return {value: number for number, value in enum_names(enum).items()}


def enum_from_json(enum: EnumDescriptor) -> dict[object, int]:
    """JSON value -> value number; a name shared with the zero value means the non-zero one."""
    out: dict[object, int] = {}
    for number, name in sorted(enum_json(enum).items(), key=lambda item: item[0] == 0):
        out.setdefault(name, number)
    return out


def _message_json(descriptor: Descriptor) -> jo.JsonMessage:
    return descriptor.GetOptions().Extensions[jo.json_message]


def _real_oneof(field: FieldDescriptor) -> OneofDescriptor | None:
    """The oneof ``field`` is a member of, not counting the one proto3 makes for ``optional``."""
    oneof = field.containing_oneof
    if oneof is None or (len(oneof.fields) == 1 and oneof.name == "_" + field.name):
        return None
    return oneof


def _type_key(field: FieldDescriptor) -> str:
    oneof = _real_oneof(field)
    return oneof.GetOptions().Extensions[jo.json_oneof].type_key if oneof is not None else ""


def _layout(descriptor: Descriptor, without: frozenset[str]) -> list[Any]:
    """The parts of a message's JSON object in key order, as the encoder writes them and the reader
    reads them: ``("lifted", parent, sub-field)``, ``("group", name)``, ``("oneof", name, type
    key)`` and ``("field", field, sub-fields lifted out of it, the sibling written into it, whether
    it is a oneof member)``."""
    fields = descriptor.fields_by_name
    order = list(_message_json(descriptor).order) or [f.name for f in descriptor.fields]
    lifted: dict[str, set[str]] = {}
    for path in order:
        if "." in path:
            parent, sub = path.split(".", 1)
            lifted.setdefault(parent, set()).add(sub)
    intos = {field_json(f).into: f for f in descriptor.fields if field_json(f).into}
    groups_done: set[str] = set()
    oneofs_done: set[str] = set()
    parts: list[Any] = []
    for path in order:
        if "." in path:
            parent, sub = path.split(".", 1)
            parts.append(("lifted", parent, _sub(fields[parent]).fields_by_name[sub]))
            continue
        field = fields[path]
        options = field_json(field)
        if field.name in without or options.omit or options.into:
            continue
        if options.group:
            if options.group not in groups_done:
                groups_done.add(options.group)
                parts.append(("group", options.group))
            continue
        oneof = _real_oneof(field)
        if oneof is not None and _type_key(field):
            if oneof.name not in oneofs_done:
                oneofs_done.add(oneof.name)
                parts.append(("oneof", oneof.name, _type_key(field)))
            continue
        parts.append(
            ("field", field, frozenset(lifted.get(field.name, ())), intos.get(field.name), oneof is not None)
        )
    return parts


class Codec:
    """Encoders and decoders for every message type, compiled on first use and kept."""

    def __init__(
        self,
        projections: Mapping[str, Callable[[Codec], Projection]] | None = None,
        parsers: Mapping[str, Parser] | None = None,
    ) -> None:
        # A projection is made once the codec exists, so it can use the codec's own encoders.
        self._projection_makers = dict(projections or {})
        self._projections: dict[str, Projection] = {}
        self._parsers = dict(parsers or {})
        self._encoders: dict[tuple[str, frozenset[str], bool], Encoder] = {}
        self._decoders: dict[str, Decoder] = {}
        self._readers: dict[tuple[str, frozenset[str]], Decoder] = {}
        self._memos: dict[tuple[str, frozenset[str]], _Memo | _SharedMemo] = {}
        self._names: dict[str, object] = {}
        self.sources: dict[str, str] = {}  # generated source per function, for reading and debugging

    # -- encoding ---------------------------------------------------------------------------

    def encoder(
        self, descriptor: Descriptor, without: frozenset[str] = frozenset(), frames: bool = False
    ) -> Encoder:
        """The function writing a ``descriptor`` message as a JSON object (``without``: fields
        lifted into the parent's object and left out of this one).

        With ``frames``, for ``orjson.dumps`` only: parts declared with ``memo`` are
        ``orjson.Fragment`` texts kept per distinct wire encoding, the rest as without.
        """
        key = (descriptor.full_name, without, frames)
        found = self._encoders.get(key)
        if found is None:
            projection = _message_json(descriptor).projection
            found = self._projection(projection) if projection else self._compile(descriptor, without, frames)
            self._encoders[key] = found
        return found

    def part(self, descriptor: Descriptor, without: frozenset[str], frames: bool) -> Callable[[Any], object]:
        """The encoder of a sub-message value: a kept text for a ``memo`` part of a frame."""
        options = _message_json(descriptor)
        if not frames or not options.memo:
            return self.encoder(descriptor, without, frames)
        key = (descriptor.full_name, without)
        found = self._memos.get(key)
        if found is None:
            if options.shared_without:
                shared = frozenset(options.shared_without)
                own = frozenset(f.name for f in descriptor.fields) - shared
                found = _SharedMemo(
                    self.encoder(descriptor, without | shared, frames),
                    self.encoder(descriptor, without | own, frames),
                    tuple(options.shared_without),
                    options.memo,
                )
            else:
                found = _Memo(self.encoder(descriptor, without, frames), options.memo)
            self._memos[key] = found
        return found

    def encode(self, msg: Message) -> dict[str, Any]:
        descriptor: Any = msg.DESCRIPTOR  # the stubs and upb disagree on descriptor types
        return self.encoder(descriptor)(msg)

    def _projection(self, name: str) -> Projection:
        found = self._projections.get(name)
        if found is None:
            maker = self._projection_makers.get(name)
            if maker is None:
                raise LookupError(f"no projection {name!r} registered with the codec")
            found = self._projections[name] = maker(self)
        return found

    def _name(self, prefix: str, value: object) -> str:
        """A global name of the generated code bound to ``value``."""
        name = f"{prefix}{len(self._names)}"
        self._names[name] = value
        return name

    def _compile(self, descriptor: Descriptor, without: frozenset[str], frames: bool) -> Encoder:
        fn = self._name("enc_", None)
        body = _MessageSource(self, descriptor, without, frames).lines()
        source = f"def {fn}(m):\n" + "".join(f"    {line}\n" for line in body)
        namespace: dict[str, object] = dict(self._names)
        exec(compile(source, f"<codec {descriptor.full_name}>", "exec"), namespace)
        compiled: Encoder = namespace[fn]  # type: ignore[assignment]
        self._names[fn] = compiled
        name = descriptor.full_name + (f" without {sorted(without)}" if without else "")
        self.sources[name + (" (frames)" if frames else "")] = source
        return compiled

    # -- decoding ---------------------------------------------------------------------------

    def decoder(self, descriptor: Descriptor) -> Decoder:
        """The function reading a (schema-valid) JSON object into a ``descriptor`` message."""
        found = self._decoders.get(descriptor.full_name)
        if found is None:
            found = self._decoders[descriptor.full_name] = self._compile_decoder(descriptor)
        return found

    def decode(self, raw: Mapping[str, Any], out: Message) -> Message:
        descriptor: Any = out.DESCRIPTOR
        self.decoder(descriptor)(raw, out)
        return out

    def reader(self, descriptor: Descriptor, without: frozenset[str] = frozenset()) -> Decoder:
        """The exact inverse of :meth:`encoder`: the function writing an object of the protocol's
        JSON shape into a ``descriptor`` message (``without``: fields it leaves alone).

        For the server's own values (the rules' events, views and results), which already have the
        shape a client reads: compiled like an encoder into straight-line code, no checks beyond
        the types the fields take. A key the encoder writes in every object must be there (a
        ``KeyError`` says the shape drifted from the ``.proto``); any other key left out, or
        ``null``, leaves its field unset, as does a value equal to the field's ``unset_json``; a
        registered parser builds its message type.
        """
        key = (descriptor.full_name, without)
        found: Decoder | None = self._readers.get(key)
        if found is None:
            if _message_json(descriptor).projection and descriptor.full_name not in self._parsers:
                raise TypeError(f"{descriptor.full_name} is written by a projection: it has no reader")
            fn = self._name("read_", None)
            body = _ReaderSource(self, descriptor, without).lines()
            source = f"def {fn}(r, m):\n" + "".join(f"    {line}\n" for line in body)
            namespace: dict[str, object] = dict(self._names)
            exec(compile(source, f"<codec reader {descriptor.full_name}>", "exec"), namespace)
            compiled: Decoder = namespace[fn]  # type: ignore[assignment]
            self._names[fn] = self._readers[key] = found = compiled
            name = descriptor.full_name + (f" without {sorted(without)}" if without else "")
            self.sources[name + " (reader)"] = source
        return found

    def member_readers(self, descriptor: Descriptor, oneof: str) -> dict[str, tuple[str, Decoder]]:
        """Per discriminator value of ``oneof``: the member field's name and its message's reader
        (members written by a projection have none and are left out)."""
        return {
            camel(f.name): (f.name, self.reader(_sub(f)))
            for f in descriptor.oneofs_by_name[oneof].fields
            if not _message_json(_sub(f)).projection or _sub(f).full_name in self._parsers
        }

    def _compile_decoder(self, descriptor: Descriptor) -> Decoder:
        steps: list[Callable[[Mapping[str, Any], Any], None]] = []
        members: dict[str, dict[str, FieldDescriptor]] = {}
        for field in descriptor.fields:
            options = field_json(field)
            if options.omit:
                continue
            type_key = _type_key(field)
            if type_key:
                members.setdefault(type_key, {})[camel(field.name)] = field
                continue
            steps.append(self._field_decoder(field, options))
        for type_key, by_type in members.items():
            steps.append(self._oneof_decoder(type_key, by_type))

        def decode(raw: Mapping[str, Any], out: Any) -> None:
            for step in steps:
                step(raw, out)

        return decode

    def _oneof_decoder(
        self, type_key: str, by_type: dict[str, FieldDescriptor]
    ) -> Callable[[Mapping[str, Any], Any], None]:
        def decode(raw: Mapping[str, Any], out: Any) -> None:
            field = by_type.get(raw[type_key])
            if field is None:
                raise ValueError(f"unknown {type_key} {raw[type_key]!r}")
            member = getattr(out, field.name)
            member.SetInParent()
            self.decoder(_sub(field))(raw, member)

        return decode

    def _field_decoder(
        self, field: FieldDescriptor, options: jo.JsonField
    ) -> Callable[[Mapping[str, Any], Any], None]:
        key, name = json_key(field), field.name
        missing = json.loads(options.missing_json) if options.missing_json else None
        has_missing = bool(options.missing_json)
        value_of = self._value_decoder(field)
        if field.type == FieldDescriptor.TYPE_MESSAGE and not field.is_repeated and options.inline:

            def decode_inline(raw: Mapping[str, Any], out: Any) -> None:
                sub = getattr(out, name)
                sub.SetInParent()
                self.decoder(_sub(field))(raw, sub)

            return decode_inline
        if field.type == FieldDescriptor.TYPE_MESSAGE and not field.is_repeated:
            parser = self._parsers.get(_sub(field).full_name)

            def decode_message(raw: Mapping[str, Any], out: Any) -> None:
                if key in raw:
                    value = raw[key]
                elif has_missing:
                    value = missing
                else:
                    return
                if value is None:  # null: left unset
                    return
                if parser is not None:
                    getattr(out, name).CopyFrom(parser(value))
                else:
                    sub = getattr(out, name)
                    sub.SetInParent()
                    self.decoder(_sub(field))(value, sub)

            return decode_message
        if field.is_repeated and field.message_type is not None and field.message_type.GetOptions().map_entry:
            value_field = _sub(field).fields_by_name["value"]
            if value_field.type == FieldDescriptor.TYPE_MESSAGE:
                raise NotImplementedError(f"{field.full_name}: maps of messages are not decoded")
            entry_value = self._value_decoder(value_field)

            def decode_map(raw: Mapping[str, Any], out: Any) -> None:
                getattr(out, name).update({k: entry_value(v) for k, v in raw.get(key, {}).items()})

            return decode_map
        if field.is_repeated and options.as_map:
            key_field, pair_field = _sub(field).fields[:2]
            pair_key = self._value_decoder(key_field)
            pair_value = self._value_decoder(pair_field)

            def decode_pairs(raw: Mapping[str, Any], out: Any) -> None:
                entries = getattr(out, name)
                for k, v in (raw.get(key) or {}).items():
                    entry = entries.add()
                    setattr(entry, key_field.name, pair_key(k))
                    setattr(entry, pair_field.name, pair_value(v))

            return decode_pairs
        if field.is_repeated and field.type == FieldDescriptor.TYPE_MESSAGE:

            def decode_messages(raw: Mapping[str, Any], out: Any) -> None:
                for value in raw.get(key) or ():
                    self.decoder(_sub(field))(value, getattr(out, name).add())

            return decode_messages
        if field.is_repeated:

            def decode_repeated(raw: Mapping[str, Any], out: Any) -> None:
                if raw.get(key) is not None:
                    getattr(out, name).extend(value_of(v) for v in raw[key])

            return decode_repeated

        def decode_scalar(raw: Mapping[str, Any], out: Any) -> None:
            if key in raw:
                if raw[key] is not None:  # null: left unset
                    setattr(out, name, value_of(raw[key]))
            elif has_missing:
                setattr(out, name, value_of(missing))

        return decode_scalar

    def _value_decoder(self, field: FieldDescriptor) -> Callable[[Any], Any]:
        if field.type == FieldDescriptor.TYPE_ENUM:
            names = enum_from_json(_enum(field))
            return names.__getitem__
        if field.type in _INTS:
            return int
        if field.type == FieldDescriptor.TYPE_BOOL:
            true_name = field_json(field).bool_names[:1]
            return (lambda v: v == true_name[0]) if true_name else bool
        if field.type == FieldDescriptor.TYPE_STRING:
            return str
        return lambda v: v


class _ReaderSource:
    """The generated body of one message type's reader: :class:`_MessageSource` run backwards."""

    def __init__(self, codec: Codec, descriptor: Descriptor, without: frozenset[str]) -> None:
        self.codec = codec
        self.descriptor = descriptor
        self.without = without
        self.fields = descriptor.fields_by_name
        self.temp = 0
        self.out: list[str] = []

    def lines(self) -> list[str]:
        parser = self.codec._parsers.get(self.descriptor.full_name)
        if parser is not None:
            return [f"m.CopyFrom({self.codec._name('parse_', parser)}(r))"]
        for part in _layout(self.descriptor, self.without):
            if part[0] == "lifted":
                _, parent, sub = part
                if parent not in self.without:
                    self._field(sub, "r", f"m.{parent}")
            elif part[0] == "group":
                self._group(part[1])
            elif part[0] == "oneof":
                self._oneof(part[1], part[2])
            else:
                _, field, lifted, into, _in_oneof = part
                self._field(field, "r", "m", lifted)
                if into is not None:  # the sibling's key sits in this field's object
                    self._field(into, f"r.get({json_key(field)!r}) or {{}}", "m")
        return self.out or ["pass"]

    def _var(self) -> str:
        self.temp += 1
        return f"x{self.temp}"

    def _oneof(self, name: str, type_key: str) -> None:
        members = self.codec.member_readers(self.descriptor, name)
        table = self.codec._name("members_", members)
        self.out += [
            f"f, read = {table}[r[{type_key!r}]]",
            "s = getattr(m, f)",
            "s.SetInParent()",
            "read(r, s)",
        ]

    def _group(self, group: str) -> None:
        g = self._var()
        self.out += [f"{g} = r.get({group!r})", f"if {g} is not None:"]
        for field in (f for f in self.descriptor.fields if field_json(f).group == group):
            self.out.append(f"    m.{field.name} = {self._convert(field, f'{g}[{json_key(field)!r}]')}")

    def _field(
        self, field: FieldDescriptor, raw: str, holder: str, without: frozenset[str] = frozenset()
    ) -> None:
        options = field_json(field)
        target = f"{holder}.{field.name}"
        if options.inline:  # the sub-message's keys are this object's own
            read = self.codec._name("read_", self.codec.reader(_sub(field), without))
            self.out += [f"{target}.SetInParent()", f"{read}({raw}, {target})"]
            return
        x = self._var()
        if self._always(field) and field.type != FieldDescriptor.TYPE_MESSAGE:
            # Written in every object by the encoder: read without a test.
            self.out += [f"{x} = ({raw})[{json_key(field)!r}]", *self._body(field, x, target, without)]
            return
        self.out += [f"{x} = ({raw}).get({json_key(field)!r})", f"if {x} is not None:"]
        if options.unset_json:
            self.out[-1] = f"if {x} is not None and {x} != {json.loads(options.unset_json)!r}:"
        body = self._body(field, x, target, without)
        self.out += [f"    {line}" for line in body]

    @staticmethod
    def _always(field: FieldDescriptor) -> bool:
        options = field_json(field)
        return (
            options.presence == jo.JSON_PRESENCE_UNSPECIFIED
            and not options.when
            and not options.unset_json
            and not options.fallback
            and _real_oneof(field) is None
        )

    def _body(self, field: FieldDescriptor, x: str, target: str, without: frozenset[str]) -> list[str]:
        options = field_json(field)
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            value_field = _sub(field).fields_by_name["value"]
            if value_field.type == FieldDescriptor.TYPE_MESSAGE:
                raise TypeError(f"{field.full_name}: maps of messages have no reader")
            value = self._convert(value_field, "v")
            return [
                f"{target}.update({x})"
                if value == "v"
                else f"{target}.update({{k: {value} for k, v in {x}.items()}})"
            ]
        if field.is_repeated and field.type == FieldDescriptor.TYPE_MESSAGE:
            if options.as_map:
                key_field, value_field = _sub(field).fields[:2]
                value = self._convert(value_field, "v")
                return [
                    f"add = {target}.add",
                    f"for k, v in {x}.items():",
                    f"    add({key_field.name}=k, {value_field.name}={value})",
                ]
            read = self.codec._name("read_", self.codec.reader(_sub(field), without))
            return [f"add = {target}.add", f"for v in {x}:", f"    {read}(v, add())"]
        if field.is_repeated:
            value = self._convert(field, "v")
            return [f"{target}.extend({x})" if value == "v" else f"{target}.extend([{value} for v in {x}])"]
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            read = self.codec._name("read_", self.codec.reader(_sub(field), without))
            return [f"{target}.SetInParent()", f"{read}({x}, {target})"]
        return [f"{target} = {self._convert(field, x)}"]

    def _convert(self, field: FieldDescriptor, read: str) -> str:
        """The expression for the field's value from its JSON value ``read``."""
        options = field_json(field)
        if field.type == FieldDescriptor.TYPE_ENUM:
            return f"{self.codec._name('enum_', enum_from_json(_enum(field)))}[{read}]"
        if options.as_string:
            return f"int({read})"
        if options.bool_names:
            return f"({read} == {options.bool_names[0]!r})"
        if options.camel_value:
            return f"{self.codec._name('snake_', _upper_snake)}({read})"
        return read


class _Memo:
    """A part's JSON text per distinct wire encoding, the oldest dropped first when full.

    Encoding a small message is one C call, cheaper than the field reads of its encoder. No LRU
    bookkeeping on hits: the entries that matter are young (this move's seats and plays) or few
    (cards, options). An OrderedDict: a plain dict slows down when its oldest keys are deleted
    over and over (each lookup of the first key walks over the holes left in front).
    """

    def __init__(self, encode: Encoder, max_entries: int) -> None:
        self._encode = encode
        self.max_entries = max_entries
        self._entries: OrderedDict[bytes, orjson.Fragment] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def __call__(self, msg: Any) -> orjson.Fragment:
        key = msg.SerializeToString()
        hit = self._entries.get(key)
        if hit is None:
            # bytes(memoryview(...)): orjson returns its whole work buffer; keep only the text.
            hit = orjson.Fragment(bytes(memoryview(orjson.dumps(self._encode(msg)))))
            if len(self._entries) >= self.max_entries:
                self._entries.popitem(last=False)
            self._entries[key] = hit
        return hit


class _SharedMemo:
    """A message whose values differ only in a few last keys, as one kept text plus those keys.

    The views of one state differ only in the viewer's own fields; the text of the rest is kept per
    distinct wire encoding of the message without them, so it is built once per state and not
    once per viewer. Oldest entries go first when full, as in :class:`_Memo`.
    """

    def __init__(self, shared: Encoder, own: Encoder, own_fields: tuple[str, ...], max_entries: int) -> None:
        self._shared = shared
        self._own = own
        self._own_fields = own_fields
        self.max_entries = max_entries
        self._entries: OrderedDict[bytes, bytes] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def __call__(self, msg: Any) -> orjson.Fragment:
        public = type(msg)()
        public.CopyFrom(msg)
        for name in self._own_fields:
            public.ClearField(name)
        key = public.SerializeToString()
        text = self._entries.get(key)
        if text is None:
            text = bytes(memoryview(orjson.dumps(self._shared(public))))
            if len(self._entries) >= self.max_entries:
                self._entries.popitem(last=False)
            self._entries[key] = text
        own = orjson.dumps(self._own(msg))
        if len(own) == 2:  # {}
            return orjson.Fragment(text)
        # "{shared}" and "{own}" make "{shared,own}": the own keys are the object's last ones.
        return orjson.Fragment(text[:-1] + b"," + own[1:])


class _MessageSource:
    """The generated body of one message type's encoder."""

    def __init__(self, codec: Codec, descriptor: Descriptor, without: frozenset[str], frames: bool) -> None:
        self.codec = codec
        self.descriptor = descriptor
        self.without = without
        self.frames = frames
        self.fields = descriptor.fields_by_name
        self.temp = 0

    def lines(self) -> list[str]:
        # Each item: (key, expression) for an unconditional key, or statements writing into `o`.
        self.items: list[tuple[str, str] | list[str]] = []
        self.head: list[str] = []
        for part in _layout(self.descriptor, self.without):
            if part[0] == "lifted":
                _, parent, sub = part
                self._field(sub, f"m.{parent}", into=None)
            elif part[0] == "group":
                self._group(part[1])
            elif part[0] == "oneof":
                self._oneof(part[1], part[2])
            else:
                _, field, lifted, into, in_oneof = part
                self._field(field, "m", into=into, without=lifted, when_set=in_oneof)
        return self._assemble()

    def _assemble(self) -> list[str]:
        out = list(self.head)
        literal: list[str] = []
        rest: list[str] = []
        for item in self.items:
            if isinstance(item, tuple) and not rest:
                literal.append(f"{item[0]!r}: {item[1]}")
            elif isinstance(item, tuple):
                rest.append(f"o[{item[0]!r}] = {item[1]}")
            else:
                rest.extend(item)
        if not rest:
            return [*out, "return {" + ", ".join(literal) + "}"]
        return [*out, "o = {" + ", ".join(literal) + "}", *rest, "return o"]

    def _statements(self, lines: list[str]) -> None:
        last = self.items[-1] if self.items else None
        if (
            isinstance(last, list)
            and lines[0].startswith("if ")
            and last[0] == lines[0]
            and "else:" not in last
        ):
            last.extend(lines[1:])  # one test for consecutive keys under the same condition
        else:
            self.items.append(lines)

    def _oneof(self, name: str, type_key: str) -> None:
        """The discriminator first of all keys, the member's keys where the oneof is declared."""
        kind = f"k{self.temp}"
        self.temp += 1
        members = self.descriptor.oneofs_by_name[name].fields
        table = {
            f.name: (camel(f.name), self.codec.encoder(_sub(f), frozenset(), self.frames)) for f in members
        }
        self.head.append(f"{kind} = m.WhichOneof({name!r})")
        self.head.append(f"if {kind} is None:")
        self.head.append(f"    raise ValueError('{self.descriptor.name} without a {name}: ' + repr(m))")
        self.head.append(f"t{kind}, e{kind} = {self.codec._name('oneof_', table)}[{kind}]")
        # The type key goes first, so `o` is built from a literal holding it.
        self.items.insert(0, (type_key, f"t{kind}"))
        self._statements([f"o.update(e{kind}(getattr(m, {kind})))"])

    def _group(self, group: str) -> None:
        members = [f for f in self.descriptor.fields if field_json(f).group == group]
        test = " and ".join(f"m.HasField({f.name!r})" for f in members)
        parts = ", ".join(f"{json_key(f)!r}: {self._value(f, 'm')}" for f in members)
        self._statements([f"if {test}:", f"    o[{group!r}] = {{{parts}}}"])

    def _field(
        self,
        field: FieldDescriptor,
        holder: str,
        into: FieldDescriptor | None,
        without: frozenset[str] = frozenset(),
        when_set: bool = False,
    ) -> None:
        options = field_json(field)
        key = json_key(field)
        # A value that gets a key added (`into`) or is merged into `o` (`inline`) must be a dict.
        value = self._value(field, holder, without, plain=into is not None or options.inline)
        presence = options.presence
        if when_set:
            presence = jo.JSON_PRESENCE_WHEN_SET
        has = self._has(field, holder)
        if presence == jo.JSON_PRESENCE_NULL_WHEN_UNSET:
            value = f"({value} if {has} else None)"
        condition = ""
        if presence == jo.JSON_PRESENCE_WHEN_SET:
            condition = has
        if options.when:
            condition = " and ".join(filter(None, [self._when(options.when), condition]))
        if into is not None:
            # The sibling's value is written as the last key of this field's object.
            temp = f"v{self.temp}"
            self.temp += 1
            extra = self._value(into, holder)
            extra_has = "True"
            if field_json(into).presence == jo.JSON_PRESENCE_WHEN_SET:
                extra_has = self._has(into, holder)
            lines = [f"{temp} = {value}", f"if {extra_has}:", f"    {temp}[{json_key(into)!r}] = {extra}"]
            lines.append(f"o[{key!r}] = {temp}")
            if condition:
                lines = [f"if {condition}:", *(f"    {line}" for line in lines)]
            self._statements(lines)
            return
        if options.inline:
            line = f"o.update({value})"
            self._statements([f"if {condition}:", f"    {line}"] if condition else [line])
            return
        if condition:
            self._statements([f"if {condition}:", f"    o[{key!r}] = {value}"])
        else:
            self.items.append((key, value))

    def _when(self, when: str) -> str:
        name, _, enum_value = when.partition("=")
        field = self.fields[name]
        if not enum_value:
            return self._has(field, "m")
        return f"m.{name} == {_enum(field).values_by_name[enum_value].number}"

    @staticmethod
    def _has(field: FieldDescriptor, holder: str) -> str:
        if field.has_presence and not field.is_repeated:
            return f"{holder}.HasField({field.name!r})"
        return f"{holder}.{field.name}"

    def _value(
        self, field: FieldDescriptor, holder: str, without: frozenset[str] = frozenset(), plain: bool = False
    ) -> str:
        """The expression for ``field``'s value (``plain``: a dict even for a ``memo`` part)."""
        options = field_json(field)
        read = f"{holder}.{field.name}"
        if options.fallback:
            read = f"({read} or {holder}.{options.fallback})"
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            value_field = _sub(field).fields_by_name["value"]
            if value_field.type == FieldDescriptor.TYPE_MESSAGE:
                return f"{{k: {self._one(value_field, 'x')} for k, x in {read}.items()}}"
            return f"dict({read})"
        if field.is_repeated:
            if options.as_map:
                key_field, value_field = _sub(field).fields[:2]
                value = self._one(value_field, "x." + value_field.name)
                return f"{{x.{key_field.name}: {value} for x in {read}}}"
            one = self._one(field, "x", without)
            return f"list({read})" if one == "x" else f"[{one} for x in {read}]"
        value = self._one(field, read, without, plain)
        if options.unset_json:
            literal = repr(json.loads(options.unset_json))
            value = f"({value} if {holder}.HasField({field.name!r}) else {literal})"
        return value

    def _one(
        self, field: FieldDescriptor, read: str, without: frozenset[str] = frozenset(), plain: bool = False
    ) -> str:
        """The expression for one value of ``field`` read by ``read``."""
        options = field_json(field)
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            sub = _sub(field)
            if plain or field_json(field).inline:
                encode: Callable[[Any], object] = self.codec.encoder(sub, without, self.frames)
            else:
                encode = self.codec.part(sub, without, self.frames)
            return f"{self.codec._name('enc_', encode)}({read})"
        if field.type == FieldDescriptor.TYPE_ENUM:
            table = enum_json(_enum(field))
            default = table.get(0)
            return f"{self.codec._name('enum_', table)}.get({read}, {default!r})"
        if options.as_string:
            return f"str({read})"
        if options.bool_names:
            yes, no = options.bool_names
            return f"({yes!r} if {read} else {no!r})"
        if options.camel_value:
            return f"{self.codec._name('camel_', camel)}({read})"
        return read
