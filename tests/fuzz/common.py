"""What the harnesses share: the refusal-reason format, invariant checks, JSON built from fuzz bytes.

Nothing here imports the services (a harness imports them under ``atheris.instrument_imports`` so
that their code reports coverage; a module imported earlier would be left uninstrumented).

``mutate_wire`` is a libFuzzer custom mutator for inputs that are one byte (the form) and a
protobuf message: half the time libFuzzer's own byte mutation, half the time the message decoded,
changed the way a buggy or hostile caller would change it (a field set to an edge value or to a
value found elsewhere in the same message, a repeated element dropped, doubled or swapped, a
submessage cleared) and encoded again. Byte mutations alone mostly break the wire format (a length
prefix, a tag) and never get past a parser's first checks; coverage still decides what is kept.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from typing import Any, Final

import atheris
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError, Message

REASON = re.compile(r"[A-Z][A-Z0-9]*(_[A-Z0-9]+)*")


class InvariantViolation(AssertionError):
    """The target answered, but not as its contract says (raised so libFuzzer records the input)."""


def require(condition: bool, what: str) -> None:
    # Not ``assert``: the harnesses must check under ``python -O`` too.
    if not condition:
        raise InvariantViolation(what)


def require_reason(reason: str) -> None:
    require(isinstance(reason, str) and REASON.fullmatch(reason) is not None, f"reason {reason!r}")


def wild_json(fdp: Any, depth: int = 0) -> Any:
    """Any JSON value (NaN and infinities included: Python's json reads and writes them)."""
    pick = fdp.ConsumeIntInRange(0, 7 if depth < 3 else 5)
    if pick == 0:
        return None
    if pick == 1:
        return fdp.ConsumeBool()
    if pick == 2:
        return fdp.ConsumeInt(fdp.ConsumeIntInRange(1, 9))
    if pick == 3:
        return fdp.ConsumeFloat()
    if pick in (4, 5):
        return fdp.ConsumeUnicode(fdp.ConsumeIntInRange(0, 24))
    if pick == 6:
        return [wild_json(fdp, depth + 1) for _ in range(fdp.ConsumeIntInRange(0, 3))]
    return {
        fdp.ConsumeUnicode(fdp.ConsumeIntInRange(0, 8)): wild_json(fdp, depth + 1)
        for _ in range(fdp.ConsumeIntInRange(0, 3))
    }


def dictionary_line(token: bytes) -> str:
    """One libFuzzer ``-dict`` entry: the token in double quotes, escaped as libFuzzer reads it."""
    out = []
    for byte in token:
        char = chr(byte)
        if char in '"\\':
            out.append("\\" + char)
        elif 0x20 <= byte < 0x7F:
            out.append(char)
        else:
            out.append(f"\\x{byte:02X}")
    return '"' + "".join(out) + '"'


_INT_EDGES: Final = (0, 1, -1, 2, 3, 10, 11, 40, 98, 99, 100, 2**31 - 1, -(2**31), 2**32 - 1, 2**63 - 1)
_INT_RANGE: Final = {
    FieldDescriptor.TYPE_INT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_INT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_UINT32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_UINT64: (0, 2**64 - 1),
    FieldDescriptor.TYPE_ENUM: (-(2**31), 2**31 - 1),
}


def _places(message: Message, out: list[tuple[Message, FieldDescriptor]], pool: dict[int, list[Any]]) -> None:
    """Every (message, field) of ``message`` and below; ``pool`` gathers values by field type."""
    descriptor: Any = message.DESCRIPTOR
    for field in descriptor.fields:
        value = getattr(message, field.name)
        out.append((message, field))
        if field.message_type is not None:
            if field.message_type.GetOptions().map_entry:
                continue
            for item in value if field.is_repeated else ([value] if message.HasField(field.name) else []):
                _places(item, out, pool)
        else:
            pool.setdefault(field.type, []).extend(value if field.is_repeated else [value])


def _new_value(
    field: FieldDescriptor, pool: dict[int, list[Any]], rnd: random.Random, strings: Sequence[str]
) -> Any:
    same_kind = pool.get(field.type, [])
    if same_kind and rnd.random() < 0.5:
        return rnd.choice(same_kind)
    if field.type == FieldDescriptor.TYPE_BOOL:
        return rnd.random() < 0.5
    if field.type == FieldDescriptor.TYPE_STRING:
        return rnd.choice(strings)
    if field.type == FieldDescriptor.TYPE_ENUM and field.enum_type is not None and rnd.random() < 0.7:
        return rnd.choice([v.number for v in field.enum_type.values])
    low, high = _INT_RANGE.get(field.type, (0, 2**32 - 1))
    value = rnd.choice(_INT_EDGES) if rnd.random() < 0.7 else rnd.randint(low, high)
    return min(max(value, low), high)


def mutate_message(request: Message, rnd: random.Random, strings: Sequence[str]) -> bool:
    """Change one thing in ``request`` (in place); False when it has no field to change (an empty
    request type such as ListRulesRequest)."""
    places: list[tuple[Message, FieldDescriptor]] = []
    pool: dict[int, list[Any]] = {}
    _places(request, places, pool)
    if not places:
        return False
    message, field = rnd.choice(places)
    value: Any = getattr(message, field.name)
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        # (string to string maps only): drop every entry, or add one, keyed as found or not
        entry: Any = field.message_type
        if rnd.random() < 0.3 or any(f.type != FieldDescriptor.TYPE_STRING for f in entry.fields):
            value.clear()
        else:
            known = [*pool.get(FieldDescriptor.TYPE_STRING, []), *strings]
            value[rnd.choice(known)] = rnd.choice([*known, "\n", "x" * 65])
    elif field.is_repeated:
        count = len(value)
        pick = rnd.randrange(4)
        if pick == 0 and count:
            del value[rnd.randrange(count)]
        elif pick == 1 and count >= 2:
            i, j = rnd.sample(range(count), 2)
            if field.message_type is not None:
                first, second = type(value[i])(), type(value[j])()
                first.CopyFrom(value[i])
                second.CopyFrom(value[j])
                value[i].CopyFrom(second)
                value[j].CopyFrom(first)
            else:
                value[i], value[j] = value[j], value[i]
        elif pick == 2 and count:
            if field.message_type is not None:
                value.add().CopyFrom(value[rnd.randrange(count)])
            else:
                value.append(value[rnd.randrange(count)])
        elif field.message_type is None:
            value.append(_new_value(field, pool, rnd, strings))
    elif field.message_type is not None:
        if message.HasField(field.name):
            message.ClearField(field.name)
        else:
            value.SetInParent()  # present but empty
    else:
        setattr(message, field.name, _new_value(field, pool, rnd, strings))
    return True


def mutate_wire(
    data: bytes, max_size: int, seed: int, message_type: type[Message] | None, strings: Sequence[str]
) -> bytes:
    """A custom mutator for ``form byte + message`` (``message_type`` None: bytes only)."""
    rnd = random.Random(seed)
    if len(data) < 2 or message_type is None or rnd.random() < 0.5:
        return bytes(atheris.Mutate(data, max_size))
    try:
        request = message_type.FromString(data[1:])
        for _ in range(rnd.choice((1, 1, 1, 2, 3))):
            if not mutate_message(request, rnd, strings):
                return bytes(atheris.Mutate(data, max_size))
        out = data[:1] + request.SerializeToString()
    except (DecodeError, ValueError, TypeError):  # a value the field cannot take: mutate the bytes
        return bytes(atheris.Mutate(data, max_size))
    return out if len(out) <= max_size else bytes(atheris.Mutate(data, max_size))
