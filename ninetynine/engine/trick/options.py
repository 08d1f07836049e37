"""Options of the trick-taking game: every key, its choices and its default.

Keys are camelCase where options cross a boundary, as for the adding game. The first
value listed in :data:`CHOICES` is not necessarily the default; the dataclass says it.
See docs/games/trick-taking.md for what each option reads in the source.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from ..rules.errors import Reason
from .errors import TrickError

NO_TRUMPS = "none"
TRUMPS_BY_CONTRACTS = "byContracts"

CHOICES: dict[str, tuple[str, tuple[object, ...]]] = {
    # "none": no trump suit in any deal; "byContracts": Parlett's rotation (first deal at
    # no trump, then the suit whose bid value equals the contracts made in the last deal).
    "trumps": ("trumps", (NO_TRUMPS, TRUMPS_BY_CONTRACTS)),
    "target": ("target", (100, 50, 150, 200)),
    # Several players at or over the target after one deal: the highest score wins and
    # equal highest scores "share" the win, or "playOn" deals until one leads alone.
    "ties": ("ties", ("share", "playOn")),
    # A cap on deals: declarers who keep failing (-60) can keep every score under the
    # target forever, and a match must end. At the cap the highest score wins.
    "max_deals": ("maxDeals", (30, 9, 18, 60)),
    "bid_seconds": ("bidSeconds", (30, 45, 60, 90, 120)),
    "turn_seconds": ("turnSeconds", (10, 15, 20, 30, 60)),
}
KEY_TO_ATTR = {key: attr for attr, (key, _) in CHOICES.items()}


@dataclass(frozen=True, slots=True)
class TrickOptions:
    trumps: str = NO_TRUMPS
    target: int = 100
    ties: str = "share"
    max_deals: int = 30
    bid_seconds: int = 60
    turn_seconds: int = 30

    def __post_init__(self) -> None:
        for attr, (key, allowed) in CHOICES.items():
            value = getattr(self, attr)
            if not any(type(value) is type(a) and value == a for a in allowed):
                raise TrickError(Reason.INVALID_OPTION, option=key, value=value)

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any]) -> TrickOptions:
        """Build from camelCase keys; numeric strings are parsed (``{"target": "150"}``)."""
        kwargs: dict[str, object] = {}
        for key, value in raw.items():
            attr = KEY_TO_ATTR.get(key)
            if attr is None:
                raise TrickError(Reason.INVALID_OPTION, option=key, value=value)
            if isinstance(value, str) and value.strip().isdigit():
                value = int(value.strip())
            kwargs[attr] = value
        return cls(**kwargs)  # type: ignore[arg-type]

    def to_mapping(self) -> dict[str, object]:
        return {CHOICES[f.name][0]: getattr(self, f.name) for f in fields(self)}
