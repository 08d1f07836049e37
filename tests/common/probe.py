"""A tiny bytes-in/bytes-out gRPC service for exercising ninetynine.common with real servers.

No protos of ours are needed: handlers are registered with ``grpc.method_handlers_generic_handler``
and identity (bytes) serializers. The unary method's behaviour is chosen by the request payload.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any

import grpc
import grpc.aio

from ninetynine.common.context import bind_rpc_fields, request_id
from ninetynine.common.errors import ServiceError, abort, to_service_error
from ninetynine.common.grpcclient import create_channel
from ninetynine.engine.errors import ENGINE_DOMAIN, from_rule_error, rule_texts
from ninetynine.engine.rules import Action, RuleError, apply, setup

SERVICE = "ninetynine.test.v1.Probe"
UNARY = f"/{SERVICE}/Unary"
SERVER_STREAM = f"/{SERVICE}/ServerStream"
BIDI = f"/{SERVICE}/Bidi"
SLOW = f"/{SERVICE}/Slow"
COUNT = f"/{SERVICE}/Count"

Context = grpc.aio.ServicerContext[Any, Any]


async def unary(request: bytes, context: Context) -> bytes:
    if request == b"whoami":
        return request_id().encode()
    if request == b"not-in-hand":
        # A real refusal from the rules engine, not a hand-built one.
        state, _ = setup(["ann", "bob"], seed=7)
        try:
            apply(state, state.current, Action(card_id="NOPE"))
        except RuleError as err:
            await abort(context, from_rule_error(err, ENGINE_DOMAIN))
        raise AssertionError("the rules accepted a card that is not in the hand")
    if request == b"raise-service-error":
        raise ServiceError(
            grpc.StatusCode.NOT_FOUND,
            "ROOM_NOT_FOUND",
            "session.ninetynine",
            metadata={"roomId": "r1"},
            message_ko="방을 찾을 수 없어요",
            message_en="Room not found",
        )
    if request == b"crash":
        raise RuntimeError("probe crashed on purpose")
    if request == b"fields":
        bind_rpc_fields(mode="kr-product", seq=7)
        return b"ok"
    if request.startswith(b"relay:"):
        # relay:<target>:<payload> -- call the same method on another server (a second hop).
        _, target, payload = request.decode().split(":", 2)
        host_port = target.replace("_", ":")
        async with create_channel(host_port) as channel:
            try:
                answer: bytes = await channel.unary_unary(UNARY, None, None)(payload.encode(), timeout=10)
            except grpc.aio.AioRpcError as e:
                raise to_service_error(e, texts=rule_texts) from e
            return answer
    return request


async def server_stream(request: bytes, context: Context) -> AsyncIterator[bytes]:
    count = int(request.decode())
    bind_rpc_fields(count=count)
    for i in range(count):
        yield str(i).encode()
    if count == 1:
        await abort(
            context,
            ServiceError(
                grpc.StatusCode.RESOURCE_EXHAUSTED, "TOO_FEW", "test.ninetynine", message_ko="적어요"
            ),
        )


async def bidi(requests: AsyncIterable[bytes], context: Context) -> AsyncIterator[bytes]:
    async for message in requests:
        yield message.upper()


async def count(requests: AsyncIterable[bytes], context: Context) -> bytes:
    total = 0
    async for _ in requests:
        total += 1
    bind_rpc_fields(messages=total)
    return str(total).encode()


async def slow(request: bytes, context: Context) -> AsyncIterator[bytes]:
    # Keeps a call in flight across a shutdown: "started" first, "done" a moment later.
    yield b"started"
    await asyncio.sleep(float(request.decode() or "0.5"))
    yield b"done"


def _identity(data: bytes) -> bytes:
    return data


def handler() -> grpc.GenericRpcHandler[Any, Any]:
    """The probe service as a generic handler with bytes serializers."""
    kw: dict[str, Any] = {"request_deserializer": _identity, "response_serializer": _identity}
    return grpc.method_handlers_generic_handler(
        SERVICE,
        {
            "Unary": grpc.unary_unary_rpc_method_handler(unary, **kw),
            "ServerStream": grpc.unary_stream_rpc_method_handler(server_stream, **kw),
            "Bidi": grpc.stream_stream_rpc_method_handler(bidi, **kw),
            "Slow": grpc.unary_stream_rpc_method_handler(slow, **kw),
            "Count": grpc.stream_unary_rpc_method_handler(count, **kw),
        },
    )
