"""Client channels with the same options everywhere and the request id forwarded on every call.

:func:`failover_options` adds what a client of several replicas needs to ride over one of them
dying: wait for a ready replica, retry the idempotent methods, a bounded retry budget.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, cast

import grpc.aio
from google.protobuf.descriptor import ServiceDescriptor

from ninetynine.common.grpcserver import MAX_MESSAGE_BYTES, ChannelOption, merge_options
from ninetynine.common.interceptors import request_id_interceptors

__all__ = ["CLIENT_OPTIONS", "RETRY_MAX_ATTEMPTS", "create_channel", "failover_options"]

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


# Attempts of an idempotent call (the first one included) while replicas die under it.
RETRY_MAX_ATTEMPTS = 4
# The retry budget of a channel (gRPC's retryThrottling): each failed attempt takes a token, each
# success gives back ``ratio``; below half the tokens no call is retried, so in an outage calls
# fail as they would without retries instead of multiplying the load.
RETRY_TOKENS = 20
RETRY_TOKEN_RATIO = 0.1


def failover_options(service: ServiceDescriptor, idempotent: Sequence[str]) -> tuple[ChannelOption, ...]:
    """Channel options for a client of ``service`` run as several replicas; ``idempotent`` names
    the methods that may run twice with the effect of once (ValueError for one it does not have).

    * Round robin over the target's addresses.
    * Every call waits for a ready replica (``waitForReady``) instead of failing UNAVAILABLE at once
      when none is connected (one just died, and the channel's reconnect to another that is up
      waits out its backoff). A call that waits has not been sent, so this is safe for every method.
    * The reconnect backoff stops at 1 s (gRPC's default grows to 120 s): a replica that is back is
      used again within a second.
    * The ``idempotent`` methods are retried on UNAVAILABLE (a replica died with the call on it),
      up to :data:`RETRY_MAX_ATTEMPTS` attempts, each after a random pause of up to 0.1 s, 0.2 s,
      0.4 s, within the caller's deadline. Other methods are only retried transparently by gRPC
      itself, when the request provably never reached a server; one cut off on a server that died
      is not, since it may have taken effect.
    * The retry budget above (``retryThrottling``) bounds retries per channel.
    """
    unknown = set(idempotent) - set(service.methods_by_name)
    if unknown:
        raise ValueError(f"{service.full_name} has no methods {sorted(unknown)}")
    name = service.full_name
    config = {
        "loadBalancingConfig": [{"round_robin": {}}],
        "methodConfig": [
            {"name": [{"service": name}], "waitForReady": True},
            {
                "name": [{"service": name, "method": method} for method in idempotent],
                "waitForReady": True,
                "retryPolicy": {
                    "maxAttempts": RETRY_MAX_ATTEMPTS,
                    "initialBackoff": "0.1s",
                    "maxBackoff": "1s",
                    "backoffMultiplier": 2,
                    "retryableStatusCodes": ["UNAVAILABLE"],
                },
            },
        ],
        "retryThrottling": {"maxTokens": RETRY_TOKENS, "tokenRatio": RETRY_TOKEN_RATIO},
    }
    return (
        ("grpc.service_config", json.dumps(config)),
        ("grpc.enable_retries", 1),
        ("grpc.initial_reconnect_backoff_ms", 100),
        ("grpc.max_reconnect_backoff_ms", 1000),
    )
