"""Protobuf wire-format pieces, for messages assembled from bytes that are already serialized.

Concatenating encoded fields is a valid encoding of the message that has them, so a sub-message
held as bytes (a stored event, a cached view, a pre-encoded history) can be put into its parent
without a parse and a re-serialization.
"""

from __future__ import annotations

__all__ = ["length_delimited", "read_varint", "varint", "varint_field"]


def varint(value: int) -> bytes:
    """``value`` (>= 0) as a base-128 varint."""
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


def varint_field(data: bytes, number: int) -> int:
    """The value of varint field ``number`` of a serialized message (0 when absent; the last wins).

    Walks the top-level fields and skips the others by their wire type, without parsing them.
    """
    pos, size, found = 0, len(data), 0
    while pos < size:
        key, pos = read_varint(data, pos)
        wire = key & 7
        if wire == 0:
            value, pos = read_varint(data, pos)
            if key >> 3 == number:
                found = value
        elif wire == 2:
            length, pos = read_varint(data, pos)
            pos += length
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        else:  # groups (wire types 3 and 4) are not used by our messages
            raise ValueError(f"unexpected wire type {wire}")
    return found
