"""ApplyMany: the engine's Apply and Timeout calls carried by one gRPC stream.

A caller that makes many moves (the session) pays for a unary call's machinery on both ends on
every move; a message on a stream that is already open costs about half of it (``bench
grpc_wake``). The engine's work is synchronous and takes tens of microseconds, so each request is
answered in order, as soon as it is read, tagged with its ``call_id``.

Every call is still its own request: it runs in its own request scope (the request id and language
its message carries, the stream's ``accept-language`` when it carries none) and gets one canonical
``rpc`` line and one sample in the RPC histogram under :data:`APPLY_METHOD` or
:data:`TIMEOUT_METHOD`, like its unary twin. A refusal is answered with the status and the one
``ErrorInfo`` the unary call would have failed with; a request the stream cannot take (no
``call_id``, no call) is refused the same way and the stream goes on; bytes that do not parse end
the call (MALFORMED_REQUEST).

The stream takes its requests as bytes and sends its answers as bytes it serialized itself, so
the state a call brings and the state its answer carries are slices of those bytes: the engine
keeps its answers decoded by them (:mod:`ninetynine.engine.recent`), and a state that comes back
as it went out is neither decoded nor encoded an extra time.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterable, AsyncIterator, Callable

import grpc
from google.rpc import status_pb2

from ninetynine.common.context import (
    ACCEPT_LANGUAGE_HEADER,
    bind_rpc_fields,
    close_scope,
    open_scope,
    sanitize_request_id,
)
from ninetynine.common.errors import Lang, ServiceError, lang_from_metadata
from ninetynine.common.lenient import checked, lenient
from ninetynine.common.reasons import service_text
from ninetynine.engine.errors import ENGINE_DOMAIN
from ninetynine.engine.handlers import EngineHandlers
from ninetynine.engine.v1 import engine_service_pb2 as pb
from ninetynine.engine.wirecalls import APPLY_STATE, TIMEOUT_STATE, StatePath, keep_answer, state_slice

__all__ = ["APPLY_METHOD", "TIMEOUT_METHOD", "Recorder", "apply_many"]

# The method names of a call's canonical line and RPC histogram sample: `method=~".*Apply"`
# matches them and the unary `/ninetynine.engine.v1.EngineService/Apply` alike.
APPLY_METHOD = "ApplyMany/Apply"
TIMEOUT_METHOD = "ApplyMany/Timeout"

# Where the state sits, by the call's kind: the call's field, then its state's (request and answer).
_STATE_PATHS: dict[str, tuple[StatePath, StatePath]] = {
    kind: (
        (pb.ApplyManyRequest.DESCRIPTOR.fields_by_name[kind].number, *request_path),
        (pb.ApplyManyResponse.DESCRIPTOR.fields_by_name[answer].number, *answer_path),
    )
    for kind, answer, (request_path, answer_path) in (
        ("apply", "applied", APPLY_STATE),
        ("timeout", "timed_out", TIMEOUT_STATE),
    )
}
_parse = lenient(pb.ApplyManyRequest, keep_unknown=True)


# CanonicalLogInterceptor.record: (method, code, seconds, fields, failure).
Recorder = Callable[[str, grpc.StatusCode, float, dict[str, object], BaseException | None], None]


def _stream_error(reason: str, **metadata: object) -> ServiceError:
    meta = {k: str(v) for k, v in metadata.items()}
    return ServiceError(
        grpc.StatusCode.INVALID_ARGUMENT,
        reason,
        ENGINE_DOMAIN,
        message_ko=service_text(reason, "ko", meta),
        message_en=service_text(reason, "en", meta),
        metadata=meta,
    )


def _failure(status: status_pb2.Status, details: bool = True) -> pb.CallFailure:
    return pb.CallFailure(
        code=status.code,
        message=status.message,
        status_details=status.SerializeToString() if details else b"",
    )


def answer(
    handlers: EngineHandlers,
    request: pb.ApplyManyRequest,
    stream_lang: str,
    record: Recorder | None,
    state_wire: bytes | None,
) -> pb.ApplyManyResponse:
    """The answer to one call, logged and counted as its unary twin would be (``state_wire``: the
    bytes the call's state came as)."""
    call_id = request.call_id
    kind = request.WhichOneof("call")
    method = TIMEOUT_METHOD if kind == "timeout" else APPLY_METHOD
    lang_header = request.accept_language or stream_lang
    lang: Lang = lang_from_metadata(((ACCEPT_LANGUAGE_HEADER, lang_header),))
    scope, token = open_scope(
        sanitize_request_id(request.request_id or None), lang_header, {"method": method}
    )
    started = time.perf_counter()
    code = grpc.StatusCode.OK
    failure: BaseException | None = None
    try:
        try:
            if call_id == 0:
                handlers.metrics.refusals.labels("INVALID_CALL_ID").inc()
                raise _stream_error("INVALID_CALL_ID")
            if kind == "apply":
                out = pb.ApplyManyResponse(call_id=call_id, applied=handlers.apply(request.apply, state_wire))
            elif kind == "timeout":
                out = pb.ApplyManyResponse(
                    call_id=call_id, timed_out=handlers.timeout(request.timeout, state_wire)
                )
            else:
                handlers.metrics.refusals.labels("MISSING_CALL").inc()
                raise _stream_error("MISSING_CALL", callId=call_id)
        except ServiceError as err:
            code = err.code
            bind_rpc_fields(reason=err.reason)
            out = pb.ApplyManyResponse(call_id=call_id, failure=_failure(err.to_status(lang)))
        except Exception as exc:  # noqa: BLE001 - not a refusal: logged with its traceback, answered INTERNAL
            code, failure = grpc.StatusCode.INTERNAL, exc
            internal = status_pb2.Status(code=code.value[0], message=service_text("INTERNAL", lang))
            out = pb.ApplyManyResponse(call_id=call_id, failure=_failure(internal, details=False))
        return out
    finally:
        if record is not None:
            # After the answer is written (call_soon, as the interceptor does), in this call's scope.
            seconds = time.perf_counter() - started
            asyncio.get_running_loop().call_soon(record, method, code, seconds, scope.fields, failure)
        close_scope(token)


async def apply_many(
    handlers: EngineHandlers,
    requests: AsyncIterable[bytes],
    stream_lang: str,
    record: Recorder | None,
) -> AsyncIterator[bytes]:
    """Answer each request (its bytes) in order until the caller half-closes; each answer serialized."""
    async for data in requests:
        yield answer_bytes(handlers, data, stream_lang, record)


def answer_bytes(handlers: EngineHandlers, data: bytes, stream_lang: str, record: Recorder | None) -> bytes:
    """The serialized answer to one call's bytes; its new state is remembered by its slice."""
    request = _parse(data)
    checked(request, ENGINE_DOMAIN, handlers.count_refusal)
    assert isinstance(request, pb.ApplyManyRequest)
    kind = request.WhichOneof("call")
    paths = _STATE_PATHS.get(kind) if kind is not None else None
    state_wire = None if paths is None else state_slice(data, paths[0])
    out = answer(handlers, request, stream_lang, record, state_wire).SerializeToString()
    if paths is not None:
        keep_answer(handlers, state_wire, out, paths[1])
    return out
