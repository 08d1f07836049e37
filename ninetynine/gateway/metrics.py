"""The gateway's Prometheus metrics (``ninetynine_gateway_*``), one set per registry.

``messages_total`` is counted for every message in and out, so its children are looked up far more
often than they are made: the metrics here answer ``labels(...)`` from a dict of the children
already made (prometheus_client checks the label count, turns every value into ``str`` and takes a
lock on each call). Removing label sets drops that dict, so a removed child is never handed out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Self

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.metrics import MetricWrapperBase

from ninetynine.common.metrics import LATENCY_BUCKETS

__all__ = ["GatewayMetrics"]


class _CachedLabels(MetricWrapperBase):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._children: dict[tuple[object, ...], Self] = {}

    def labels(self, *labelvalues: object, **labelkwargs: object) -> Self:
        if labelkwargs:
            return super().labels(*labelvalues, **labelkwargs)
        child = self._children.get(labelvalues)
        if child is None:
            child = self._children[labelvalues] = super().labels(*labelvalues)
        return child

    def remove(self, *labelvalues: Any) -> None:
        self._children.clear()
        super().remove(*labelvalues)

    def remove_by_labels(self, labels: dict[str, str]) -> None:
        self._children.clear()
        super().remove_by_labels(labels)

    def clear(self) -> None:
        self._children.clear()
        super().clear()


class _Counter(_CachedLabels, Counter):
    pass


class _Gauge(_CachedLabels, Gauge):
    pass


class _Histogram(_CachedLabels, Histogram):
    pass


@dataclass(frozen=True)
class GatewayMetrics:
    connections: Gauge
    messages: Counter
    move_duration: Histogram
    rate_limited: Counter
    refusals: Counter
    slow_client_disconnects: Counter
    play_retries: Counter
    play_answers: Counter

    @classmethod
    def create(cls, registry: CollectorRegistry | None = REGISTRY) -> GatewayMetrics:
        return cls(
            connections=_Gauge(
                "ninetynine_gateway_connections",
                "Open client connections by protocol (ws, grpc).",
                ("protocol",),
                registry=registry,
            ),
            messages=_Counter(
                "ninetynine_gateway_messages_total",
                "Client protocol messages by direction (in, out) and type.",
                ("direction", "type"),
                registry=registry,
            ),
            move_duration=_Histogram(
                "ninetynine_gateway_move_duration_seconds",
                "Client-seen move latency: play received until the mover's 'played' was sent.",
                ("protocol",),
                registry=registry,
                buckets=LATENCY_BUCKETS,
            ),
            rate_limited=_Counter(
                "ninetynine_gateway_rate_limited_total",
                "Client messages refused by the per-connection rate limit.",
                ("protocol",),
                registry=registry,
            ),
            refusals=_Counter(
                "ninetynine_gateway_refusals_total",
                "Connections and requests refused by a per-address budget or the Origin check, by reason.",
                ("reason",),
                registry=registry,
            ),
            slow_client_disconnects=_Counter(
                "ninetynine_gateway_slow_client_disconnects_total",
                "Connections closed because their send queue was full.",
                ("protocol",),
                registry=registry,
            ),
            play_retries=_Counter(
                "ninetynine_gateway_play_retries_total",
                "Plays sent to the session again because the shared PlayMany call carrying "
                "them ended or broke before they were answered (a replica draining or gone).",
                registry=registry,
            ),
            play_answers=_Counter(
                "ninetynine_gateway_play_answers_total",
                "Plays answered 'played', by where the answer came from: room_stream (the move's "
                "last event) or call (the PlayMany answer, as for a repeated clientSeq).",
                ("via",),
                registry=registry,
            ),
        )
