"""Prometheus helpers: the /metrics endpoint, latency buckets and histogram factories.

Services register their metrics on the default registry (``prometheus_client.REGISTRY``); every
helper takes a ``registry`` so tests can use a private ``CollectorRegistry`` and not collide.
Metric names follow the Prometheus conventions: ``ninetynine_<service>_<what>_<unit>``, e.g.
``ninetynine_engine_rpc_duration_seconds``.
"""

from __future__ import annotations

from collections.abc import Sequence

from prometheus_client import REGISTRY, CollectorRegistry, Histogram, start_http_server

__all__ = ["LATENCY_BUCKETS", "histogram", "rpc_histogram", "start_metrics_server"]

# From 100 µs (a rules-engine Apply) up to 5 s (a slow downstream call), roughly ×2–2.5 per step.
LATENCY_BUCKETS: tuple[float, ...] = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
)


def start_metrics_server(
    port: int, host: str = "127.0.0.1", *, registry: CollectorRegistry = REGISTRY
) -> int:
    """Serve ``/metrics`` over HTTP from a daemon thread; returns the bound port (``0`` picks one).

    Raises ``OSError`` when the port is taken.
    """
    httpd, _thread = start_http_server(port, addr=host, registry=registry)
    return int(httpd.server_address[1])


def histogram(
    name: str,
    documentation: str,
    labelnames: Sequence[str] = (),
    *,
    registry: CollectorRegistry | None = REGISTRY,
    buckets: Sequence[float] = LATENCY_BUCKETS,
) -> Histogram:
    """A histogram on ``registry`` (default: the global one) with :data:`LATENCY_BUCKETS`."""
    return Histogram(name, documentation, labelnames=tuple(labelnames), registry=registry, buckets=buckets)


def rpc_histogram(
    service: str,
    *,
    extra_labels: Sequence[str] = (),
    registry: CollectorRegistry | None = REGISTRY,
) -> Histogram:
    """``ninetynine_<service>_rpc_duration_seconds`` labelled ``method``, ``code`` and ``extra_labels``.

    Pass it to :class:`ninetynine.common.interceptors.CanonicalLogInterceptor` together with
    ``label_fields=extra_labels``.
    """
    return histogram(
        f"ninetynine_{service}_rpc_duration_seconds",
        f"Latency of {service} RPCs by method and status code.",
        ("method", "code", *extra_labels),
        registry=registry,
    )
