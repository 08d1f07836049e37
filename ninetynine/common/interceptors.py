"""gRPC interceptors: one canonical log line (and latency sample) per RPC, request ids across hops.

Server side, :class:`CanonicalLogInterceptor` wraps every handler (unary and streaming):

* reads ``x-request-id`` from the invocation metadata (32 fresh random hex digits when absent or
  malformed) and opens a :func:`~ninetynine.common.context.request_scope` with it and the method
  name for the whole call, so every line the handler logs carries them and outgoing calls
  forward the id;
* turns a :class:`~ninetynine.common.errors.ServiceError` raised by the handler into the proper
  status (same as calling :func:`ninetynine.common.errors.abort`);
* at the end emits exactly one ``rpc`` line: ``method``, ``code`` (``OK``, ``INVALID_ARGUMENT``...),
  ``duration_ms``, plus whatever the handler added with :func:`bind_rpc_fields` (mode, seq, room_id,
  player_id, reason...), and ``attempt`` (2, 3...) when the call is a client's gRPC retry (it
  carries ``grpc-previous-rpc-attempts``; such calls are also counted by ``retries``). Handler
  exceptions other than aborts are logged with their traceback at level error, and the caller
  gets ``UNKNOWN`` with the ``INTERNAL`` reason and text, not the exception's.

Cost (``python -m bench rpc_overhead``): the line and the latency sample are written from a loop
callback scheduled as the handler returns, so they run after grpc has handed the response to the
transport instead of delaying it; the line is rendered by :func:`ninetynine.common.logging.emit_line`
(orjson, no processor chain) and histogram children are cached per label values.

Metrics design: the interceptor observes one histogram labelled ``method``, ``code`` and, optionally,
extra labels whose values are taken from the RPC's bound fields (``label_fields=("mode",)`` reads
the ``mode`` the handler bound; missing → ``""``). Anything else mode-specific (games finished,
refusals by reason...) is counted by the service itself. :func:`ninetynine.common.metrics.rpc_histogram`
builds a histogram with matching labels.

:class:`ServiceCredentialInterceptor` (placed after the canonical one, so refusals get their line)
admits a call only when it presents the service credential (``authorization: Bearer <secret>``,
compared in constant time); the health service stays open for probes. The credential itself is
never logged: the canonical line reads only ``x-request-id`` and ``accept-language``.

Client side, :func:`request_id_interceptors` (installed by
:func:`ninetynine.common.grpcclient.create_channel`) copies the current request id into outgoing
metadata, so gateway → session → engine share one id, and forwards the caller's
``accept-language`` so downstream refusals come back in the caller's language. Fixed metadata
given to the channel (the service credential) goes on every call too.
"""

from __future__ import annotations

import asyncio
import hmac
import inspect
import time
from collections.abc import AsyncIterable, Awaitable, Callable, Coroutine, Iterable, Sequence
from typing import Any, TypeVar, cast

import grpc
import grpc.aio
from prometheus_client import Counter, Histogram

from ninetynine.common.context import (
    ACCEPT_LANGUAGE_HEADER,
    REQUEST_ID_HEADER,
    accept_language,
    bind_rpc_fields,
    close_scope,
    open_scope,
    request_id,
    sanitize_request_id,
)
from ninetynine.common.credential import AUTHORIZATION_HEADER, BEARER_PREFIX
from ninetynine.common.errors import ServiceError, abort
from ninetynine.common.logging import emit_line
from ninetynine.common.reasons import SERVICE_TEXTS

__all__ = [
    "REQUEST_ID_HEADER",
    "CanonicalLogInterceptor",
    "RequestIdStreamStreamInterceptor",
    "RequestIdStreamUnaryInterceptor",
    "RequestIdUnaryStreamInterceptor",
    "RequestIdUnaryUnaryInterceptor",
    "ServiceCredentialInterceptor",
    "bind_rpc_fields",
    "request_id",
    "request_id_interceptors",
]

T = TypeVar("T")

# Codes that mean "our fault" rather than "the caller's request was refused".
_SERVER_FAULT_CODES = frozenset(
    {grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL, grpc.StatusCode.DATA_LOSS}
)

# Histogram children kept per label values; more than this means odd label values: start over.
_MAX_CACHED_CHILDREN = 4096

AnyContext = grpc.aio.ServicerContext[Any, Any]
Behavior = Callable[[Any, AnyContext], Any]
# Sent by a gRPC client on each retry attempt of a call: how many attempts went before.
PREVIOUS_ATTEMPTS_HEADER = "grpc-previous-rpc-attempts"


class CanonicalLogInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[type-arg]
    """Request ids, one canonical log line and one latency observation per RPC.

    ``rpc_histogram`` (optional) must have the label names ``("method", "code", *label_fields)``;
    it is observed in seconds. Its labelled children are cached per label values (don't
    ``remove()`` them from the histogram while the server runs). ``retries`` (optional, labelled
    ``method``) counts the calls that are a client's retry of an attempt that failed.
    """

    def __init__(
        self,
        service: str,
        rpc_histogram: Histogram | None = None,
        *,
        label_fields: Sequence[str] = (),
        retries: Counter | None = None,
    ) -> None:
        self.service = service
        ko, en = SERVICE_TEXTS["INTERNAL"]
        self._internal = ServiceError(
            grpc.StatusCode.UNKNOWN, "INTERNAL", f"{service}.ninetynine", message_ko=ko, message_en=en
        )
        self._histogram = rpc_histogram
        self._retries = retries
        self._label_fields = tuple(label_fields)
        if rpc_histogram is not None:
            expected = ("method", "code", *self._label_fields)
            actual = tuple(getattr(rpc_histogram, "_labelnames", ()))
            if actual != expected:
                raise ValueError(f"rpc_histogram labels must be {expected}, got {actual}")
        self._logger_name = f"{service}.rpc"
        self._children: dict[tuple[str, ...], Any] = {}
        self._wrapped: dict[str, tuple[grpc.RpcMethodHandler[Any, Any], grpc.RpcMethodHandler[Any, Any]]] = {}

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any]]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any]:
        handler = await continuation(handler_call_details)
        if handler is None:  # unknown method: grpc answers UNIMPLEMENTED itself
            return handler
        method: str = handler_call_details.method
        # Wrappers read everything per call from the context, so one wrapper per method suffices.
        cached = self._wrapped.get(method)
        if cached is not None and cached[0] is handler:
            return cached[1]
        wrapped = self._wrap(method, handler)
        self._wrapped[method] = (handler, wrapped)
        return wrapped

    def _wrap(self, method: str, handler: grpc.RpcMethodHandler[Any, Any]) -> grpc.RpcMethodHandler[Any, Any]:
        kw = {
            "request_deserializer": handler.request_deserializer,
            "response_serializer": handler.response_serializer,
        }
        observe = self._observe

        if not handler.request_streaming and not handler.response_streaming:
            inner_uu = cast(Behavior, handler.unary_unary)
            if inspect.iscoroutinefunction(inner_uu):
                # The common case: the handler's own coroutine is the body, no extra layer.
                async def unary_unary(request: Any, context: AnyContext) -> Any:
                    return await observe(method, context, inner_uu(request, context))

            else:

                async def unary_unary(request: Any, context: AnyContext) -> Any:
                    return await observe(method, context, _call(inner_uu, request, context))

            return grpc.unary_unary_rpc_method_handler(unary_unary, **kw)

        if not handler.request_streaming:
            inner_us = cast(Behavior, handler.unary_stream)

            async def unary_stream(request: Any, context: AnyContext) -> None:
                await observe(method, context, _stream_out(inner_us, request, context))

            return grpc.unary_stream_rpc_method_handler(unary_stream, **kw)

        if not handler.response_streaming:
            inner_su = cast(Behavior, handler.stream_unary)

            async def stream_unary(requests: AsyncIterable[Any], context: AnyContext) -> Any:
                return await observe(method, context, _call(inner_su, requests, context))

            return grpc.stream_unary_rpc_method_handler(stream_unary, **kw)

        inner_ss = cast(Behavior, handler.stream_stream)

        async def stream_stream(requests: AsyncIterable[Any], context: AnyContext) -> None:
            await observe(method, context, _stream_out(inner_ss, requests, context))

        return grpc.stream_stream_rpc_method_handler(stream_stream, **kw)

    async def _observe(self, method: str, context: AnyContext, body: Coroutine[Any, Any, T]) -> T:
        """Await ``body`` (not started yet, so it runs inside the request's scope) and account for it."""
        try:
            rid: str | bytes | None = None
            language: str | bytes | None = None
            previous: str | bytes | None = None
            for key, value in context.invocation_metadata() or ():
                if key == REQUEST_ID_HEADER:
                    if rid is None:
                        rid = value
                elif key == ACCEPT_LANGUAGE_HEADER and language is None:
                    language = value
                elif key == PREVIOUS_ATTEMPTS_HEADER:
                    previous = value
            scope, token = open_scope(sanitize_request_id(rid), language, {"method": method})
            if previous is not None:
                self._retried(method, scope.fields, previous)
        except BaseException:
            body.close()
            raise
        started = time.perf_counter()
        code = grpc.StatusCode.UNKNOWN
        failure: BaseException | None = None
        try:
            try:
                result = await body
            except ServiceError as err:
                await abort(context, err)
            code = context.code() or grpc.StatusCode.OK
            return result
        except grpc.aio.AbortError:
            code = context.code() or grpc.StatusCode.UNKNOWN
            raise
        except asyncio.CancelledError:
            # grpc.aio cancels the handler both when the client cancels and when the deadline passes.
            remaining = context.time_remaining()
            expired = remaining is not None and remaining <= 0
            code = grpc.StatusCode.DEADLINE_EXCEEDED if expired else grpc.StatusCode.CANCELLED
            raise
        except Exception as exc:  # noqa: BLE001 -- answered as INTERNAL, logged with its traceback
            failure = exc
            # grpc's own answer would be "Unexpected <class ...>: <the exception's text>": our
            # internals, and no ErrorInfo. The caller gets the service's INTERNAL text instead.
            await abort(context, self._internal)
        finally:
            seconds = time.perf_counter() - started
            # Written once the loop gets back to it, i.e. after grpc has handed the response or
            # status to the transport: the caller does not wait for the line. call_soon copies
            # the current context, so the line still sees this request's scope.
            try:
                loop = asyncio.get_running_loop()
                loop.call_soon(self.record, method, code, seconds, scope.fields, failure)
            finally:
                close_scope(token)

    def _retried(self, method: str, fields: dict[str, object], previous: str | bytes) -> None:
        """A retry attempt: its number on the canonical line, and one more in ``retries``."""
        text = previous.decode("ascii", "replace") if isinstance(previous, bytes) else previous
        if text.isdigit() and len(text) < 3:  # gRPC allows at most 5 attempts
            fields["attempt"] = int(text) + 1
        if self._retries is not None:
            self._retries.labels(method).inc()

    def record(
        self,
        method: str,
        code: grpc.StatusCode,
        seconds: float,
        fields: dict[str, object],
        failure: BaseException | None = None,
    ) -> None:
        """The canonical line and latency sample of one call: every RPC's, and calls that share a
        stream (a play on PlayMany) so they are logged and counted like their unary twins.

        ``failure`` (an unexpected exception) is logged with its traceback at level error.
        """
        code_name = code.name
        if self._histogram is not None:
            key = (method, code_name, *[str(fields.get(name, "")) for name in self._label_fields])
            child = self._children.get(key)
            if child is None:
                if len(self._children) >= _MAX_CACHED_CHILDREN:  # label values from odd input: stay bounded
                    self._children.clear()
                child = self._children[key] = self._histogram.labels(*key)
            child.observe(seconds)
        line = {**fields, "method": method, "code": code_name, "duration_ms": round(seconds * 1000, 3)}
        if failure is not None:
            line["exc_info"] = failure
            emit_line(self._logger_name, "error", "rpc", line)
        elif code in _SERVER_FAULT_CODES:
            emit_line(self._logger_name, "error", "rpc", line)
        else:
            emit_line(self._logger_name, "info", "rpc", line)


# Calls anyone may make without the credential: Kubernetes' gRPC probes and the supervisor's wait.
_OPEN_PREFIXES = ("/grpc.health.v1.Health/",)
CREDENTIAL_REQUIRED = "SERVICE_CREDENTIAL_REQUIRED"
CREDENTIAL_INVALID = "INVALID_SERVICE_CREDENTIAL"


class ServiceCredentialInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[type-arg]
    """Refuses every call but health's unless it presents ``authorization: Bearer <token>``.

    ``refusal(reason)`` builds the error for :data:`CREDENTIAL_REQUIRED` (no credential) and
    :data:`CREDENTIAL_INVALID` (a wrong one), from the service's own error table; the handler is
    never run and the request never read.
    """

    def __init__(self, token: str, refusal: Callable[[str], ServiceError]) -> None:
        self._expected = (BEARER_PREFIX + token).encode("ascii")
        self._refusal = refusal
        self._refusers: dict[tuple[str, str], grpc.RpcMethodHandler[Any, Any]] = {}

    def _reason(self, metadata: Iterable[tuple[str, str | bytes]] | None) -> str | None:
        presented = _header(metadata, AUTHORIZATION_HEADER)
        if presented is None:
            return CREDENTIAL_REQUIRED
        value = presented if isinstance(presented, bytes) else presented.encode("utf-8", "replace")
        return None if hmac.compare_digest(value, self._expected) else CREDENTIAL_INVALID

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any]]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any]:
        method: str = handler_call_details.method
        if method.startswith(_OPEN_PREFIXES):
            return await continuation(handler_call_details)
        reason = self._reason(handler_call_details.invocation_metadata)
        handler = await continuation(handler_call_details)
        if reason is None or handler is None:
            return handler
        refuser = self._refusers.get((method, reason))
        if refuser is None:
            refuser = self._refusers[(method, reason)] = self._refuser(handler, self._refusal(reason))
        return refuser

    @staticmethod
    def _refuser(
        handler: grpc.RpcMethodHandler[Any, Any], err: ServiceError
    ) -> grpc.RpcMethodHandler[Any, Any]:
        """A handler of the same shape as ``handler`` that aborts with ``err`` at once."""

        async def refuse(_request: Any, context: AnyContext) -> Any:
            await abort(context, err)

        kw = {
            "request_deserializer": handler.request_deserializer,
            "response_serializer": handler.response_serializer,
        }
        if handler.request_streaming and handler.response_streaming:
            return grpc.stream_stream_rpc_method_handler(refuse, **kw)
        if handler.request_streaming:
            return grpc.stream_unary_rpc_method_handler(refuse, **kw)
        if handler.response_streaming:
            return grpc.unary_stream_rpc_method_handler(refuse, **kw)
        return grpc.unary_unary_rpc_method_handler(refuse, **kw)


async def _call(behavior: Behavior, request: Any, context: AnyContext) -> Any:
    result = behavior(request, context)
    if inspect.isawaitable(result):
        result = await result
    return result


async def _stream_out(behavior: Behavior, request: Any, context: AnyContext) -> None:
    """Drive a response-streaming handler inside the wrapper's own coroutine.

    Async generators are iterated and written here (and closed in the same task, so their cleanup
    runs with the RPC's context); reader/writer-style coroutine handlers are awaited.
    """
    produced = behavior(request, context)
    if inspect.isasyncgen(produced):
        try:
            async for message in produced:
                await context.write(message)
        finally:
            await produced.aclose()
    elif inspect.isawaitable(produced):
        await produced
    else:
        for message in produced:
            await context.write(message)


def _header(metadata: Iterable[tuple[str, str | bytes]] | None, name: str) -> str | bytes | None:
    for key, value in metadata or ():
        if key == name:
            return value
    return None


Fixed = tuple[tuple[str, str], ...]


def _with_request_id(details: grpc.aio.ClientCallDetails, fixed: Fixed = ()) -> grpc.aio.ClientCallDetails:
    pairs: list[tuple[str, str | bytes]] = list(details.metadata or ())
    present = {key for key, _ in pairs}
    added = [
        (header, value)
        for header, value in ((REQUEST_ID_HEADER, request_id()), (ACCEPT_LANGUAGE_HEADER, accept_language()))
        if value and header not in present
    ]
    if fixed:  # the channel's own metadata (the credential) replaces whatever the call set
        names = {key for key, _ in fixed}
        pairs = [(key, value) for key, value in pairs if key not in names]
        added += fixed
    if not added:
        return details
    return grpc.aio.ClientCallDetails(
        details.method,
        details.timeout,
        grpc.aio.Metadata(*pairs, *added),
        details.credentials,
        details.wait_for_ready,
    )


class RequestIdUnaryUnaryInterceptor(grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[type-arg]
    """Adds the current ``x-request-id`` and ``accept-language`` unless the call sets its own."""

    def __init__(self, fixed: Fixed = ()) -> None:
        self.fixed = fixed

    async def intercept_unary_unary(self, continuation: Any, client_call_details: Any, request: Any) -> Any:
        return await continuation(_with_request_id(client_call_details, self.fixed), request)


class RequestIdUnaryStreamInterceptor(grpc.aio.UnaryStreamClientInterceptor):  # type: ignore[type-arg]
    """Adds the current ``x-request-id`` and ``accept-language`` unless the call sets its own."""

    def __init__(self, fixed: Fixed = ()) -> None:
        self.fixed = fixed

    async def intercept_unary_stream(self, continuation: Any, client_call_details: Any, request: Any) -> Any:
        return await continuation(_with_request_id(client_call_details, self.fixed), request)


class RequestIdStreamUnaryInterceptor(grpc.aio.StreamUnaryClientInterceptor):  # type: ignore[type-arg]
    """Adds the current ``x-request-id`` and ``accept-language`` unless the call sets its own."""

    def __init__(self, fixed: Fixed = ()) -> None:
        self.fixed = fixed

    async def intercept_stream_unary(
        self, continuation: Any, client_call_details: Any, request_iterator: Any
    ) -> Any:
        return await continuation(_with_request_id(client_call_details, self.fixed), request_iterator)


class RequestIdStreamStreamInterceptor(grpc.aio.StreamStreamClientInterceptor):  # type: ignore[type-arg]
    """Adds the current ``x-request-id`` and ``accept-language`` unless the call sets its own."""

    def __init__(self, fixed: Fixed = ()) -> None:
        self.fixed = fixed

    async def intercept_stream_stream(
        self, continuation: Any, client_call_details: Any, request_iterator: Any
    ) -> Any:
        return await continuation(_with_request_id(client_call_details, self.fixed), request_iterator)


def request_id_interceptors(fixed: Fixed = ()) -> list[Any]:
    """Client interceptors forwarding ``x-request-id`` (and sending ``fixed``) on all four kinds of call.

    One object per kind on purpose: grpc.aio files each interceptor under the *first* kind it
    implements, so a single class implementing all four would only see unary-unary calls.
    """
    return [
        RequestIdUnaryUnaryInterceptor(fixed),
        RequestIdUnaryStreamInterceptor(fixed),
        RequestIdStreamUnaryInterceptor(fixed),
        RequestIdStreamStreamInterceptor(fixed),
    ]
