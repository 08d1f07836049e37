"""Shared assertions for session tests: refusals carry exactly one ErrorInfo, in Korean or English."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from typing import TypeVar

import grpc
import grpc.aio
from google.rpc import error_details_pb2
from prometheus_client import CollectorRegistry

from ninetynine.session.v1 import session_service_pb2 as pb
from ninetynine.session.v1 import session_service_pb2_grpc as pb_grpc
from tests.common import errorinfo

SESSION_DOMAIN = "session.ninetynine"
ENGINE_DOMAIN = "engine.ninetynine"
ENGLISH = (("accept-language", "en"),)
HANGUL = re.compile(r"[\uac00-\ud7a3]")

T = TypeVar("T")


def only_error_info(err: grpc.RpcError) -> error_details_pb2.ErrorInfo:
    """The one ErrorInfo of a failed call; fails when there is none or more than one."""
    return errorinfo.only_error_info(err, (SESSION_DOMAIN, ENGINE_DOMAIN))


async def refused(
    call: Awaitable[object],
    code: grpc.StatusCode,
    reason: str,
    domain: str = SESSION_DOMAIN,
) -> grpc.aio.AioRpcError:
    """Await ``call``, assert it fails with ``code`` / ``reason`` / ``domain``; return the error."""
    try:
        await call
    except grpc.aio.AioRpcError as err:
        info = only_error_info(err)
        assert (err.code(), info.reason, info.domain) == (code, reason, domain), (
            f"expected {code.name}/{reason}/{domain}, got {err.code().name}/{info.reason}/{info.domain}: "
            f"{err.details()}"
        )
        return err
    raise AssertionError(f"expected {code.name}/{reason}, the call succeeded")


def is_korean(text: str | None) -> bool:
    return bool(text) and HANGUL.search(text or "") is not None


def is_english(text: str | None) -> bool:
    return (
        bool(text) and HANGUL.search(text or "") is None and re.search(r"[A-Za-z]{3}", text or "") is not None
    )


async def eventually(
    check: Callable[[], Awaitable[T | None]], timeout: float = 10.0, every: float = 0.02
) -> T:
    """Poll ``check`` until it returns something truthy (integration tests wait on real timers)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while True:
        value = await check()
        if value:
            return value
        if loop.time() > end:
            raise AssertionError(f"condition not met within {timeout} s")
        await asyncio.sleep(every)


async def room_of(stub: pb_grpc.SessionServiceAsyncStub, room_id: str) -> pb.Room:
    room: pb.Room = (await stub.GetRoom(pb.GetRoomRequest(room_id=room_id))).room
    return room


async def wait_finished(
    stub: pb_grpc.SessionServiceAsyncStub, room_id: str, timeout: float = 30.0
) -> pb.Room:
    async def finished() -> pb.Room | None:
        room = await room_of(stub, room_id)
        return room if room.phase == pb.ROOM_PHASE_FINISHED else None

    return await eventually(finished, timeout, every=0.05)


def sample(registry: CollectorRegistry, name: str, labels: dict[str, str] | None = None) -> float:
    """A metric sample's value in ``registry`` (0 when it was never observed)."""
    value = registry.get_sample_value(name, labels or {})
    return 0.0 if value is None else value
