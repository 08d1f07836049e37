"""The gateway's metrics answer ``labels(...)`` from the children already made, and what they export
is what plain prometheus_client metrics export; a removed label set is never handed out again."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest

from ninetynine.gateway.metrics import GatewayMetrics

PREFIX = "ninetynine_gateway_"


def value(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    return registry.get_sample_value(PREFIX + name, labels)


def test_children_are_reused_and_counted_once_each() -> None:
    registry = CollectorRegistry()
    metrics = GatewayMetrics.create(registry)
    for _ in range(3):
        metrics.messages.labels("out", "view").inc()
    metrics.messages.labels(direction="out", type="event").inc()  # keywords take the plain path
    metrics.move_duration.labels("ws").observe(0.004)
    metrics.connections.labels("ws").inc()
    assert metrics.messages.labels("out", "view") is metrics.messages.labels("out", "view")
    assert value(registry, "messages_total", direction="out", type="view") == 3
    assert value(registry, "messages_total", direction="out", type="event") == 1
    assert value(registry, "move_duration_seconds_count", protocol="ws") == 1
    assert value(registry, "move_duration_seconds_bucket", protocol="ws", le="0.005") == 1
    assert value(registry, "connections", protocol="ws") == 1


def test_removed_label_sets_start_again_from_zero() -> None:
    registry = CollectorRegistry()
    metrics = GatewayMetrics.create(registry)
    metrics.rate_limited.labels("ws").inc(5)
    metrics.rate_limited.remove("ws")
    metrics.rate_limited.labels("ws").inc()
    assert value(registry, "rate_limited_total", protocol="ws") == 1
    metrics.rate_limited.clear()
    assert b"ninetynine_gateway_rate_limited_total{" not in generate_latest(registry)
    metrics.rate_limited.labels("ws").inc()
    assert value(registry, "rate_limited_total", protocol="ws") == 1
