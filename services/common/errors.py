"""The one error model of every service: a gRPC status carrying exactly one ``google.rpc.ErrorInfo``.

Server side, a handler raises (or passes to :func:`abort`) a :class:`ServiceError`. On the wire it is
a ``google.rpc.Status`` in the ``grpc-status-details-bin`` trailer whose ``details`` hold exactly one
``ErrorInfo{reason, domain, metadata}``; the status message is the Korean text by default and the
English one when the request's ``accept-language`` asks for English.

Rule refusals from the engine become service errors through :func:`from_rule_error`, which uses the
single mapping table :data:`REASON_STATUS` (documented in docs/engine-api.md):

=====================================================================  ======================
reason                                                                 status code
=====================================================================  ======================
INVALID_OPTION, INVALID_PLAYER_COUNT, INVALID_PLAYER_ID, INVALID_STATE, INVALID_ARGUMENT
SIGN_REQUIRED, ACE_VALUE_REQUIRED, ACE_VALUE_INVALID,
JOKER_VALUE_REQUIRED, JOKER_OUT_OF_RANGE, DIR_REQUIRED,
DIR_NOT_ALLOWED, CHOICE_NOT_ALLOWED
OVER_99, BELOW_ZERO, NOT_YOUR_TURN, CARD_NOT_IN_HAND, GAME_FINISHED,   FAILED_PRECONDITION
UNKNOWN_PLAYER, REPLAY_UNSUPPORTED
STALE_STATE                                                            ABORTED
=====================================================================  ======================

Client side, :func:`error_info` reads the ``ErrorInfo`` back out of a failed call and
:func:`to_service_error` turns a downstream failure into a :class:`ServiceError` that can be
re-raised to the caller unchanged (rule reasons get both languages back from the rules' texts).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Literal, NoReturn, cast

import grpc
import grpc.aio
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from services.common.context import bind_rpc_fields
from services.engine.rules.errors import Reason, RuleError
from services.engine.rules.errors import message as rule_message

__all__ = [
    "ENGINE_DOMAIN",
    "REASON_STATUS",
    "STATUS_DETAILS_KEY",
    "ErrorInfo",
    "Lang",
    "ServiceError",
    "abort",
    "error_info",
    "from_rule_error",
    "lang_from_metadata",
    "to_service_error",
]

Lang = Literal["ko", "en"]
ErrorInfo = error_details_pb2.ErrorInfo

ENGINE_DOMAIN = "engine.ninetynine"
STATUS_DETAILS_KEY = "grpc-status-details-bin"

_C = grpc.StatusCode
REASON_STATUS: dict[Reason, grpc.StatusCode] = {
    # The request is malformed whatever the game state.
    Reason.INVALID_OPTION: _C.INVALID_ARGUMENT,
    Reason.INVALID_PLAYER_COUNT: _C.INVALID_ARGUMENT,
    Reason.INVALID_PLAYER_ID: _C.INVALID_ARGUMENT,
    Reason.INVALID_STATE: _C.INVALID_ARGUMENT,
    Reason.SIGN_REQUIRED: _C.INVALID_ARGUMENT,
    Reason.ACE_VALUE_REQUIRED: _C.INVALID_ARGUMENT,
    Reason.ACE_VALUE_INVALID: _C.INVALID_ARGUMENT,
    Reason.JOKER_VALUE_REQUIRED: _C.INVALID_ARGUMENT,
    Reason.JOKER_OUT_OF_RANGE: _C.INVALID_ARGUMENT,
    Reason.DIR_REQUIRED: _C.INVALID_ARGUMENT,
    Reason.DIR_NOT_ALLOWED: _C.INVALID_ARGUMENT,
    Reason.CHOICE_NOT_ALLOWED: _C.INVALID_ARGUMENT,
    # Well formed, but this game state refuses it.
    Reason.OVER_99: _C.FAILED_PRECONDITION,
    Reason.BELOW_ZERO: _C.FAILED_PRECONDITION,
    Reason.NOT_YOUR_TURN: _C.FAILED_PRECONDITION,
    Reason.CARD_NOT_IN_HAND: _C.FAILED_PRECONDITION,
    Reason.GAME_FINISHED: _C.FAILED_PRECONDITION,
    Reason.UNKNOWN_PLAYER: _C.FAILED_PRECONDITION,
    Reason.REPLAY_UNSUPPORTED: _C.FAILED_PRECONDITION,
    # The caller's view of the game is out of date: re-read and retry.
    Reason.STALE_STATE: _C.ABORTED,
}

# google.rpc.ErrorInfo's documented formats.
_REASON_FORMAT = re.compile(r"[A-Z][A-Z0-9_]{0,61}[A-Z0-9]")
_METADATA_KEY_FORMAT = re.compile(r"[a-z][a-zA-Z0-9_-]{0,63}")


class ServiceError(Exception):
    """A refused request, ready to be sent as a gRPC status with one ``ErrorInfo``.

    ``reason`` is a stable UPPER_SNAKE code, ``domain`` names the service that decided
    (e.g. ``engine.ninetynine``), ``metadata`` holds string facts (``cardId``, ``total``...).
    ``message_en`` defaults to the Korean text when not given.
    """

    def __init__(
        self,
        code: grpc.StatusCode,
        reason: str,
        domain: str,
        *,
        message_ko: str,
        message_en: str | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> None:
        if code is grpc.StatusCode.OK:
            raise ValueError("a ServiceError cannot carry status OK")
        if not _REASON_FORMAT.fullmatch(reason):
            raise ValueError(f"reason must be UPPER_SNAKE (at most 63 chars), got {reason!r}")
        if not domain:
            raise ValueError("domain must not be empty")
        meta = dict(metadata or {})
        for key, value in meta.items():
            if not _METADATA_KEY_FORMAT.fullmatch(key):
                raise ValueError(f"metadata key {key!r} must be a short lowerCamel/snake identifier")
            if not isinstance(value, str):
                raise TypeError(f"metadata value for {key!r} must be str, got {type(value).__name__}")
        self.code = code
        self.reason = reason
        self.domain = domain
        self.metadata: dict[str, str] = meta
        self.message_ko = message_ko
        self.message_en = message_en if message_en is not None else message_ko
        super().__init__(f"{code.name} {reason}@{domain}: {self.message_en}")

    def message(self, lang: Lang = "ko") -> str:
        """The player-facing text in ``lang``."""
        return self.message_en if lang == "en" else self.message_ko

    def error_info(self) -> error_details_pb2.ErrorInfo:
        """The ``google.rpc.ErrorInfo`` describing this error."""
        return error_details_pb2.ErrorInfo(reason=self.reason, domain=self.domain, metadata=self.metadata)

    def to_status(self, lang: Lang = "ko") -> status_pb2.Status:
        """The ``google.rpc.Status`` sent for this error: code, message in ``lang``, one ErrorInfo."""
        detail = any_pb2.Any()
        # Map keys sorted: the same refusal is the same bytes on every path and in every process.
        detail.Pack(self.error_info(), deterministic=True)
        return status_pb2.Status(code=self.code.value[0], message=self.message(lang), details=[detail])


def from_rule_error(err: RuleError, domain: str = ENGINE_DOMAIN) -> ServiceError:
    """Translate a rules-engine refusal into a :class:`ServiceError` using :data:`REASON_STATUS`."""
    return ServiceError(
        REASON_STATUS[err.reason],
        err.reason.value,
        domain,
        metadata=err.meta,
        message_ko=err.message("ko"),
        message_en=err.message("en"),
    )


MetadataLike = Iterable[tuple[str, str | bytes]] | None


def lang_from_metadata(metadata: MetadataLike) -> Lang:
    """The reply language for a request: ``en`` when ``accept-language`` prefers English, else ``ko``.

    Handles quality values (``ko;q=0.4, en-US;q=0.9`` → en); languages other than Korean and
    English are skipped; anything unparsable means Korean, the default of the spec.
    """
    header = ""
    for key, value in metadata or ():
        if key.lower() == "accept-language":
            header = value.decode("ascii", "replace") if isinstance(value, bytes) else value
            break
    best: tuple[float, Lang] | None = None
    for item in header.split(","):
        tag, _, params = item.strip().partition(";")
        tag = tag.strip().lower()
        lang: Lang | None = "en" if tag.startswith("en") else "ko" if tag.startswith("ko") else None
        if lang is None:
            continue
        quality = 1.0
        params = params.strip()
        if params.startswith("q="):
            try:
                quality = float(params[2:])
            except ValueError:
                quality = 0.0
        # Strictly greater: on a tie the earlier entry in the header wins.
        if quality > 0 and (best is None or quality > best[0]):
            best = (quality, lang)
    return best[1] if best is not None else "ko"


def _trailers_with_status(
    context: grpc.aio.ServicerContext[object, object], status: grpc.Status
) -> tuple[tuple[str, str | bytes], ...]:
    # Keep trailers the handler already set (except an older status) next to the new details.
    existing = tuple(
        (k, v) for k, v in (context.trailing_metadata() or ()) if k.lower() != STATUS_DETAILS_KEY
    )
    return existing + tuple(status.trailing_metadata)


async def abort(
    context: grpc.aio.ServicerContext[object, object],
    err: ServiceError,
    lang: Lang | None = None,
) -> NoReturn:
    """Abort the current RPC with ``err``: its status code, message and one ``ErrorInfo``.

    ``lang=None`` picks the language from the request's ``accept-language``. The reason is
    also bound to the RPC's canonical log line. Never returns (grpc.aio raises ``AbortError``).
    """
    if lang is None:
        lang = lang_from_metadata(context.invocation_metadata())
    bind_rpc_fields(reason=err.reason)
    status = rpc_status.to_status(err.to_status(lang))
    await context.abort(status.code, status.details, _trailers_with_status(context, status))
    raise AssertionError("unreachable: grpc.aio ServicerContext.abort always raises")  # pragma: no cover


def _status_of(e: grpc.RpcError) -> status_pb2.Status | None:
    # Sync calls return a tuple of pairs, aio errors a grpc.aio.Metadata; both iterate as pairs.
    trailers = cast(
        "Iterable[tuple[str, str | bytes]] | None",
        e.trailing_metadata() if hasattr(e, "trailing_metadata") else None,
    )
    for key, value in trailers or ():
        if key == STATUS_DETAILS_KEY and isinstance(value, bytes):
            status = status_pb2.Status.FromString(value)
            code = e.code() if hasattr(e, "code") else None
            # grpc_status.from_call's rule: the details must agree with the call's own status.
            if code is not None and status.code != code.value[0]:
                return None
            return status
    return None


def error_info(e: grpc.RpcError) -> error_details_pb2.ErrorInfo | None:
    """The ``ErrorInfo`` carried by a failed call, or None when it carries none."""
    status = _status_of(e)
    if status is None:
        return None
    for detail in status.details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            return info
    return None


def to_service_error(e: grpc.RpcError, *, default_domain: str = "grpc") -> ServiceError:
    """Turn a failed downstream call into a :class:`ServiceError` to propagate to our caller.

    With an ``ErrorInfo`` the reason, domain and metadata are kept; rule reasons get both language
    texts rebuilt from the rules' table, other reasons reuse the status message for both. Without
    one (deadline exceeded, unavailable...) the reason is the status code name in
    ``default_domain``.
    """
    code: grpc.StatusCode = e.code() if hasattr(e, "code") else grpc.StatusCode.UNKNOWN
    if code is grpc.StatusCode.OK:  # a misbehaving peer; never propagate "OK" as a failure
        code = grpc.StatusCode.UNKNOWN
    details = (e.details() if hasattr(e, "details") else None) or code.name
    info = error_info(e)
    if info is None:
        return ServiceError(code, code.name, default_domain, message_ko=details, message_en=details)
    meta = dict(info.metadata)
    if info.reason in Reason.__members__:
        reason = Reason(info.reason)
        message_ko, message_en = rule_message(reason, meta, "ko"), rule_message(reason, meta, "en")
    else:
        message_ko = message_en = details
    try:
        return ServiceError(
            code,
            info.reason,
            info.domain or default_domain,
            metadata=meta,
            message_ko=message_ko,
            message_en=message_en,
        )
    except ValueError:
        # A peer outside our conventions (odd reason or keys): keep its code and text at least.
        return ServiceError(code, code.name, default_domain, message_ko=details, message_en=details)
