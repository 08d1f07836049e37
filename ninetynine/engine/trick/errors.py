"""Refusals of the trick-taking game.

Reasons the adding game already names (NOT_YOUR_TURN, CARD_NOT_IN_HAND, ...) are reused
from :mod:`ninetynine.engine.rules.errors` with their texts; only the refusals this game
adds have a text here, in Korean (default) and English.
"""

from __future__ import annotations

from enum import StrEnum

from ..rules.errors import Lang, Reason
from ..rules.errors import message as rules_message


class TrickReason(StrEnum):
    WRONG_PHASE = "WRONG_PHASE"
    MUST_FOLLOW_SUIT = "MUST_FOLLOW_SUIT"
    BID_CARD_COUNT = "BID_CARD_COUNT"
    BID_ALREADY_PLACED = "BID_ALREADY_PLACED"
    INVALID_PLAYER_COUNT = "INVALID_PLAYER_COUNT"
    INVALID_ACTION = "INVALID_ACTION"
    UNKNOWN_GAME = "UNKNOWN_GAME"


TEXTS: dict[TrickReason, tuple[str, str]] = {
    TrickReason.WRONG_PHASE: (
        "지금은 {action}을(를) 할 수 없어요 (지금 단계: {phase})",
        "You cannot {action} now (phase: {phase})",
    ),
    TrickReason.MUST_FOLLOW_SUIT: (
        "{suit} 무늬가 있으면 그 무늬를 내야 해요",
        "You must follow suit ({suit}) while you hold one",
    ),
    TrickReason.BID_CARD_COUNT: (
        "입찰 카드는 서로 다른 3장을 골라야 해요 (지금 {count}장)",
        "Choose exactly 3 different bid cards (got {count})",
    ),
    TrickReason.BID_ALREADY_PLACED: ("이미 입찰 카드를 내려놓았어요", "You have already laid your bid cards"),
    TrickReason.INVALID_PLAYER_COUNT: (
        "이 게임은 정확히 3명이 해요 (지금 {count}명)",
        "This game is for exactly 3 players (got {count})",
    ),
    TrickReason.INVALID_ACTION: (
        "이 게임에서 할 수 없는 동작이에요 ({detail})",
        "That is not an action of this game ({detail})",
    ),
    TrickReason.UNKNOWN_GAME: ("알 수 없는 게임이에요: {game}", "Unknown game: {game}"),
}


class _Blank(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return "?"


def message(reason: Reason | TrickReason, meta: dict[str, str], lang: Lang = "ko") -> str:
    if isinstance(reason, Reason):
        return rules_message(reason, meta, lang)
    ko, en = TEXTS[reason]
    return (en if lang == "en" else ko).format_map(_Blank(meta))


class TrickError(Exception):
    """A refused request; ``meta`` holds string facts about it. The state is untouched."""

    def __init__(self, reason: Reason | TrickReason, **meta: object) -> None:
        self.reason = reason
        self.meta: dict[str, str] = {k: str(v) for k, v in meta.items()}
        super().__init__(f"{reason}: {message(reason, self.meta, 'en')}")

    def message(self, lang: Lang = "ko") -> str:
        return message(self.reason, self.meta, lang)
