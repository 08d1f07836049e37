"""Refusal reasons: one stable UPPER_SNAKE code each, with the spec's Korean text and an English one.

This table is the single source for every player-facing refusal; the gRPC layer maps the
codes onto status codes (see ``ninetynine.engine.errors``) and docs/engine-api.md lists them.
Texts are ``str.format`` templates over the refusal's metadata.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

Lang = Literal["ko", "en"]


class Reason(StrEnum):
    # Rule refusals (the action is well formed but this state does not allow it).
    OVER_99 = "OVER_99"
    BELOW_ZERO = "BELOW_ZERO"
    NOT_YOUR_TURN = "NOT_YOUR_TURN"
    CARD_NOT_IN_HAND = "CARD_NOT_IN_HAND"
    GAME_FINISHED = "GAME_FINISHED"
    CARD_TOO_EARLY = "CARD_TOO_EARLY"
    SAME_NUMBER_TWICE = "SAME_NUMBER_TWICE"
    CARD_NOT_PLAYABLE = "CARD_NOT_PLAYABLE"
    NOT_FIRST_OF_TWO = "NOT_FIRST_OF_TWO"
    DISCARD_NOT_ALLOWED = "DISCARD_NOT_ALLOWED"
    NOT_A_PAIR = "NOT_A_PAIR"
    ALREADY_PASSED = "ALREADY_PASSED"
    # Malformed choices for the card being played.
    SIGN_REQUIRED = "SIGN_REQUIRED"
    ACE_VALUE_REQUIRED = "ACE_VALUE_REQUIRED"
    ACE_VALUE_INVALID = "ACE_VALUE_INVALID"
    JOKER_VALUE_REQUIRED = "JOKER_VALUE_REQUIRED"
    JOKER_OUT_OF_RANGE = "JOKER_OUT_OF_RANGE"
    DIR_REQUIRED = "DIR_REQUIRED"
    DIR_NOT_ALLOWED = "DIR_NOT_ALLOWED"
    CHOICE_NOT_ALLOWED = "CHOICE_NOT_ALLOWED"
    # Requests that do not describe a game.
    UNKNOWN_PLAYER = "UNKNOWN_PLAYER"
    STALE_STATE = "STALE_STATE"
    INVALID_OPTION = "INVALID_OPTION"
    INVALID_PLAYER_COUNT = "INVALID_PLAYER_COUNT"
    INVALID_PLAYER_ID = "INVALID_PLAYER_ID"
    INVALID_STATE = "INVALID_STATE"
    REPLAY_UNSUPPORTED = "REPLAY_UNSUPPORTED"
    UNKNOWN_RULES = "UNKNOWN_RULES"
    INVALID_OVERRIDE = "INVALID_OVERRIDE"


TEXTS: dict[Reason, tuple[str, str]] = {
    Reason.OVER_99: ("99를 넘어서 낼 수 없어요", "That card would take the total over 99"),
    Reason.BELOW_ZERO: ("0보다 작아져서 뺄 수 없어요", "Subtracting would take the total below 0"),
    Reason.NOT_YOUR_TURN: ("지금은 내 차례가 아니에요", "It is not your turn"),
    Reason.CARD_NOT_IN_HAND: ("손에 없는 카드예요", "That card is not in your hand"),
    Reason.GAME_FINISHED: ("이미 끝난 게임이에요", "The game is already over"),
    Reason.CARD_TOO_EARLY: (
        "{rank}은(는) 내 차례 {turns}번이 지나야 낼 수 있어요",
        "A {rank} cannot be played in your first {turns} turns",
    ),
    Reason.SAME_NUMBER_TWICE: (
        "방금 나온 {rank}와(과) 같은 숫자는 이어서 낼 수 없어요",
        "The same number ({rank}) cannot be played twice in a row",
    ),
    Reason.CARD_NOT_PLAYABLE: ("이 카드는 지금 낼 수 없어요", "This card cannot be played now"),
    Reason.NOT_FIRST_OF_TWO: (
        "두 장을 내야 할 때 이 카드는 첫 번째로 낼 수 없어요",
        "This card cannot be the first of the two cards you owe",
    ),
    Reason.DISCARD_NOT_ALLOWED: (
        "{rank} 카드 {count}장을 모았을 때만 버리고 새로 뽑을 수 있어요",
        "You can only discard when you hold {count} {rank} cards, all of them",
    ),
    Reason.NOT_A_PAIR: (
        "이 두 장({cardId}, {pairCardId})은 함께 낼 수 있는 짝이 아니에요",
        "These two cards ({cardId}, {pairCardId}) are not a pair that can be played together",
    ),
    Reason.ALREADY_PASSED: (
        "넘길 카드를 이미 골랐어요. 다른 사람을 기다려 주세요",
        "You have already chosen the card to pass; wait for the others",
    ),
    Reason.SIGN_REQUIRED: ("더하기와 빼기 중 하나를 골라 주세요", "Choose plus or minus"),
    Reason.ACE_VALUE_REQUIRED: (
        "A는 1과 {ace_high} 중 하나를 골라 주세요",
        "Choose 1 or {ace_high} for the ace",
    ),
    Reason.ACE_VALUE_INVALID: (
        "A는 1과 {ace_high} 중 하나를 골라 주세요",
        "An ace counts 1 or {ace_high}",
    ),
    Reason.JOKER_VALUE_REQUIRED: (
        "조커는 {min}부터 {max} 사이 숫자를 골라 주세요",
        "Choose a number from {min} to {max} for the joker",
    ),
    Reason.JOKER_OUT_OF_RANGE: (
        "조커는 {min}부터 {max} 사이 숫자만 고를 수 있어요",
        "The joker can only be set to a number from {min} to {max}",
    ),
    Reason.DIR_REQUIRED: (
        "0 카드는 방향을 그대로 둘지 바꿀지 골라 주세요",
        "Choose whether the 0 card keeps or reverses the direction",
    ),
    Reason.DIR_NOT_ALLOWED: (
        "방향은 0 카드를 낼 때만 고를 수 있어요",
        "A direction can only be chosen with a 0 card",
    ),
    Reason.CHOICE_NOT_ALLOWED: (
        "이 카드에는 {field}을(를) 고를 수 없어요",
        "This card takes no {field}",
    ),
    Reason.UNKNOWN_PLAYER: ("이 게임의 플레이어가 아니에요", "You are not a player in this game"),
    Reason.STALE_STATE: (
        "게임 상태가 바뀌었어요. 다시 시도해 주세요",
        "The game moved on; refresh and try again",
    ),
    Reason.INVALID_OPTION: (
        "옵션 {option} 값 '{value}'은(는) 쓸 수 없어요",
        "Option {option} cannot be '{value}'",
    ),
    Reason.INVALID_PLAYER_COUNT: (
        "인원은 2명부터 10명까지예요 (지금 {count}명)",
        "A game needs 2 to 10 players (got {count})",
    ),
    Reason.INVALID_PLAYER_ID: (
        "플레이어 ID가 올바르지 않아요: {detail}",
        "Invalid player id: {detail}",
    ),
    Reason.INVALID_STATE: ("게임 상태가 올바르지 않아요: {detail}", "Invalid game state: {detail}"),
    Reason.REPLAY_UNSUPPORTED: (
        "버전 1로 끝난 게임은 다시 볼 수 없어요",
        "Games finished under state version 1 cannot be replayed",
    ),
    Reason.UNKNOWN_RULES: ("'{rules}'라는 규칙은 없어요", "There is no rule set called '{rules}'"),
    Reason.INVALID_OVERRIDE: (
        "규칙 변경 {key}에 '{value}'은(는) 쓸 수 없어요",
        "House rule {key} cannot be '{value}'",
    ),
}


class _Blank(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return "?"


def message(reason: Reason, meta: dict[str, str], lang: Lang = "ko") -> str:
    ko, en = TEXTS[reason]
    return (en if lang == "en" else ko).format_map(_Blank(meta))


class RuleError(Exception):
    """A refused request. ``meta`` holds string facts about it (cardId, total, result...)."""

    def __init__(self, reason: Reason, **meta: object) -> None:
        self.reason = reason
        self.meta: dict[str, str] = {k: str(v) for k, v in meta.items()}
        super().__init__(f"{reason}: {message(reason, self.meta, 'en')}")

    def message(self, lang: Lang = "ko") -> str:
        return message(self.reason, self.meta, lang)
