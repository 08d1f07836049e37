"""A channel built with ``failover_options``: which calls gRPC retries, waits with, and stops retrying.

Real servers on 127.0.0.1; the service is grpc.health.v1.Health, whose ``Check`` answers
UNAVAILABLE a chosen number of times, the way a call cut off by a dying replica ends. The server
runs the canonical-log interceptor with a retry counter, as the session does.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass

import grpc
import grpc.aio
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from prometheus_client import CollectorRegistry, Counter

from ninetynine.common.grpcclient import RETRY_MAX_ATTEMPTS, RETRY_TOKENS, create_channel, failover_options
from ninetynine.common.interceptors import CanonicalLogInterceptor
from ninetynine.launch import free_port
from tests.common.conftest import LogCapture

HEALTH = health_pb2.DESCRIPTOR.services_by_name["Health"]
CHECK = "/grpc.health.v1.Health/Check"


class FailingHealth(health_pb2_grpc.HealthServicer):  # type: ignore[misc]  # untyped generated base
    """``Check`` fails UNAVAILABLE for the first ``failures`` attempts, then answers SERVING."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.attempts = 0

    async def Check(
        self, request: health_pb2.HealthCheckRequest, context: grpc.aio.ServicerContext[object, object]
    ) -> health_pb2.HealthCheckResponse:
        self.attempts += 1
        if self.attempts <= self.failures:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "replica going away")
        return health_pb2.HealthCheckResponse(status=health_pb2.HealthCheckResponse.SERVING)


@dataclass
class Replica:
    port: int
    health: FailingHealth
    retries: Counter
    server: grpc.aio.Server

    def retried(self) -> float:
        return float(self.retries.labels(CHECK)._value.get())


async def start_replica(failures: int, port: int = 0) -> Replica:
    retries = Counter("retried_calls", "retries", ["method"], registry=CollectorRegistry())
    server = grpc.aio.server(interceptors=[CanonicalLogInterceptor("probe", retries=retries)])
    health = FailingHealth(failures)
    health_pb2_grpc.add_HealthServicer_to_server(health, server)
    bound = server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    return Replica(bound, health, retries, server)


@pytest.fixture
async def replicas() -> AsyncIterator[list[Replica]]:
    started: list[Replica] = []
    yield started
    for replica in started:
        await replica.server.stop(None)


async def check(port: int, idempotent: tuple[str, ...], timeout: float = 10) -> None:
    async with create_channel(f"127.0.0.1:{port}", options=failover_options(HEALTH, idempotent)) as channel:
        await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=timeout)


async def test_an_idempotent_call_is_retried_and_the_server_counts_and_logs_each_retry(
    replicas: list[Replica], logs: LogCapture
) -> None:
    replica = await start_replica(failures=RETRY_MAX_ATTEMPTS - 1)
    replicas.append(replica)
    await check(replica.port, ("Check",))
    assert replica.health.attempts == RETRY_MAX_ATTEMPTS
    assert replica.retried() == RETRY_MAX_ATTEMPTS - 1
    await logs.wait_for(lambda _: len(logs.rpc_lines(CHECK)) == RETRY_MAX_ATTEMPTS)
    attempts = [line.get("attempt") for line in logs.rpc_lines(CHECK)]
    assert attempts == [None, *range(2, RETRY_MAX_ATTEMPTS + 1)]


async def test_a_method_not_named_idempotent_is_not_retried(replicas: list[Replica]) -> None:
    replica = await start_replica(failures=1)
    replicas.append(replica)
    with pytest.raises(grpc.aio.AioRpcError) as failed:
        await check(replica.port, ())
    assert failed.value.code() == grpc.StatusCode.UNAVAILABLE
    assert replica.health.attempts == 1, "cut off, it may have taken effect: not sent again"
    assert replica.retried() == 0


async def test_a_call_waits_for_a_replica_instead_of_failing_while_none_is_up(
    replicas: list[Replica],
) -> None:
    port = free_port()
    waiting = asyncio.create_task(check(port, ()))
    await asyncio.sleep(1.5)  # nothing listens: the channel's connection attempts fail meanwhile
    assert not waiting.done(), "the call failed while no replica was up"
    replicas.append(await start_replica(failures=0, port=port))
    await asyncio.wait_for(waiting, timeout=10)


async def test_retries_stop_once_the_channel_retry_budget_is_spent(replicas: list[Replica]) -> None:
    calls = 3 * RETRY_TOKENS
    replica = await start_replica(failures=10**6)  # a real outage: every attempt fails
    replicas.append(replica)
    options = failover_options(HEALTH, ("Check",))
    async with create_channel(f"127.0.0.1:{replica.port}", options=options) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        for _ in range(calls):
            with pytest.raises(grpc.aio.AioRpcError):
                await stub.Check(health_pb2.HealthCheckRequest(), timeout=10)
    # Retries while more than half the tokens are left (one taken per failed attempt): about
    # RETRY_TOKENS / 2 of them, then every call is tried once, where unthrottled each would be
    # tried RETRY_MAX_ATTEMPTS times.
    assert replica.retried() <= RETRY_TOKENS
    assert replica.health.attempts <= calls + RETRY_TOKENS


def test_a_method_the_service_does_not_have_is_refused() -> None:
    with pytest.raises(ValueError, match="Chek"):
        failover_options(HEALTH, ("Chek",))
