"""Per-request context shared by the interceptors, the error helpers and non-gRPC entry points.

Three pieces of state follow a request through ``asyncio`` tasks, in one :class:`RequestScope`
held by one :mod:`contextvars` variable:

* the request id (``x-request-id``), which client interceptors forward to the next hop and
  which :mod:`ninetynine.common.logging` adds to every log line (with the scope's other log
  context, e.g. ``method``),
* the caller's ``accept-language``, forwarded likewise so every hop answers in one language, and
* the fields a handler wants on its *canonical* log line (``bind_rpc_fields``).

gRPC handlers get both from :class:`ninetynine.common.interceptors.CanonicalLogInterceptor`.
Entry points that are not gRPC handlers (the gateway's websocket loop, a CLI command) open a
:func:`request_scope` themselves so that their outgoing calls carry an id too.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token

REQUEST_ID_HEADER = "x-request-id"
ACCEPT_LANGUAGE_HEADER = "accept-language"

# Ids from clients end up in logs and in downstream metadata: accept only short, plain tokens so a
# client cannot inject newlines or megabytes into either.
_VALID_REQUEST_ID = re.compile(r"[A-Za-z0-9._:\-]{1,128}")


class RequestScope:
    """Everything one request carries: id, language, canonical-line fields, extra log context.

    One object in one context variable, so opening a scope is a single ``ContextVar.set`` (this
    runs on every RPC). ``log_context`` (``request_id``, ``method``...) is added to every log line
    written inside the scope by :mod:`ninetynine.common.logging`.
    """

    __slots__ = ("accept_language", "fields", "log_context", "request_id")

    def __init__(self, request_id: str, accept_language: str, log_context: dict[str, object]) -> None:
        self.request_id = request_id
        self.accept_language = accept_language
        self.fields: dict[str, object] = {}
        self.log_context = log_context


_scope: ContextVar[RequestScope | None] = ContextVar("ninetynine_request_scope", default=None)


def new_request_id() -> str:
    """A fresh request id: 32 lowercase hex digits (128 random bits, like a uuid4's hex).

    Ids only need to be unique, not unguessable; ``random`` is reseeded in forked children.
    """
    return f"{random.getrandbits(128):032x}"


def sanitize_request_id(candidate: str | bytes | None) -> str:
    """Return ``candidate`` if it is a usable request id, otherwise a freshly generated one."""
    if isinstance(candidate, bytes):
        candidate = candidate.decode("ascii", "replace")
    if candidate and _VALID_REQUEST_ID.fullmatch(candidate):
        return candidate
    return new_request_id()


def current_scope() -> RequestScope | None:
    """The scope of the request being served in this context (``None`` outside any request)."""
    return _scope.get()


def request_id() -> str:
    """The id of the request being served in this context, or ``""`` outside any request."""
    scope = _scope.get()
    return "" if scope is None else scope.request_id


def accept_language() -> str:
    """The ``accept-language`` of the request being served (``""`` when none), for forwarding."""
    scope = _scope.get()
    return "" if scope is None else scope.accept_language


def bind_rpc_fields(**fields: object) -> None:
    """Add fields (mode, seq, room_id, player_id, reason...) to the current RPC's canonical log line.

    Outside an RPC (no interceptor / :func:`request_scope` active) this is a no-op, so library
    code may call it unconditionally. Later values for the same key win.
    """
    scope = _scope.get()
    if scope is not None:
        scope.fields.update(fields)


def rpc_fields() -> dict[str, object]:
    """A copy of the fields bound so far for the current RPC (empty outside an RPC)."""
    scope = _scope.get()
    return dict(scope.fields) if scope is not None else {}


def open_scope(
    rid: str, accept_language: str | bytes | None, log_context: dict[str, object]
) -> tuple[RequestScope, Token[RequestScope | None]]:
    """Enter a scope for an already sanitized id; pass the token to :func:`close_scope`.

    ``log_context`` should not contain ``request_id`` (it is added). The outer scope's log
    context stays visible in the inner one, as nested scopes always did.
    """
    if isinstance(accept_language, bytes):
        accept_language = accept_language.decode("ascii", "replace")
    outer = _scope.get()
    if outer is None:
        context = {"request_id": rid, **log_context}
    else:
        context = {**outer.log_context, "request_id": rid, **log_context}
    scope = RequestScope(rid, (accept_language or "")[:256], context)
    return scope, _scope.set(scope)


def close_scope(token: Token[RequestScope | None]) -> None:
    """Leave the scope :func:`open_scope` entered (restores the outer one)."""
    _scope.reset(token)


@contextmanager
def request_scope(
    request_id: str | None = None, *, accept_language: str | bytes | None = None, **log_context: object
) -> Iterator[dict[str, object]]:
    """Run a block as one request: bind its id (generated when absent) for logs and outgoing calls.

    ``accept_language`` (the caller's header, if any) is forwarded on outgoing calls too.

    Yields the dict that collects :func:`bind_rpc_fields` values for the block. Extra keyword
    arguments are added to the block's log lines (e.g. ``method``). Everything is restored on
    exit, so scopes nest.
    """
    scope, token = open_scope(sanitize_request_id(request_id), accept_language, log_context)
    try:
        yield scope.fields
    finally:
        close_scope(token)
