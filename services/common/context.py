"""Per-request context shared by the interceptors, the error helpers and non-gRPC entry points.

Two pieces of state follow a request through ``asyncio`` tasks via :mod:`contextvars`:

* the request id (``x-request-id``), which client interceptors forward to the next hop and
  which structlog adds to every log line,
* the caller's ``accept-language``, forwarded likewise so every hop answers in one language, and
* the fields a handler wants on its *canonical* log line (``bind_rpc_fields``).

gRPC handlers get both from :class:`services.common.interceptors.CanonicalLogInterceptor`.
Entry points that are not gRPC handlers (the gateway's websocket loop, a CLI command) open a
:func:`request_scope` themselves so that their outgoing calls carry an id too.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import structlog

REQUEST_ID_HEADER = "x-request-id"
ACCEPT_LANGUAGE_HEADER = "accept-language"

# Ids from clients end up in logs and in downstream metadata: accept only short, plain tokens so a
# client cannot inject newlines or megabytes into either.
_VALID_REQUEST_ID = re.compile(r"[A-Za-z0-9._:\-]{1,128}")

_request_id: ContextVar[str] = ContextVar("ninetynine_request_id", default="")
_accept_language: ContextVar[str] = ContextVar("ninetynine_accept_language", default="")
_rpc_fields: ContextVar[dict[str, object] | None] = ContextVar("ninetynine_rpc_fields", default=None)


def new_request_id() -> str:
    """A fresh request id: 32 lowercase hex digits (uuid4)."""
    return uuid.uuid4().hex


def sanitize_request_id(candidate: str | bytes | None) -> str:
    """Return ``candidate`` if it is a usable request id, otherwise a freshly generated one."""
    if isinstance(candidate, bytes):
        candidate = candidate.decode("ascii", "replace")
    if candidate and _VALID_REQUEST_ID.fullmatch(candidate):
        return candidate
    return new_request_id()


def request_id() -> str:
    """The id of the request being served in this context, or ``""`` outside any request."""
    return _request_id.get()


def accept_language() -> str:
    """The ``accept-language`` of the request being served (``""`` when none), for forwarding."""
    return _accept_language.get()


def bind_rpc_fields(**fields: object) -> None:
    """Add fields (mode, seq, room_id, player_id, reason...) to the current RPC's canonical log line.

    Outside an RPC (no interceptor / :func:`request_scope` active) this is a no-op, so library
    code may call it unconditionally. Later values for the same key win.
    """
    current = _rpc_fields.get()
    if current is not None:
        current.update(fields)


def rpc_fields() -> dict[str, object]:
    """A copy of the fields bound so far for the current RPC (empty outside an RPC)."""
    current = _rpc_fields.get()
    return dict(current) if current is not None else {}


@contextmanager
def request_scope(
    request_id: str | None = None, *, accept_language: str | bytes | None = None, **log_context: object
) -> Iterator[dict[str, object]]:
    """Run a block as one request: bind its id (generated when absent) for logs and outgoing calls.

    ``accept_language`` (the caller's header, if any) is forwarded on outgoing calls too.

    Yields the dict that collects :func:`bind_rpc_fields` values for the block. Extra keyword
    arguments are bound into structlog's contextvars for the block's log lines (e.g. ``method``).
    Everything is restored on exit, so scopes nest.
    """
    rid = sanitize_request_id(request_id)
    fields: dict[str, object] = {}
    if isinstance(accept_language, bytes):
        accept_language = accept_language.decode("ascii", "replace")
    rid_token = _request_id.set(rid)
    lang_token = _accept_language.set((accept_language or "")[:256])
    fields_token = _rpc_fields.set(fields)
    log_tokens = structlog.contextvars.bind_contextvars(request_id=rid, **log_context)
    try:
        yield fields
    finally:
        structlog.contextvars.reset_contextvars(**log_tokens)
        _rpc_fields.reset(fields_token)
        _accept_language.reset(lang_token)
        _request_id.reset(rid_token)
