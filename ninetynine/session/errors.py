"""The session service's own refusals: reason → gRPC status code, and building them.

Rule refusals come from the engine unchanged (domain ``engine.ninetynine``); these are the
room-level ones (domain ``session.ninetynine``). Their Korean and English texts are the services'
one table, :data:`ninetynine.common.reasons.SERVICE_TEXTS`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import grpc

from ninetynine.common.errors import ServiceError
from ninetynine.common.reasons import SERVICE_TEXTS, service_text

DOMAIN = "session.ninetynine"

S = grpc.StatusCode
STATUS: Final[Mapping[str, grpc.StatusCode]] = {
    "ROOM_NOT_FOUND": S.NOT_FOUND,
    "ROOM_FULL": S.FAILED_PRECONDITION,
    "GAME_ALREADY_STARTED": S.FAILED_PRECONDITION,
    "GAME_NOT_STARTED": S.FAILED_PRECONDITION,
    "GAME_NOT_FINISHED": S.FAILED_PRECONDITION,
    "NOT_ENOUGH_PLAYERS": S.FAILED_PRECONDITION,
    "UNKNOWN_GAME": S.INVALID_ARGUMENT,
    "NOT_HOST": S.PERMISSION_DENIED,
    "SPECTATOR_CANNOT_ACT": S.PERMISSION_DENIED,
    "INVALID_TOKEN": S.UNAUTHENTICATED,
    # The caller is not a service of ours (the gateway): no or a wrong service credential.
    "SERVICE_CREDENTIAL_REQUIRED": S.UNAUTHENTICATED,
    "INVALID_SERVICE_CREDENTIAL": S.UNAUTHENTICATED,
    "INVALID_NAME": S.INVALID_ARGUMENT,
    "INVALID_SEATS": S.INVALID_ARGUMENT,
    "SEATS_OUTSIDE_RULES": S.INVALID_ARGUMENT,
    "INVALID_ACTION": S.INVALID_ARGUMENT,
    "INVALID_CLIENT_SEQ": S.INVALID_ARGUMENT,
    "INVALID_PAGE_TOKEN": S.INVALID_ARGUMENT,
    "INVALID_PHASE": S.INVALID_ARGUMENT,
    "STALE": S.ABORTED,
    "VIEW_OUTDATED": S.ABORTED,
    "TOO_MANY_SPECTATORS": S.RESOURCE_EXHAUSTED,
    "INVALID_SUBSCRIPTION": S.INVALID_ARGUMENT,
    "TOO_MANY_SUBSCRIPTIONS": S.RESOURCE_EXHAUSTED,
    "INVALID_CALL_ID": S.INVALID_ARGUMENT,
    "MISSING_PLAY": S.INVALID_ARGUMENT,
    "ROOM_BUSY": S.ABORTED,
    "ENGINE_UNAVAILABLE": S.UNAVAILABLE,
    "STORE_UNAVAILABLE": S.UNAVAILABLE,
}
# reason -> (code, Korean, English) of each session reason (a reason without texts fails here).
REASONS: Final[Mapping[str, tuple[grpc.StatusCode, str, str]]] = {
    reason: (code, *SERVICE_TEXTS[reason]) for reason, code in STATUS.items()
}


def session_error(reason: str, **metadata: object) -> ServiceError:
    code = STATUS[reason]
    meta = {k: str(v) for k, v in metadata.items()}
    ko, en = service_text(reason, "ko", meta), service_text(reason, "en", meta)
    return ServiceError(code, reason, DOMAIN, message_ko=ko, message_en=en, metadata=meta)
