"""The engine gRPC service: the stateless rules engine behind ``ninetynine.engine.v1.EngineService``.

Every call carries the whole game state; the engine converts it (:mod:`ninetynine.engine.convert`),
validates it, runs the pure rules and sends the new state and the ordered events back. It keeps
nothing between calls, so any number of replicas can serve any game. The request handling itself
is :class:`ninetynine.engine.handlers.EngineHandlers`, which the session's in-process engine
(``--engine local``, :mod:`ninetynine.engine.local`) runs too: this module adds the transport.

Errors: every refusal is a :class:`~ninetynine.common.errors.ServiceError` built from the rules'
reason through the one table ``ninetynine.engine.errors.REASON_STATUS`` (INVALID_ARGUMENT,
FAILED_PRECONDITION, ABORTED/STALE_STATE), with exactly one ``ErrorInfo`` in domain
``engine.ninetynine`` and a Korean (default) or English message. A request whose bytes do not
even parse is refused with INVALID_ARGUMENT / ``MALFORMED_REQUEST`` instead of grpc's INTERNAL.

Run it with ``ninety-nine engine --port 50051 --metrics-port 9101``. It listens on 127.0.0.1 unless
``--host`` says otherwise and takes no credential: other teams' backends call it directly, so
where it is reachable from is decided by the listen address and, in Kubernetes, the NetworkPolicy
of deploy/ (docs/operations.md#network-exposure). With ``--frames-socket`` it also takes a
co-located session's moves as frames on a Unix socket (:mod:`ninetynine.engine.frames`).
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass, fields
from functools import cache
from typing import Any

import grpc
import grpc.aio
from prometheus_client import REGISTRY, CollectorRegistry, Histogram

from ninetynine.common.config import add_env_argument
from ninetynine.common.context import accept_language
from ninetynine.common.errors import lang_from_metadata
from ninetynine.common.frames import remove_socket
from ninetynine.common.grpcserver import HealthServicer, create_server, serve
from ninetynine.common.interceptors import CanonicalLogInterceptor

# Re-exported: the engine's error table (docs/engine-api.md, its tests) lists MALFORMED_REQUEST.
from ninetynine.common.lenient import MALFORMED_REQUEST as MALFORMED_REQUEST
from ninetynine.common.lenient import MALFORMED_REQUEST_TEXTS as MALFORMED_REQUEST_TEXTS
from ninetynine.common.lenient import lenient_handler
from ninetynine.common.logging import get_logger
from ninetynine.common.metrics import histogram, start_metrics_server
from ninetynine.common.runner import add_service_flags, run_service
from ninetynine.engine.applymany import Recorder, apply_many
from ninetynine.engine.errors import ENGINE_DOMAIN
from ninetynine.engine.frames import start_frame_server
from ninetynine.engine.handlers import EngineHandlers, RulesMetrics, rules_metrics
from ninetynine.engine.v1 import engine_service_pb2 as pb
from ninetynine.engine.v1 import engine_service_pb2_grpc as pb_grpc
from ninetynine.engine.v1 import rules_pb2
from ninetynine.engine.wirecalls import answer_apply, answer_timeout

ENGINE_SERVICE_NAME: str = pb.DESCRIPTOR.services_by_name["EngineService"].full_name

# The engine answers in tens to hundreds of microseconds: start the buckets well below 1 ms.
ENGINE_LATENCY_BUCKETS: tuple[float, ...] = (
    0.000025,
    0.00005,
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.1,
    0.5,
    1.0,
)

log = get_logger(__name__)


@dataclass(frozen=True)
class EngineMetrics(RulesMetrics):
    """The engine's Prometheus metrics: the rules counters plus the RPC latency histogram."""

    rpc_duration: Histogram

    @classmethod
    def create(cls, registry: CollectorRegistry | None = REGISTRY) -> EngineMetrics:
        rules_counters = RulesMetrics.create(None) if registry is None else rules_metrics(registry)
        return cls(
            **{f.name: getattr(rules_counters, f.name) for f in fields(RulesMetrics)},
            rpc_duration=histogram(
                "ninetynine_engine_rpc_duration_seconds",
                "Latency of engine RPCs by method, status code and game mode.",
                ("method", "code", "mode"),
                registry=registry,
                buckets=ENGINE_LATENCY_BUCKETS,
            ),
        )


@cache
def default_metrics() -> EngineMetrics:
    """The process-wide metrics on the default registry (created once, however many servers)."""
    return EngineMetrics.create(REGISTRY)


class EngineServicer(pb_grpc.EngineServiceServicer):
    """Setup / Apply / View / Timeout / ListRules over the pure rules engine (:class:`EngineHandlers`).

    A refusal leaves a handler as a :class:`~ninetynine.common.errors.ServiceError`; the
    :class:`CanonicalLogInterceptor` aborts the RPC with it (status, one ErrorInfo, text in the
    caller's language).
    """

    def __init__(self, metrics: EngineMetrics | None = None, record: Recorder | None = None) -> None:
        """``record`` (the server's :meth:`CanonicalLogInterceptor.record`) logs and observes each
        call of an ApplyMany stream like its unary twin."""
        self.metrics = metrics or default_metrics()
        self.handlers = EngineHandlers(self.metrics, log_fields=True)
        self.record = record

    async def Setup(
        self, request: pb.SetupRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.SetupResponse:
        return self.handlers.setup(request)

    async def Apply(  # type: ignore[override]
        self, request: bytes, context: grpc.aio.ServicerContext[Any, Any]
    ) -> bytes:
        return answer_apply(self.handlers, request)

    async def View(
        self, request: pb.ViewRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.ViewResponse:
        return self.handlers.view(request, lang_from_metadata(context.invocation_metadata()))

    async def Timeout(  # type: ignore[override]
        self, request: bytes, context: grpc.aio.ServicerContext[Any, Any]
    ) -> bytes:
        return answer_timeout(self.handlers, request)

    async def ListRules(
        self, request: rules_pb2.ListRulesRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> rules_pb2.ListRulesResponse:
        return self.handlers.list_rules(request)

    async def ApplyMany(  # type: ignore[override]
        self,
        request_iterator: AsyncIterable[bytes],
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> AsyncIterator[bytes]:
        async for answer in apply_many(self.handlers, request_iterator, accept_language(), self.record):
            yield answer


# -- wiring ------------------------------------------------------------------------------------


def engine_handler(servicer: EngineServicer) -> grpc.GenericRpcHandler[Any, Any]:
    """The EngineService method table, with request parsing that never fails as INTERNAL.

    Unknown fields are not walked away: the engine keeps nothing of a request, and every response
    is built from the rules' values (:mod:`ninetynine.engine.convert` re-encodes even the history
    records), so nothing a client appended is echoed. One parse per request, nothing more.
    """
    return lenient_handler(
        pb.DESCRIPTOR.services_by_name["EngineService"],
        servicer,
        ENGINE_DOMAIN,
        on_refusal=servicer.handlers.count_refusal,
        keep_unknown=True,
        # Parsed by ninetynine.engine.wirecalls, which keeps the answered states by their bytes.
        raw=frozenset({"Apply", "Timeout", "ApplyMany"}),
    )


def create_engine_server(
    address: str, *, metrics: EngineMetrics | None = None, reflection: bool = False
) -> tuple[grpc.aio.Server, int, HealthServicer]:
    """A ready-to-start engine server on ``address`` (port 0 picks one) with health (and reflection
    when asked).

    Returns ``(server, port, health)``; call inside the event loop that will run it.
    """
    server, port, health, _ = _engine_server(address, metrics, reflection)
    return server, port, health


def _engine_server(
    address: str, metrics: EngineMetrics | None, reflection: bool
) -> tuple[grpc.aio.Server, int, HealthServicer, EngineServicer]:
    metrics = metrics or default_metrics()
    interceptor = CanonicalLogInterceptor("engine", metrics.rpc_duration, label_fields=("mode",))
    server, port, health = create_server(
        address, service_names=[ENGINE_SERVICE_NAME], interceptors=[interceptor], reflection=reflection
    )
    servicer = EngineServicer(metrics, interceptor.record)
    server.add_generic_rpc_handlers((engine_handler(servicer),))
    return server, port, health, servicer


async def serve_engine(args: argparse.Namespace) -> None:
    """Run the engine until SIGTERM/SIGINT, then drain within ``args.grace`` seconds."""
    metrics_port = start_metrics_server(args.metrics_port, args.metrics_host)
    server, port, health, servicer = _engine_server(f"{args.host}:{args.port}", None, args.reflection)
    frames: asyncio.Server | None = None
    if args.frames_socket:  # before health says SERVING: the session sends its moves there at once
        frames = await start_frame_server(args.frames_socket, servicer.handlers, servicer.record)
    log.info(
        "engine listening",
        host=args.host,
        port=port,
        frames_socket=args.frames_socket or None,
        metrics_host=args.metrics_host,
        metrics_port=metrics_port,
        reflection=args.reflection,
    )

    async def close_frames() -> None:
        if frames is not None:
            remove_socket(frames, args.frames_socket)

    await serve(
        server, health, grace=args.grace, service_names=[ENGINE_SERVICE_NAME], on_shutdown=close_frames
    )


def run_command(args: argparse.Namespace) -> int:
    return run_service("engine", lambda: serve_engine(args), log_level=args.log_level)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    parser = sub.add_parser(
        "engine",
        help="run the engine gRPC service",
        description="Serve ninetynine.engine.v1.EngineService (stateless rules engine) with health, "
        "optional reflection and Prometheus metrics. Every flag can also come from the environment.",
    )
    add_service_flags(parser, port=50051, metrics_port=9101, grace=5.0)
    add_env_argument(
        parser,
        "--frames-socket",
        default="",
        help="also take ApplyMany's moves as frames on this Unix socket, for a session on this "
        "machine (its directory must be private to this user; empty: off)",
    )
    parser.set_defaults(handler=run_command)
    return parser
