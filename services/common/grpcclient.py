"""Client channels with the same options everywhere and the request id forwarded on every call."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import grpc.aio

from services.common.grpcserver import MAX_MESSAGE_BYTES, ChannelOption, merge_options
from services.common.interceptors import request_id_interceptors

__all__ = ["CLIENT_OPTIONS", "create_channel"]

CLIENT_OPTIONS: tuple[ChannelOption, ...] = (
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    # Matches the servers' min_ping_interval (10 s): pinging every 30 s is never punished.
    ("grpc.keepalive_time_ms", 30_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.keepalive_permit_without_calls", 1),
)


def create_channel(
    target: str,
    *,
    interceptors: Sequence[Any] = (),
    options: Sequence[ChannelOption] = (),
    metadata: Sequence[tuple[str, str]] = (),
) -> grpc.aio.Channel:
    """An insecure grpc.aio channel to ``target`` that forwards ``x-request-id``.

    ``metadata`` goes on every call (the service credential). The request-id interceptors run
    first; ``interceptors`` are added after it.
    """
    return grpc.aio.insecure_channel(
        target,
        options=merge_options(CLIENT_OPTIONS, options),
        # grpc-stubs types aio client interceptors as a placeholder that nothing satisfies.
        interceptors=cast(Any, [*request_id_interceptors(tuple(metadata)), *interceptors]),
    )
