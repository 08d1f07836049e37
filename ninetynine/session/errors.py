"""The session service's own refusals: one table of reason → gRPC code → Korean / English text.

Rule refusals come from the engine unchanged (domain ``engine.ninetynine``); these are the
room-level ones (domain ``session.ninetynine``).
"""

from __future__ import annotations

import grpc

from ninetynine.common.errors import ServiceError

DOMAIN = "session.ninetynine"

S = grpc.StatusCode
REASONS: dict[str, tuple[grpc.StatusCode, str, str]] = {
    "ROOM_NOT_FOUND": (S.NOT_FOUND, "방을 찾을 수 없어요", "No such room"),
    "ROOM_FULL": (S.FAILED_PRECONDITION, "빈 자리가 없어요", "The room is full"),
    "GAME_ALREADY_STARTED": (S.FAILED_PRECONDITION, "이미 시작한 게임이에요", "The game has already started"),
    "GAME_NOT_STARTED": (S.FAILED_PRECONDITION, "아직 게임이 시작되지 않았어요", "The game has not started"),
    "GAME_NOT_FINISHED": (S.FAILED_PRECONDITION, "아직 끝나지 않은 게임이에요", "The game is not over yet"),
    "NOT_ENOUGH_PLAYERS": (
        S.FAILED_PRECONDITION,
        "2명 이상 앉아야 시작할 수 있어요",
        "At least two seated players are needed to start",
    ),
    "NOT_HOST": (S.PERMISSION_DENIED, "방장만 할 수 있어요", "Only the host can do that"),
    "SPECTATOR_CANNOT_ACT": (S.PERMISSION_DENIED, "관전자는 카드를 낼 수 없어요", "Spectators cannot play"),
    "INVALID_TOKEN": (S.UNAUTHENTICATED, "입장 정보가 올바르지 않아요", "Invalid or unknown token"),
    # The caller is not a service of ours (the gateway): no or a wrong service credential.
    "SERVICE_CREDENTIAL_REQUIRED": (
        S.UNAUTHENTICATED,
        "서비스 인증 정보가 필요해요",
        "This service accepts calls only with the service credential",
    ),
    "INVALID_SERVICE_CREDENTIAL": (
        S.UNAUTHENTICATED,
        "서비스 인증 정보가 올바르지 않아요",
        "The service credential is not valid",
    ),
    "INVALID_NAME": (S.INVALID_ARGUMENT, "이름은 1~24자로 정해 주세요", "Names must be 1 to 24 characters"),
    "INVALID_SEATS": (S.INVALID_ARGUMENT, "자리 수는 2~10이에요", "A room has 2 to 10 seats"),
    "INVALID_ACTION": (S.INVALID_ARGUMENT, "낼 카드를 골라 주세요", "The play needs a card id"),
    "INVALID_CLIENT_SEQ": (
        S.INVALID_ARGUMENT,
        "client_seq는 1 이상이어야 해요",
        "client_seq must be 1 or more",
    ),
    "INVALID_PAGE_TOKEN": (S.INVALID_ARGUMENT, "페이지 정보가 올바르지 않아요", "Invalid page token"),
    "INVALID_PHASE": (S.INVALID_ARGUMENT, "방 상태 값이 올바르지 않아요", "Unknown room phase"),
    "STALE": (
        S.ABORTED,
        "이미 처리한 요청보다 오래된 요청이에요",
        "This client_seq is older than the last one applied",
    ),
    "VIEW_OUTDATED": (
        S.ABORTED,
        "화면이 바뀌었어요. 새 화면을 보고 다시 골라 주세요",
        "The game moved on since your view; choose again from the new view",
    ),
    "TOO_MANY_SPECTATORS": (S.RESOURCE_EXHAUSTED, "관전자가 너무 많아요", "Too many spectators"),
    "INVALID_SUBSCRIPTION": (
        S.INVALID_ARGUMENT,
        "구독 번호는 1 이상이어야 해요",
        "A subscription id must be 1 or more",
    ),
    "TOO_MANY_SUBSCRIPTIONS": (
        S.RESOURCE_EXHAUSTED,
        "한 연결에 구독이 너무 많아요",
        "Too many subscriptions on one stream",
    ),
    "INVALID_CALL_ID": (
        S.INVALID_ARGUMENT,
        "요청 번호는 1 이상이어야 해요",
        "A call_id must be 1 or more",
    ),
    "MISSING_PLAY": (S.INVALID_ARGUMENT, "낼 카드 요청이 비어 있어요", "The request carries no play"),
    "ROOM_BUSY": (S.ABORTED, "잠시 후 다시 시도해 주세요", "The room is busy; try again"),
    "ENGINE_UNAVAILABLE": (
        S.UNAVAILABLE,
        "게임 엔진에 연결할 수 없어요. 잠시 후 다시 시도해 주세요",
        "The game engine is unavailable; try again shortly",
    ),
    "STORE_UNAVAILABLE": (
        S.UNAVAILABLE,
        "저장소에 연결할 수 없어요. 잠시 후 다시 시도해 주세요",
        "Room storage is unavailable; try again shortly",
    ),
}


def session_error(reason: str, **metadata: object) -> ServiceError:
    code, ko, en = REASONS[reason]
    return ServiceError(
        code,
        reason,
        DOMAIN,
        message_ko=ko,
        message_en=en,
        metadata={k: str(v) for k, v in metadata.items()},
    )
