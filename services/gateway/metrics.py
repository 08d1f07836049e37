"""The gateway's Prometheus metrics (``ninetynine_gateway_*``), one set per registry."""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram

from services.common.metrics import histogram

__all__ = ["GatewayMetrics"]


@dataclass(frozen=True)
class GatewayMetrics:
    connections: Gauge
    messages: Counter
    move_duration: Histogram
    rate_limited: Counter
    slow_client_disconnects: Counter

    @classmethod
    def create(cls, registry: CollectorRegistry | None = REGISTRY) -> GatewayMetrics:
        return cls(
            connections=Gauge(
                "ninetynine_gateway_connections",
                "Open client connections by protocol (ws, grpc).",
                ("protocol",),
                registry=registry,
            ),
            messages=Counter(
                "ninetynine_gateway_messages_total",
                "Client protocol messages by direction (in, out) and type.",
                ("direction", "type"),
                registry=registry,
            ),
            move_duration=histogram(
                "ninetynine_gateway_move_duration_seconds",
                "Client-seen move latency: play received until the mover's 'played' was sent.",
                ("protocol",),
                registry=registry,
            ),
            rate_limited=Counter(
                "ninetynine_gateway_rate_limited_total",
                "Client messages refused by the per-connection rate limit.",
                ("protocol",),
                registry=registry,
            ),
            slow_client_disconnects=Counter(
                "ninetynine_gateway_slow_client_disconnects_total",
                "Connections closed because their send queue was full.",
                ("protocol",),
                registry=registry,
            ),
        )
