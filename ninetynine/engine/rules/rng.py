"""Portable, seedable random numbers: PCG32 (XSH-RR 64/32) as published by M. E. O'Neill.

Other teams must be able to re-run a deal from the revealed seed in any language, so the
algorithm is written out here exactly (and in docs/engine-api.md) instead of using
Python's ``random``:

* state and increment are unsigned 64-bit integers; all arithmetic is modulo 2**64.
* ``seed(initstate, initseq)``: ``inc = (initseq << 1) | 1``; ``state = 0``; step;
  ``state += initstate``; step.
  The engine always uses ``initseq = 54`` and ``initstate = seed``.
* step: ``state = state * 6364136223846793005 + inc``.
* next32: ``old = state``; step; ``x = ((old >> 18) ^ old) >> 27`` (low 32 bits); ``rot = old >> 59``;
  output ``(x >> rot) | (x << (32 - rot))`` in 32 bits.
* below(n), unbiased: ``threshold = (2**32 - n) % n``; draw ``r = next32()`` until ``r >= threshold``;
  return ``r % n``.
* shuffle (Fisher-Yates): for ``i`` from ``len-1`` down to ``1``: ``j = below(i + 1)``;
  swap items ``i`` and ``j``.

With seed 42 the first outputs are 0xa15c02b7, 0x7b47f409, 0xba1d3330 (the reference
``pcg32-demo`` vector), which the tests check.

The generator is a value: every function takes the state and returns the new one, so
the whole RNG lives inside the game state and nothing is hidden in module globals.
"""

from __future__ import annotations

import hashlib
from collections.abc import MutableSequence
from dataclasses import dataclass
from typing import TypeVar

MASK64 = (1 << 64) - 1
MASK32 = (1 << 32) - 1
MULTIPLIER = 6364136223846793005
STREAM = 54

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class RngState:
    """The full PCG32 state: 64-bit ``state`` and odd 64-bit ``inc``."""

    state: int
    inc: int


def seed_rng(seed: int, stream: int = STREAM) -> RngState:
    """Seed PCG32 exactly as ``pcg32_srandom_r(seed, stream)`` does."""
    inc = ((stream << 1) | 1) & MASK64
    state = (0 * MULTIPLIER + inc) & MASK64
    state = (state + (seed & MASK64)) & MASK64
    state = (state * MULTIPLIER + inc) & MASK64
    return RngState(state, inc)


class Rng:
    """A mutable cursor over an :class:`RngState`, used inside one apply and then frozen back."""

    __slots__ = ("_inc", "_state")

    def __init__(self, start: RngState) -> None:
        self._state = start.state
        self._inc = start.inc

    def freeze(self) -> RngState:
        return RngState(self._state, self._inc)

    def next32(self) -> int:
        old = self._state
        self._state = (old * MULTIPLIER + self._inc) & MASK64
        xorshifted = (((old >> 18) ^ old) >> 27) & MASK32
        rot = old >> 59
        return ((xorshifted >> rot) | (xorshifted << ((-rot) & 31))) & MASK32

    def below(self, bound: int) -> int:
        """A uniform integer in ``[0, bound)`` without modulo bias."""
        if bound <= 0 or bound > MASK32:
            raise ValueError(f"bound out of range: {bound}")
        threshold = ((1 << 32) - bound) % bound
        while True:
            r = self.next32()
            if r >= threshold:
                return r % bound

    def shuffle(self, items: MutableSequence[T]) -> None:
        """Fisher-Yates, from the last index down, in place."""
        for i in range(len(items) - 1, 0, -1):
            j = self.below(i + 1)
            items[i], items[j] = items[j], items[i]


def seed_commitment(seed: int) -> str:
    """SHA-256 (hex) of the seed as 8 big-endian bytes: published at setup, checked after the reveal."""
    return hashlib.sha256((seed & MASK64).to_bytes(8, "big")).hexdigest()
