"""Ending a connection's background tasks (its writer, its room stream)."""

from __future__ import annotations

import asyncio

import grpc

from ninetynine.common.logging import get_logger

__all__ = ["reap"]

log = get_logger("gateway.messages")


async def reap(task: asyncio.Task[None]) -> None:
    """Wait for a cancelled task; its own failure was logged where it happened."""
    try:
        await task
    except asyncio.CancelledError:
        pass
    except (grpc.RpcError, ConnectionError, OSError, RuntimeError) as exc:
        log.info("background task ended with an error", error=str(exc))
