"""The player-facing texts of the services' own refusals: one table, reason → (Korean, English).

Every reason a service of ours decides has its texts here, once, for each service that sends it or
passes it on: the request that does not parse (every service), the session's room refusals, the
gateway's refusals of frames and connections. Rule reasons keep theirs with the rules
(:mod:`ninetynine.engine.rules.errors`); the status code a reason goes out with is the sending
service's (:data:`ninetynine.session.errors.STATUS`). Korean is the default language.

Texts are ``str.format`` templates over the refusal's metadata (``{limit}``); one whose keys the
metadata lacks is given as it is. docs/client-protocol.md §5 lists the reasons a client can get.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from ninetynine.common.errors import Lang

__all__ = ["SERVICE_TEXTS", "service_text", "service_texts"]

SERVICE_TEXTS: Final[Mapping[str, tuple[str, str]]] = {
    # Every service: the request's bytes do not parse (ninetynine.common.lenient), and the text of
    # a failure that is no refusal (a status without ErrorInfo).
    "MALFORMED_REQUEST": ("요청을 해석할 수 없어요", "The request could not be parsed"),
    "INTERNAL": (
        "서버에 문제가 생겼어요. 잠시 후 다시 시도해 주세요",
        "The server failed unexpectedly; try again shortly",
    ),
    # The session's rooms, seats and plays.
    "ROOM_NOT_FOUND": ("방을 찾을 수 없어요", "No such room"),
    "ROOM_FULL": ("빈 자리가 없어요", "The room is full"),
    "GAME_ALREADY_STARTED": ("이미 시작한 게임이에요", "The game has already started"),
    "GAME_NOT_STARTED": ("아직 게임이 시작되지 않았어요", "The game has not started"),
    "GAME_NOT_FINISHED": ("아직 끝나지 않은 게임이에요", "The game is not over yet"),
    "NOT_ENOUGH_PLAYERS": (
        "2명 이상 앉아야 시작할 수 있어요",
        "At least two seated players are needed to start",
    ),
    "NOT_HOST": ("방장만 할 수 있어요", "Only the host can do that"),
    "SPECTATOR_CANNOT_ACT": ("관전 중에는 카드를 낼 수 없어요", "Spectators cannot play"),
    "INVALID_TOKEN": ("입장 정보가 올바르지 않아요", "Invalid or unknown token"),
    # The caller is not a service of ours (the gateway): no or a wrong service credential.
    "SERVICE_CREDENTIAL_REQUIRED": (
        "서비스 인증 정보가 필요해요",
        "This service accepts calls only with the service credential",
    ),
    "INVALID_SERVICE_CREDENTIAL": (
        "서비스 인증 정보가 올바르지 않아요",
        "The service credential is not valid",
    ),
    "INVALID_NAME": ("이름은 1~24자로 정해 주세요", "Names must be 1 to 24 characters"),
    "INVALID_SEATS": ("자리 수는 2~10이에요", "A room has 2 to 10 seats"),
    "SEATS_OUTSIDE_RULES": (
        "{rules} 규칙은 {minPlayers}~{maxPlayers}명이 해요 (자리 {maxSeats}개)",
        "{rules} is for {minPlayers} to {maxPlayers} players, not {maxSeats} seats",
    ),
    "INVALID_ACTION": ("낼 카드를 골라 주세요", "The play needs a card id"),
    "INVALID_CLIENT_SEQ": ("client_seq는 1 이상이어야 해요", "client_seq must be 1 or more"),
    "INVALID_PAGE_TOKEN": ("페이지 정보가 올바르지 않아요", "Invalid page token"),
    "INVALID_PHASE": ("방 상태 값이 올바르지 않아요", "Unknown room phase"),
    "STALE": ("이미 처리한 요청보다 오래된 요청이에요", "This client_seq is older than the last one applied"),
    "VIEW_OUTDATED": (
        "화면이 바뀌었어요. 새 화면을 보고 다시 골라 주세요",
        "The game moved on since your view; choose again from the new view",
    ),
    "TOO_MANY_SPECTATORS": ("관전자가 너무 많아요", "Too many spectators"),
    "INVALID_SUBSCRIPTION": ("구독 번호는 1 이상이어야 해요", "A subscription id must be 1 or more"),
    "TOO_MANY_SUBSCRIPTIONS": ("한 연결에 구독이 너무 많아요", "Too many subscriptions on one stream"),
    # Streams of calls: the session's PlayMany, the engine's ApplyMany.
    "INVALID_CALL_ID": ("요청 번호는 1 이상이어야 해요", "A call_id must be 1 or more"),
    "MISSING_PLAY": ("낼 카드 요청이 비어 있어요", "The request carries no play"),
    "MISSING_CALL": ("요청이 비어 있어요", "The request carries no call"),
    "ROOM_BUSY": ("잠시 후 다시 시도해 주세요", "The room is busy; try again"),
    "ENGINE_UNAVAILABLE": (
        "게임 엔진에 연결할 수 없어요. 잠시 후 다시 시도해 주세요",
        "The game engine is unavailable; try again shortly",
    ),
    "STORE_UNAVAILABLE": (
        "저장소에 연결할 수 없어요. 잠시 후 다시 시도해 주세요",
        "Room storage is unavailable; try again shortly",
    ),
    # The gateway's client frames and connections.
    "MALFORMED_MESSAGE": ("메시지 형식이 올바르지 않아요", "The message is not valid"),
    "UNKNOWN_TYPE": ("알 수 없는 메시지 종류예요", "Unknown message type"),
    "MESSAGE_TOO_LARGE": ("메시지가 너무 커요 (최대 {limit}바이트)", "Message too large (max {limit} bytes)"),
    "RATE_LIMITED": ("메시지를 너무 빨리 보내고 있어요", "Too many messages; slow down"),
    "NOT_IN_ROOM": ("먼저 방에 들어가 주세요", "Join or create a room first"),
    "ALREADY_IN_ROOM": ("이미 방에 들어와 있어요", "This connection is already in a room"),
    "UNAVAILABLE": ("서버가 잠시 바빠요. 곧 다시 시도해 주세요", "The service is briefly unavailable; retry"),
    "TOO_MANY_CONNECTIONS": (
        "이 주소에서 연결이 너무 많아요 (한도 {limit}). 잠시 후 다시 연결해 주세요",
        "Too many connections from your address (limit {limit}); reconnect later",
    ),
    "TOO_MANY_ROOMS": (
        "방을 너무 많이 만들었어요 (한도 {limit}). 잠시 후 다시 해 주세요",
        "Too many rooms created from your address (limit {limit}); try again later",
    ),
    "TOO_MANY_AUTH_FAILURES": (
        "입장 정보가 너무 많이 틀렸어요 (한도 {limit}). 잠시 후 다시 해 주세요",
        "Too many invalid seat tokens (limit {limit}); try again later",
    ),
}


def service_text(reason: str, lang: Lang, metadata: Mapping[str, str] | None = None) -> str:
    """The text of service ``reason`` in ``lang`` with ``metadata`` filled in (KeyError: no such reason)."""
    ko, en = SERVICE_TEXTS[reason]
    text = en if lang == "en" else ko
    try:
        return text.format(**(metadata or {}))
    except (KeyError, IndexError):
        return text


def service_texts(reason: str, metadata: Mapping[str, str]) -> tuple[str, str] | None:
    """Both texts of service ``reason`` (a :data:`~ninetynine.common.errors.ReasonTexts`); None for others."""
    if reason not in SERVICE_TEXTS:
        return None
    return service_text(reason, "ko", metadata), service_text(reason, "en", metadata)
