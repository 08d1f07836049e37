"""Fuzz target with a planted bug: proof that a harness run fails when its target breaks its contract.

``parse_move`` stands for a parser of untrusted text with one refusal (``ValueError``), like the
real targets; it crashes (``IndexError``) on input starting with ``99!`` — three checks, each
a branch of its own, so libFuzzer's coverage feedback reaches it within a few thousand runs from an empty
corpus, where blind random bytes would need about sixteen million. ``tests/fuzz/test_atheris.py``
runs it with the same runner and flags as the real harnesses and expects a non-zero exit and the
crashing input written out.
"""

from __future__ import annotations

import contextlib
from typing import Final

import atheris


@atheris.instrument_func
def parse_move(data: bytes) -> int:
    """A total from 0 to 99 written as digits; ValueError is the documented refusal."""
    if data[:1] == b"9" and data[1:2] == b"9" and data[2:3] == b"!":  # each test a branch of its own
        return data[99]  # the planted bug: no such byte
    text = data.decode("ascii", "replace")
    if not text.isdigit() or int(text) > 99:
        raise ValueError("not a total")
    return int(text)


def TestOneInput(data: bytes) -> None:
    with contextlib.suppress(ValueError):
        parse_move(data)


def seeds() -> list[bytes]:
    return [b"42"]


ARGS: Final[list[str]] = []
DICTIONARY: Final[list[bytes]] = []
