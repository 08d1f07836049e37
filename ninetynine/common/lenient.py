"""Request parsing that never fails as INTERNAL: undecodable bytes are a client error.

grpc runs a method's request deserializer before the handler and turns any exception in it into
INTERNAL (the generated ``add_*Servicer_to_server`` uses plain ``FromString``). A client that
sends bytes which do not parse as the method's message made a bad request, so
:func:`lenient_handler` registers a service with a deserializer that never raises: garbage
becomes an :class:`Undecodable` marker, and the handler refuses it with INVALID_ARGUMENT /
``MALFORMED_REQUEST`` (one ``ErrorInfo`` in the service's domain, Korean or English text)
before the servicer sees it. Streamed requests are checked one by one.

Fields the schema does not know are dropped while parsing: a message a handler keeps (the
options of a room, the action of a move) would otherwise carry whatever a client appended into
the store and out to every other client. A service that keeps no part of a request and builds
every response from its own values (the engine) passes ``keep_unknown=True`` and is spared that
second walk over every request (a third of an ``ApplyRequest``'s parse).

    server.add_generic_rpc_handlers((lenient_handler(SERVICE_DESCRIPTOR, servicer, "x.ninetynine"),))
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import grpc
import grpc.aio
from google.protobuf.descriptor import ServiceDescriptor
from google.protobuf.message import DecodeError, Message
from google.protobuf.message_factory import GetMessageClass

from ninetynine.common.errors import ServiceError
from ninetynine.common.reasons import SERVICE_TEXTS

__all__ = [
    "MALFORMED_REQUEST",
    "MALFORMED_REQUEST_TEXTS",
    "Undecodable",
    "lenient",
    "lenient_handler",
    "malformed_request",
]

MALFORMED_REQUEST = "MALFORMED_REQUEST"
MALFORMED_REQUEST_TEXTS = SERVICE_TEXTS[MALFORMED_REQUEST]
MAX_DETAIL = 100  # the parser's message goes into ErrorInfo metadata: keep it short

Context = grpc.aio.ServicerContext[Any, Any]
OnRefusal = Callable[[str], None]


@dataclass(frozen=True)
class Undecodable:
    """Stands in for a request whose bytes do not parse, so the handler can refuse it properly."""

    error: str
    size: int = 0  # the request's bytes, for callers that limit sizes


def lenient(
    message_type: type[Message], *, keep_unknown: bool = False
) -> Callable[[bytes], Message | Undecodable]:
    """A request deserializer for ``message_type`` that returns :class:`Undecodable` instead of raising
    and drops unknown fields (at every depth) unless ``keep_unknown``."""

    def parse(data: bytes) -> Message | Undecodable:
        try:
            message = message_type.FromString(data)
        except DecodeError as exc:
            return Undecodable(str(exc), len(data))
        if not keep_unknown:
            message.DiscardUnknownFields()
        return message

    return parse


def malformed_request(domain: str, detail: str) -> ServiceError:
    ko, en = MALFORMED_REQUEST_TEXTS
    short = detail if len(detail) <= MAX_DETAIL else detail[: MAX_DETAIL - 1] + "…"
    return ServiceError(
        grpc.StatusCode.INVALID_ARGUMENT,
        MALFORMED_REQUEST,
        domain,
        message_ko=ko,
        message_en=en,
        metadata={"detail": short},
    )


def checked(request: object, domain: str, on_refusal: OnRefusal) -> None:
    """Refuse (MALFORMED_REQUEST, counted) a request that did not parse."""
    if isinstance(request, Undecodable):
        on_refusal(MALFORMED_REQUEST)
        raise malformed_request(domain, request.error)


def _serialize(message: Message | bytes) -> bytes:
    # A handler may hand over a response it has already serialized (e.g. assembled from cached
    # parts for many streams); it goes out as it is.
    if isinstance(message, bytes):
        return message
    return message.SerializeToString()


def _method_handler(
    behavior: Callable[..., Any],
    client_streaming: bool,
    server_streaming: bool,
    request_type: type[Message],
    domain: str,
    on_refusal: OnRefusal,
    keep_unknown: bool,
    raw: bool,
) -> grpc.RpcMethodHandler[Any, Any]:
    kw: dict[str, Any] = {
        "request_deserializer": None if raw else lenient(request_type, keep_unknown=keep_unknown),
        "response_serializer": _serialize,
    }
    if raw:  # the behavior parses (and refuses) the bytes itself
        if client_streaming and server_streaming:
            return grpc.stream_stream_rpc_method_handler(behavior, **kw)
        if not (client_streaming or server_streaming):
            return grpc.unary_unary_rpc_method_handler(behavior, **kw)
        raise ValueError("only a unary call or a bidirectional stream takes its requests raw")

    async def checked_stream(requests: AsyncIterable[Any]) -> AsyncIterator[Any]:
        async for request in requests:
            checked(request, domain, on_refusal)
            yield request

    if not client_streaming and not server_streaming:

        async def unary_unary(request: Any, context: Context) -> Any:
            checked(request, domain, on_refusal)
            return await behavior(request, context)

        return grpc.unary_unary_rpc_method_handler(unary_unary, **kw)
    if not client_streaming:

        async def unary_stream(request: Any, context: Context) -> AsyncIterator[Any]:
            checked(request, domain, on_refusal)
            async for item in behavior(request, context):
                yield item

        return grpc.unary_stream_rpc_method_handler(unary_stream, **kw)
    if not server_streaming:

        async def stream_unary(requests: AsyncIterable[Any], context: Context) -> Any:
            return await behavior(checked_stream(requests), context)

        return grpc.stream_unary_rpc_method_handler(stream_unary, **kw)

    async def stream_stream(requests: AsyncIterable[Any], context: Context) -> AsyncIterator[Any]:
        async for item in behavior(checked_stream(requests), context):
            yield item

    return grpc.stream_stream_rpc_method_handler(stream_stream, **kw)


def lenient_handler(
    service: ServiceDescriptor,
    servicer: object,
    domain: str,
    on_refusal: OnRefusal | None = None,
    *,
    keep_unknown: bool = False,
    raw: frozenset[str] = frozenset(),
) -> grpc.GenericRpcHandler[Any, Any]:
    """Every method of ``service``, served by the servicer's method of the same name, parsed leniently.

    ``on_refusal(reason)`` is called for each undecodable request (to count it by reason);
    ``keep_unknown``: see the module doc. The unary and bidirectional methods named in ``raw`` get
    their requests as the bytes that came (the servicer parses them, with :func:`lenient` and
    :func:`checked`).
    """
    count: OnRefusal = on_refusal or (lambda _reason: None)
    handlers = {
        method.name: _method_handler(
            getattr(servicer, method.name),
            method.client_streaming,
            method.server_streaming,
            GetMessageClass(method.input_type),
            domain,
            count,
            keep_unknown,
            method.name in raw,
        )
        for method in service.methods
    }
    return grpc.method_handlers_generic_handler(service.full_name, handlers)
