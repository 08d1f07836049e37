"""Game options (spec §2): every key, its choices, its default, and how ``auto`` resolves.

Options are kept as chosen (``auto`` stays ``auto``) so a state shows what the table asked
for; the ``resolve_*`` helpers turn them into numbers for a given player count.
Keys are the spec's camelCase names wherever options cross a boundary (CLI, JSON, docs).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from .errors import Reason, RuleError

KR = "kr-product"
CLASSIC = "classic"
MIN_PLAYERS = 2
MAX_PLAYERS = 10

# option attribute -> (spec key, allowed values); the first value listed is not the default.
CHOICES: dict[str, tuple[str, tuple[object, ...]]] = {
    "mode": ("mode", (KR, CLASSIC)),
    "hand_size": ("handSize", ("auto", 3, 4, 5)),
    "start_total": ("startTotal", ("auto", "zero")),
    "refill": ("refill", (True, False)),
    "lives": ("lives", ("auto", 0, 1, 2, 3, 5)),
    "on_the_board": ("onTheBoard", (True, False)),
    "after_elimination": ("afterElimination", ("continue", "reset")),
    "floor_at_zero": ("floorAtZero", ("forbid", "clamp")),
    "special_counts": ("specialCounts", (2, 3, 4, 5, 6)),
    "joker_range": ("jokerRange", ("60-99", "0-99")),
    "ace_high": ("aceHigh", (10, 11)),
    "deck_count": ("deckCount", ("auto", 1, 2)),
    "turn_seconds": ("turnSeconds", (10, 15, 20, 30)),
}
KEY_TO_ATTR = {key: attr for attr, (key, _) in CHOICES.items()}


@dataclass(frozen=True, slots=True)
class Options:
    """The §2 table with its defaults."""

    mode: str = KR
    hand_size: int | str = "auto"
    start_total: str = "auto"
    refill: bool = True
    lives: int | str = "auto"
    on_the_board: bool = False
    after_elimination: str = "continue"
    floor_at_zero: str = "forbid"
    special_counts: int = 4
    joker_range: str = "60-99"
    ace_high: int = 11
    deck_count: int | str = "auto"
    turn_seconds: int = 15

    def __post_init__(self) -> None:
        for attr, (key, allowed) in CHOICES.items():
            value = getattr(self, attr)
            # bool is an int in Python: keep True from passing as 1 and 1 as True.
            if not any(type(value) is type(a) and value == a for a in allowed):
                raise RuleError(Reason.INVALID_OPTION, option=key, value=value)

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any]) -> Options:
        """Build from spec keys (``{"handSize": "4", "refill": "off"}``); strings are parsed."""
        kwargs: dict[str, object] = {}
        for key, value in raw.items():
            attr = KEY_TO_ATTR.get(key)
            if attr is None:
                raise RuleError(Reason.INVALID_OPTION, option=key, value=value)
            kwargs[attr] = _parse(attr, value)
        return cls(**kwargs)  # type: ignore[arg-type]

    def to_mapping(self) -> dict[str, object]:
        """Spec keys with JSON-friendly values (booleans as on/off like the spec writes them)."""
        out: dict[str, object] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out[CHOICES[f.name][0]] = ("on" if value else "off") if isinstance(value, bool) else value
        return out

    def with_changes(self, **changes: object) -> Options:
        return replace(self, **changes)  # type: ignore[arg-type]

    # -- resolution of ``auto`` ------------------------------------------------------------
    @property
    def is_kr(self) -> bool:
        return self.mode == KR

    def resolved_hand_size(self) -> int:
        if self.hand_size == "auto":
            return 5 if self.is_kr else 3
        return int(self.hand_size)

    def resolved_lives(self) -> int:
        if self.lives == "auto":
            return 0 if self.is_kr else 3
        return int(self.lives)

    def resolved_deck_count(self, players: int) -> int:
        if self.is_kr:
            return 1
        if self.deck_count == "auto":
            return 2 if players >= 7 else 1
        return int(self.deck_count)

    def start_total_for(self, players: int) -> int:
        """Start total for ``players`` still in the game (setup, new rounds, reset)."""
        if not self.is_kr or self.start_total == "zero":
            return 0
        return {2: 40, 3: 20}.get(players, 0)

    def joker_bounds(self) -> tuple[int, int]:
        lo, hi = self.joker_range.split("-")
        return int(lo), int(hi)


def _parse(attr: str, value: object) -> object:
    key, allowed = CHOICES[attr]
    if isinstance(value, str):
        text = value.strip().lower() if attr != "mode" else value.strip()
        if allowed[0] is True or allowed[0] is False:
            if text in ("on", "true", "1", "yes"):
                return True
            if text in ("off", "false", "0", "no"):
                return False
            raise RuleError(Reason.INVALID_OPTION, option=key, value=value)
        if text.isdigit() and any(isinstance(a, int) and not isinstance(a, bool) for a in allowed):
            return int(text)
        return text
    return value


def check_player_count(count: int) -> None:
    if not MIN_PLAYERS <= count <= MAX_PLAYERS:
        raise RuleError(Reason.INVALID_PLAYER_COUNT, count=count)
