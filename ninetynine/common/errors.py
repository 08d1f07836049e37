"""The one error model of every service: a gRPC status carrying exactly one ``google.rpc.ErrorInfo``.

Server side, a handler raises (or passes to :func:`abort`) a :class:`ServiceError`. On the wire it is
a ``google.rpc.Status`` in the ``grpc-status-details-bin`` trailer whose ``details`` hold exactly one
``ErrorInfo{reason, domain, metadata}``; the status message is the Korean text by default and the
English one when the request's ``accept-language`` asks for English.

The engine's rule reasons and their status codes live with the engine
(:mod:`ninetynine.engine.errors`): this module knows no service.

Client side, :func:`error_info` reads the ``ErrorInfo`` back out of a failed call and
:func:`to_service_error` turns a downstream failure into a :class:`ServiceError` that can be
re-raised to the caller unchanged (given the reasons' texts, a reason gets both languages back).
Services convert with :func:`ninetynine.engine.errors.from_rpc_error`, which always passes the
rules' texts; the services' own texts are :mod:`ninetynine.common.reasons`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Literal, NoReturn, cast

import grpc
import grpc.aio
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from ninetynine.common.context import bind_rpc_fields

__all__ = [
    "STATUS_DETAILS_KEY",
    "ErrorInfo",
    "Lang",
    "ReasonTexts",
    "ServiceError",
    "abort",
    "error_info",
    "lang_from_metadata",
    "to_service_error",
]

Lang = Literal["ko", "en"]
ErrorInfo = error_details_pb2.ErrorInfo

STATUS_DETAILS_KEY = "grpc-status-details-bin"
# The Korean and English texts of a reason with its metadata; None: a reason it does not know.
ReasonTexts = Callable[[str, Mapping[str, str]], tuple[str, str] | None]

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


def to_service_error(
    e: grpc.RpcError, *, default_domain: str = "grpc", texts: ReasonTexts | None = None
) -> ServiceError:
    """Turn a failed downstream call into a :class:`ServiceError` to propagate to our caller.

    With an ``ErrorInfo`` the reason, domain and metadata are kept; a reason ``texts`` knows gets
    both language texts rebuilt from it, other reasons reuse the status message for both. Without
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
    known = texts(info.reason, meta) if texts is not None else None
    message_ko, message_en = known if known is not None else (details, details)
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
