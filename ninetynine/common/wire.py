"""Protobuf wire-format pieces, for messages assembled from bytes that are already serialized.

Concatenating encoded fields is a valid encoding of the message that has them, so a sub-message
held as bytes (a stored event, a cached view, a pre-encoded history) can be put into its parent
without a parse and a re-serialization.
"""

from __future__ import annotations

from collections.abc import Iterator

__all__ = [
    "first_payload",
    "first_varint",
    "length_delimited",
    "read_varint",
    "sole_payload",
    "varint",
]

# The one-byte varints: field keys and short lengths, several per fanned-out message.
_ONE_BYTE = tuple(bytes((value,)) for value in range(0x80))


def varint(value: int) -> bytes:
    """``value`` (>= 0) as a base-128 varint."""
    if value < 0x80:
        return _ONE_BYTE[value]
    if value < 0x4000:
        return bytes(((value & 0x7F) | 0x80, value >> 7))
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """The varint at ``data[pos:]`` and the position after it."""
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def length_delimited(number: int, payload: bytes) -> bytes:
    """Field ``number`` (a sub-message, bytes or string) holding ``payload``, as on the wire."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def _fields(data: bytes) -> Iterator[tuple[int, int, int, int, int]]:
    """Each top-level field of a serialized message: number, wire type, start, value start, end.

    For a length-delimited field the value starts after its length; for the others at the key.
    """
    pos, size = 0, len(data)
    while pos < size:
        start = pos
        key, pos = read_varint(data, pos)
        wire = key & 7
        if wire == 0:
            value_start = pos
            _, pos = read_varint(data, pos)
        elif wire == 2:
            length, value_start = read_varint(data, pos)
            pos = value_start + length
        elif wire == 1:
            value_start, pos = pos, pos + 8
        elif wire == 5:
            value_start, pos = pos, pos + 4
        else:  # groups (wire types 3 and 4) are not used by our messages
            raise ValueError(f"unexpected wire type {wire}")
        if pos > size:
            raise ValueError("truncated message")
        yield key >> 3, wire, start, value_start, pos


def first_varint(data: bytes, number: int) -> int:
    """The value of varint field ``number`` (0 when absent), read no further than it.

    For a message protobuf serialized, where a singular field occurs once and known fields come
    in number order: the walk stops at the first field numbered ``number`` or above, skipping the
    fields before it by their wire type, without parsing them.
    """
    for field, wire, _, value_start, _ in _fields(data):
        if field >= number:
            return read_varint(data, value_start)[0] if field == number and wire == 0 else 0
    return 0


def first_payload(data: bytes, number: int) -> bytes | None:
    """The payload of length-delimited field ``number`` (``None`` when absent), read no further than it.

    For a message protobuf serialized, where a singular field occurs once and known fields come
    in number order: the walk stops at the first field numbered ``number`` or above, so what
    follows (a room document's growing list of moves, say) is never walked.
    """
    for field, wire, _, value_start, end in _fields(data):
        if field >= number:
            return data[value_start:end] if field == number and wire == 2 else None
    return None


def sole_payload(data: bytes, number: int) -> bytes | None:
    """The payload of length-delimited field ``number`` when it occurs exactly once, else ``None``.

    A field that occurs twice is parsed as the merge of both, which no single slice stands for.
    """
    found: bytes | None = None
    for field, wire, _, value_start, end in _fields(data):
        if field == number:
            if found is not None or wire != 2:
                return None
            found = data[value_start:end]
    return found
