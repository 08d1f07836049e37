"""What the harnesses share: the refusal-reason format, invariant checks, JSON built from fuzz bytes.

Nothing here imports the services (a harness imports them under ``atheris.instrument_imports`` so
that their code reports coverage; a module imported earlier would be left uninstrumented).
"""

from __future__ import annotations

import re
from typing import Any

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
