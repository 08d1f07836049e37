"""The engine gRPC service: the stateless rules engine behind ``ninetynine.engine.v1.EngineService``.

Every call carries the whole game state; the engine converts it (:mod:`services.engine.convert`),
validates it, runs the pure rules and sends the new state and the ordered events back. It keeps
nothing between calls, so any number of replicas can serve any game.

Errors: every refusal is a :class:`~services.common.errors.ServiceError` built from the rules'
reason through the one table ``services.common.errors.REASON_STATUS`` (INVALID_ARGUMENT,
FAILED_PRECONDITION, ABORTED/STALE_STATE), with exactly one ``ErrorInfo`` in domain
``engine.ninetynine`` and a Korean (default) or English message. A request whose bytes do not
even parse is refused with INVALID_ARGUMENT / ``MALFORMED_REQUEST`` instead of grpc's INTERNAL.

Run it with ``ninety-nine engine --port 50051 --metrics-port 9101``.
"""

from __future__ import annotations

import argparse
import secrets
import time
from dataclasses import dataclass
from functools import cache
from typing import Any, TypeVar

import grpc
import grpc.aio
from google.protobuf.message import Message
from ninetynine.engine.v1 import engine_service_pb2 as pb
from ninetynine.engine.v1 import engine_service_pb2_grpc as pb_grpc
from ninetynine.engine.v1 import state_pb2
from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram

from services.common.context import bind_rpc_fields
from services.common.errors import ENGINE_DOMAIN, ServiceError, from_rule_error, lang_from_metadata
from services.common.grpcserver import HealthServicer, create_server, serve
from services.common.interceptors import CanonicalLogInterceptor

# Re-exported: the engine's error table (docs/engine-api.md, its tests) lists MALFORMED_REQUEST.
from services.common.lenient import MALFORMED_REQUEST as MALFORMED_REQUEST
from services.common.lenient import MALFORMED_REQUEST_TEXTS as MALFORMED_REQUEST_TEXTS
from services.common.lenient import lenient_handler
from services.common.logging import get_logger
from services.common.metrics import histogram, start_metrics_server
from services.common.runner import add_service_flags, run_service
from services.engine import convert, rules
from services.engine.rules import GameState, Reason, RuleError

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

# ErrorInfo metadata and messages echo client input (ids, card ids): keep them short.
MAX_METADATA_VALUE = 100
MAX_DISPLAY_NAME = 64

log = get_logger(__name__)

Req = TypeVar("Req", bound=Message)
Resp = TypeVar("Resp", bound=Message)


@dataclass(frozen=True)
class EngineMetrics:
    """The engine's Prometheus metrics (one set per registry)."""

    rpc_duration: Histogram
    refusals: Counter
    games_setup: Counter
    games_finished: Counter
    moves_applied: Counter

    @classmethod
    def create(cls, registry: CollectorRegistry | None = REGISTRY) -> EngineMetrics:
        return cls(
            rpc_duration=histogram(
                "ninetynine_engine_rpc_duration_seconds",
                "Latency of engine RPCs by method, status code and game mode.",
                ("method", "code", "mode"),
                registry=registry,
                buckets=ENGINE_LATENCY_BUCKETS,
            ),
            refusals=Counter(
                "ninetynine_engine_refusals_total",
                "Requests the engine refused, by reason code.",
                ("reason",),
                registry=registry,
            ),
            games_setup=Counter(
                "ninetynine_engine_games_setup_total", "Games set up, by mode.", ("mode",), registry=registry
            ),
            games_finished=Counter(
                "ninetynine_engine_games_finished_total",
                "Games that reached the finished phase, by mode.",
                ("mode",),
                registry=registry,
            ),
            moves_applied=Counter(
                "ninetynine_engine_moves_applied_total",
                "Plays applied, by mode and source (player = Apply, timeout = Timeout).",
                ("mode", "source"),
                registry=registry,
            ),
        )


@cache
def default_metrics() -> EngineMetrics:
    """The process-wide metrics on the default registry (created once, however many servers)."""
    return EngineMetrics.create(REGISTRY)


def _now_ms(requested: int) -> int:
    return requested if requested > 0 else time.time_ns() // 1_000_000


def _short(value: str) -> str:
    return value if len(value) <= MAX_METADATA_VALUE else value[: MAX_METADATA_VALUE - 1] + "…"


class EngineServicer(pb_grpc.EngineServiceServicer):
    """Setup / Apply / View / Timeout over the pure rules engine."""

    def __init__(self, metrics: EngineMetrics | None = None) -> None:
        self.metrics = metrics or default_metrics()

    # -- helpers -------------------------------------------------------------------------------

    def refusal(self, err: RuleError) -> ServiceError:
        """The service error for a rules refusal (counted by reason)."""
        self.metrics.refusals.labels(err.reason.value).inc()
        short = RuleError(err.reason, **{k: _short(v) for k, v in err.meta.items()})
        return from_rule_error(short, ENGINE_DOMAIN)

    def _state(self, msg: state_pb2.State) -> GameState:
        state = convert.state_from_proto(msg)
        bind_rpc_fields(mode=state.options.mode, seq=state.seq)
        return state

    def _played(self, before: GameState, after: GameState, source: str) -> None:
        mode = after.options.mode
        self.metrics.moves_applied.labels(mode, source).inc()
        if after.finished and not before.finished:
            self.metrics.games_finished.labels(mode).inc()
        bind_rpc_fields(seq=after.seq, phase=after.phase.value)

    # -- RPCs ----------------------------------------------------------------------------------

    async def Setup(
        self, request: pb.SetupRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.SetupResponse:
        try:
            options = convert.options_from_proto(request.options)
            bind_rpc_fields(mode=options.mode, seq=0)
            player_ids = list(request.player_ids)
            names = dict(request.display_names)
            for pid, name in names.items():
                if pid not in player_ids:
                    raise RuleError(
                        Reason.INVALID_PLAYER_ID, detail=f"display name for unknown player {pid!r}"[:80]
                    )
                if len(name) > MAX_DISPLAY_NAME or not name.isprintable():
                    raise RuleError(Reason.INVALID_PLAYER_ID, detail=f"display name of {pid!r}"[:80])
            seed = request.seed if request.HasField("seed") else secrets.randbits(64)
            state, events = rules.setup(
                player_ids, options, seed=seed, now_ms=_now_ms(request.now_ms), names=names
            )
        except RuleError as err:
            raise self.refusal(err) from None
        response = pb.SetupResponse(seed_commitment=state.seed_commitment)
        convert.state_into(state, response.state)
        convert.events_into(events, response.events, options)
        self.metrics.games_setup.labels(options.mode).inc()
        return response

    async def Apply(
        self, request: pb.ApplyRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.ApplyResponse:
        try:
            state = self._state(request.state)
            action = convert.action_from_proto(request.action)
            expected = request.expected_seq if request.HasField("expected_seq") else None
            new_state, events = rules.apply(
                state, request.player_id, action, now_ms=_now_ms(request.now_ms), expected_seq=expected
            )
        except RuleError as err:
            raise self.refusal(err) from None
        self._played(state, new_state, "player")
        response = pb.ApplyResponse()
        convert.state_into(new_state, response.state)
        convert.events_into(events, response.events, new_state.options)
        return response

    async def View(
        self, request: pb.ViewRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.ViewResponse:
        try:
            state = self._state(request.state)
            view = rules.player_view(state, request.viewer_id or None)
        except RuleError as err:
            raise self.refusal(err) from None
        response = pb.ViewResponse()
        lang = lang_from_metadata(context.invocation_metadata())
        convert.view_into(view, state.options, response.view, lang)
        return response

    async def Timeout(
        self, request: pb.TimeoutRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.TimeoutResponse:
        try:
            state = self._state(request.state)
            if request.HasField("expected_seq") and request.expected_seq != state.seq:
                raise RuleError(Reason.STALE_STATE, expectedSeq=request.expected_seq, seq=state.seq)
            action = rules.timeout_action(state)
            player = state.current
            new_state, events = rules.apply(state, player, action, now_ms=_now_ms(request.now_ms))
        except RuleError as err:
            raise self.refusal(err) from None
        self._played(state, new_state, "timeout")
        bind_rpc_fields(player_id=player)
        response = pb.TimeoutResponse(player_id=player)
        convert.action_into(action, response.action)
        convert.state_into(new_state, response.state)
        convert.events_into(events, response.events, new_state.options)
        return response


# -- wiring ------------------------------------------------------------------------------------


def engine_handler(servicer: EngineServicer) -> grpc.GenericRpcHandler[Any, Any]:
    """The EngineService method table, with request parsing that never fails as INTERNAL."""
    return lenient_handler(
        pb.DESCRIPTOR.services_by_name["EngineService"],
        servicer,
        ENGINE_DOMAIN,
        on_refusal=lambda reason: servicer.metrics.refusals.labels(reason).inc(),
    )


def create_engine_server(
    address: str, *, metrics: EngineMetrics | None = None
) -> tuple[grpc.aio.Server, int, HealthServicer]:
    """A ready-to-start engine server on ``address`` (port 0 picks one) with health and reflection.

    Returns ``(server, port, health)``; call inside the event loop that will run it.
    """
    metrics = metrics or default_metrics()
    interceptor = CanonicalLogInterceptor("engine", metrics.rpc_duration, label_fields=("mode",))
    server, port, health = create_server(
        address, service_names=[ENGINE_SERVICE_NAME], interceptors=[interceptor]
    )
    server.add_generic_rpc_handlers((engine_handler(EngineServicer(metrics)),))
    return server, port, health


async def serve_engine(args: argparse.Namespace) -> None:
    """Run the engine until SIGTERM/SIGINT, then drain within ``args.grace`` seconds."""
    metrics_port = start_metrics_server(args.metrics_port, args.host)
    server, port, health = create_engine_server(f"{args.host}:{args.port}")
    log.info("engine listening", host=args.host, port=port, metrics_port=metrics_port)
    await serve(server, health, grace=args.grace, service_names=[ENGINE_SERVICE_NAME])


def run_command(args: argparse.Namespace) -> int:
    return run_service("engine", lambda: serve_engine(args), log_level=args.log_level)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    parser = sub.add_parser(
        "engine",
        help="run the engine gRPC service",
        description="Serve ninetynine.engine.v1.EngineService (stateless rules engine) with health, "
        "reflection and Prometheus metrics. Every flag can also come from the environment.",
    )
    add_service_flags(parser, port=50051, metrics_port=9101, grace=5.0)
    parser.set_defaults(handler=run_command)
    return parser
